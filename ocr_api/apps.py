from django.apps import AppConfig


class OcrApiConfig(AppConfig):
    """The OCR API: views, auth and throttling, audit log, admin, the Triton client."""

    name = "ocr_api"
    verbose_name = "OCR API"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from . import schema  # noqa: F401 - registers the OpenAPI auth extension
