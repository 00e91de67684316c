"""The page of a sign-in that django-axes has locked out (``AXES_LOCKOUT_CALLABLE``).

An admin page, 429 with ``Retry-After``, that says why and for how long, and what an
administrator runs to unlock earlier. It never says whether the user name exists.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib import admin
from django.template.response import TemplateResponse


def lockout_advice(minutes: int, limit: int) -> str:
    """What the locked-out page says (``minutes`` of cool-off after ``limit`` failures)."""
    return (f"Too many failed sign-ins ({limit}) for this user name or from this address: "
            f"signing in is locked for {minutes} minutes, and every further attempt starts "
            "that time again. An administrator can unlock it at once: manage.py "
            "axes_reset_username NAME, or axes_reset_ip ADDRESS (or delete the row in the "
            "admin under Axes, Access attempts).")


def lockout_response(request, original_response=None, credentials=None):
    """django-axes' lockout answer: the admin's error page, 429, ``Retry-After`` in seconds.

    Args:
        request: the sign-in request.
        original_response, credentials: what django-axes passes (unused).
    """
    cool_off = settings.AXES_COOLOFF_TIME
    context = {**admin.site.each_context(request), "title": "Sign-in locked",
               "advice": lockout_advice(int(cool_off.total_seconds() // 60),
                                        settings.AXES_FAILURE_LIMIT)}
    response = TemplateResponse(request, "admin/ocr_admin/error.html", context,
                                status=settings.AXES_HTTP_RESPONSE_CODE)
    response["Retry-After"] = str(int(cool_off.total_seconds()))
    return response.render()
