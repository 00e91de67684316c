from django.apps import AppConfig


class OcrOpsConfig(AppConfig):
    """Management commands for operators; no models, no URLs."""

    name = "ocr_ops"
    verbose_name = "OCR operations"
