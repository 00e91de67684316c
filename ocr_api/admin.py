"""Django admin: API keys (created here, shown once) and the read-only audit log."""

from django.contrib import admin
from rest_framework_api_key.admin import APIKeyModelAdmin
from rest_framework_api_key.models import APIKey

from .models import ApiKey, OcrRequest

# The library registers its own concrete key model; this project uses ApiKey instead.
admin.site.unregister(APIKey)


@admin.register(ApiKey)
class ApiKeyAdmin(APIKeyModelAdmin):
    """Create keys (the key is shown once, in a message), revoke them, set limits."""

    list_display = ("prefix", "name", "owner", "rate_per_minute", "daily_quota", "created",
                    "expiry_date", "_has_expired", "revoked")
    list_filter = ("revoked", "created")
    search_fields = ("name", "owner", "prefix")


@admin.register(OcrRequest)
class OcrRequestAdmin(admin.ModelAdmin):
    """The audit log: read-only, filterable by key, status, error code and date."""

    list_display = ("created", "request_id", "api_key", "http_status", "error_code",
                    "image_format", "width", "height", "box_count", "total_ms", "inference_ms")
    list_filter = ("http_status", "error_code", "api_key", ("created", admin.DateFieldListFilter))
    search_fields = ("request_id", "client_ip")
    date_hierarchy = "created"

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
