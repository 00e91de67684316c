from django.apps import AppConfig


class OcrJobsConfig(AppConfig):
    """Long documents as jobs: read page by page by worker processes on a real broker."""

    name = "ocr_jobs"
    verbose_name = "OCR jobs"
    default_auto_field = "django.db.models.BigAutoField"
