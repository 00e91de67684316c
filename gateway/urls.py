"""Root URLs: the demo page at /, the API under /api/, its OpenAPI schema and docs, Django
admin under /admin/.

Django-level errors (unknown URL, crash outside a DRF view) answer the API's JSON error shape,
except under /admin/, where a missing permission or page is an admin page.
"""
from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from ocr_admin.errors import admin_page_or
from ocr_api.error_handlers import bad_request_view, json_error_view, not_found_view
from ocr_api.views.demo import demo_page

urlpatterns = [
    path("", demo_page, name="demo"),  # the OCR demo page (boxes drawn over the image)
    path("api/", include("ocr_api.urls")),
    path("", include("ocr_vision.urls")),  # Cloud Vision's own paths: /v1/images:annotate
    path("api/schema", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs", SpectacularSwaggerView.as_view(url_name="schema"), name="docs"),
    path("admin/", admin.site.urls),
]

handler400 = bad_request_view
# Under /admin/, an admin page says it (a staff user without a permission); elsewhere JSON.
handler403 = admin_page_or(json_error_view(403, "permission_denied", "Permission denied."), 403)
handler404 = admin_page_or(not_found_view, 404)
handler500 = json_error_view(500, "internal_error", "Internal server error.")
