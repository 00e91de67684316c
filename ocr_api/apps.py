from django.apps import AppConfig


class OcrApiConfig(AppConfig):
    """The OCR API: views, serializers, authentication and throttling, errors, the audit log
    (and its admin), and the Django side of the Triton client."""

    name = "ocr_api"
    verbose_name = "OCR API"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from . import schema  # noqa: F401 - registers the OpenAPI auth extension
