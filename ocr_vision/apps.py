from django.apps import AppConfig


class OcrVisionConfig(AppConfig):
    name = "ocr_vision"
    verbose_name = "Cloud Vision routes"

    def ready(self):
        from . import schema  # noqa: F401 - registers the OpenAPI auth extension
