"""Error pages inside the admin: a staff user who opens an admin page they may not see (or one
that does not exist) gets an admin page that says so, not the API's JSON error."""

from __future__ import annotations

from django.contrib import admin
from django.template.response import TemplateResponse
from django.urls import reverse

#: status -> (title, what to do), for pages under the admin.
ADMIN_ERRORS = {
    403: ("Permission denied",
          "Your account may not see this page. A superuser can give you the permission in "
          "Users (or Groups), under Permissions."),
    404: ("Page not found", "There is no such page in the admin."),
}


def admin_page_or(api_view, status: int):
    """A Django error handler (``handler403``, ``handler404``) that answers requests under the
    admin with an admin page, and every other request with ``api_view`` (the API's JSON).

    Args:
        api_view: the handler for everything outside the admin.
        status: 403 or 404 (:data:`ADMIN_ERRORS`).
    """
    title, advice = ADMIN_ERRORS[status]

    def view(request, exception=None):
        if not request.path.startswith(reverse("admin:index")):
            return api_view(request, exception)
        context = {**admin.site.each_context(request), "title": title, "advice": advice}
        response = TemplateResponse(request, "admin/ocr_admin/error.html", context,
                                    status=status)
        return response.render()

    return view
