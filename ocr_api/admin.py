"""Django admin: API keys (created here, shown once; revocable; usage columns) and the
read-only audit log. Only staff users can log in (Django admin's own rule)."""

import datetime as dt

from django.contrib import admin, messages
from django.db.models import Count, Max, Q
from django.utils import timezone
from rest_framework_api_key.admin import APIKeyModelAdmin
from rest_framework_api_key.models import APIKey

from .models import ApiKey, OcrRequest, RefusalCount


def short_time(value: dt.datetime, seconds: bool = False) -> str:
    """``2025-05-01 14:03`` (with ``:22`` when ``seconds``) in the current time zone."""
    return timezone.localtime(value).strftime("%Y-%m-%d %H:%M" + (":%S" if seconds else ""))


def rounded_ms(value: float | None) -> str:
    """Milliseconds to the whole millisecond; "–" when not measured."""
    return "–" if value is None else f"{value:.0f}"


# The library registers its own concrete key model; this project uses ApiKey instead.
admin.site.unregister(APIKey)


@admin.register(ApiKey)
class ApiKeyAdmin(APIKeyModelAdmin):
    """Create keys (the key is shown once, in a message), revoke them, set limits, and see
    each key's usage: images today and in the last 7 days, errors, last use."""

    # Fits a 1280-pixel screen with the admin's sidebar open: limits in one column, revoked
    # and expired in one state, short dates (the creation date is on the key's page).
    list_display = ("name", "prefix", "owner", "limits", "requests_today", "requests_7d",
                    "errors_7d", "last_used", "expires", "state")
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
        return short_time(obj._last_used) if obj._last_used else "never"

    @admin.display(description="limits", ordering="rate_per_minute")
    def limits(self, obj):
        quota = f" · {obj.daily_quota}/day" if obj.daily_quota else ""
        return f"{obj.rate_per_minute}/min{quota}"

    @admin.display(description="expires", ordering="expiry_date")
    def expires(self, obj):
        return short_time(obj.expiry_date) if obj.expiry_date else "never"

    @admin.display(description="state", ordering="revoked")
    def state(self, obj):
        if obj.revoked:
            return "revoked"
        return "expired" if obj.has_expired else "active"

    @admin.action(description="Revoke selected API keys (cannot be undone)")
    def revoke(self, request, queryset):
        count = queryset.filter(revoked=False).update(revoked=True)
        self.message_user(request, f"Revoked {count} API key(s).", messages.SUCCESS)


@admin.register(OcrRequest)
class OcrRequestAdmin(admin.ModelAdmin):
    """The audit log: read-only, filterable by key, status, error code and date."""

    # Fits a 1280-pixel screen with the admin's sidebar open: the id shortened (whole on the
    # row's page and in search), status with its code, format with its size, whole
    # milliseconds.
    list_display = ("when", "short_request_id", "sender", "endpoint", "status", "image",
                    "box_count", "char_count", "total", "inference")
    list_filter = ("http_status", "error_code", "endpoint", "api_key",
                   ("created", admin.DateFieldListFilter))
    search_fields = ("request_id", "client_ip")
    date_hierarchy = "created"
    list_select_related = ("api_key", "user")

    @admin.display(description="time", ordering="created")
    def when(self, obj):
        return short_time(obj.created, seconds=True)

    @admin.display(description="request id", ordering="request_id")
    def short_request_id(self, obj):
        return obj.request_id[:8]

    @admin.display(description="sender", ordering="api_key")
    def sender(self, obj):
        if obj.api_key:
            return f"{obj.api_key.name} ({obj.api_key.prefix})"
        return f"user {obj.user.get_username()}" if obj.user else "–"

    @admin.display(description="status", ordering="http_status")
    def status(self, obj):
        return f"{obj.http_status} {obj.error_code}".strip()

    @admin.display(description="image", ordering="image_format")
    def image(self, obj):
        size = f" {obj.width}×{obj.height}" if obj.width and obj.height else ""
        return f"{obj.image_format}{size}" or "–"

    @admin.display(description="total ms", ordering="total_ms")
    def total(self, obj):
        return rounded_ms(obj.total_ms)

    @admin.display(description="Triton ms", ordering="inference_ms")
    def inference(self, obj):
        return rounded_ms(obj.inference_ms)

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(RefusalCount)
class RefusalCountAdmin(admin.ModelAdmin):
    """Requests refused before they authenticated, counted per address and minute (read-only:
    the gateway writes them, ``purge_audit_log`` deletes them)."""

    list_display = ("minute", "client_ip", "endpoint", "http_status", "error_code", "count")
    list_filter = ("http_status", "error_code", "endpoint")
    search_fields = ("client_ip",)
    date_hierarchy = "minute"

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
