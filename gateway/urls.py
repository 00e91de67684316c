"""Root URLs: the demo page at /, the API under /api/, its OpenAPI schema and docs, Django
admin under /admin/.

Django-level errors (unknown URL, crash outside a DRF view) answer the API's JSON error shape.
"""
from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from ocr_api.errors import json_error_view
from ocr_api.views.demo import demo_page
from ocr_api.views.metrics import metrics_view

urlpatterns = [
    path("", demo_page, name="demo"),  # the OCR demo page (boxes drawn over the image)
    path("api/", include("ocr_api.urls")),
    path("api/schema", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs", SpectacularSwaggerView.as_view(url_name="schema"), name="docs"),
    path("admin/", admin.site.urls),
    path("metrics", metrics_view, name="metrics"),
]

handler400 = json_error_view(400, "malformed_request", "Bad request.")
handler403 = json_error_view(403, "permission_denied", "Permission denied.")
handler404 = json_error_view(404, "not_found", "Not found.")
handler500 = json_error_view(500, "internal_error", "Internal server error.")
