"""Django admin: API keys (created here, shown once; revocable; usage columns) and the
read-only audit log. Only staff users can log in (Django admin's own rule)."""

import datetime as dt

from django.contrib import admin, messages
from django.db.models import Count, Max, Q
from django.utils import timezone
from rest_framework_api_key.admin import APIKeyModelAdmin
from rest_framework_api_key.models import APIKey

from .models import ApiKey, OcrRequest

# The library registers its own concrete key model; this project uses ApiKey instead.
admin.site.unregister(APIKey)


@admin.register(ApiKey)
class ApiKeyAdmin(APIKeyModelAdmin):
    """Create keys (the key is shown once, in a message), revoke them, set limits, and see
    each key's usage: images today and in the last 7 days, errors, last use."""

    list_display = ("prefix", "name", "owner", "rate_per_minute", "daily_quota",
                    "requests_today", "requests_7d", "errors_7d", "last_used", "created",
                    "expiry_date", "_has_expired", "revoked")
    list_filter = ("revoked", "created")
    search_fields = ("name", "owner", "prefix")
    actions = ["revoke"]

    def get_queryset(self, request):
        now = timezone.now()
        today = now.replace(hour=0, minute=0, second=0, microsecond=0)
        week = now - dt.timedelta(days=7)
        return super().get_queryset(request).annotate(
            _requests_today=Count("requests", filter=Q(requests__created__gte=today)),
            _requests_7d=Count("requests", filter=Q(requests__created__gte=week)),
            _errors_7d=Count("requests", filter=Q(requests__created__gte=week,
                                                  requests__http_status__gte=400)),
            _last_used=Max("requests__created"),
        )

    @admin.display(description="today", ordering="_requests_today")
    def requests_today(self, obj):
        return obj._requests_today

    @admin.display(description="7 days", ordering="_requests_7d")
    def requests_7d(self, obj):
        return obj._requests_7d

    @admin.display(description="errors 7 days", ordering="_errors_7d")
    def errors_7d(self, obj):
        return obj._errors_7d

    @admin.display(description="last used", ordering="_last_used")
    def last_used(self, obj):
        return obj._last_used

    @admin.action(description="Revoke selected API keys (cannot be undone)")
    def revoke(self, request, queryset):
        count = queryset.filter(revoked=False).update(revoked=True)
        self.message_user(request, f"Revoked {count} API key(s).", messages.SUCCESS)


@admin.register(OcrRequest)
class OcrRequestAdmin(admin.ModelAdmin):
    """The audit log: read-only, filterable by key, status, error code and date."""

    list_display = ("created", "request_id", "api_key", "endpoint", "http_status", "error_code",
                    "image_format", "width", "height", "box_count", "char_count", "total_ms",
                    "inference_ms")
    list_filter = ("http_status", "error_code", "endpoint", "api_key",
                   ("created", admin.DateFieldListFilter))
    search_fields = ("request_id", "client_ip")
    date_hierarchy = "created"
    list_select_related = ("api_key",)

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
