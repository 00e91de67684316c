from django.apps import AppConfig
from django.contrib.admin import apps as admin_apps


class OcrApiConfig(AppConfig):
    """The OCR API: views, auth and throttling, audit log, admin, the Triton client."""

    name = "ocr_api"
    verbose_name = "OCR API"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from . import schema  # noqa: F401 - registers the OpenAPI auth extension


class OcrAdminConfig(admin_apps.AdminConfig):
    """Django admin, with :class:`ocr_api.admin_site.OcrAdminSite` as the default site."""

    default = False
    default_site = "ocr_api.admin_site.OcrAdminSite"
