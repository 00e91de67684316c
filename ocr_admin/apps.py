from django.apps import AppConfig
from django.contrib.admin import apps as admin_apps


class OcrAdminConfig(AppConfig):
    """The gateway's admin pages: Triton's model repository and API usage (templates, CSS)."""

    name = "ocr_admin"
    verbose_name = "OCR admin pages"


class OcrAdminSiteConfig(admin_apps.AdminConfig):
    """Django admin, with :class:`ocr_admin.sites.OcrAdminSite` as the default site."""

    default = False
    default_site = "ocr_admin.sites.OcrAdminSite"
