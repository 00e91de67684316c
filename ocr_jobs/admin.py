"""Jobs in Django admin: status, pages, key and times (never the text), and a cancel action."""

from django.contrib import admin, messages

from .lifecycle import end_job
from .models import Job


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    list_display = ("id", "status", "progress", "format", "api_key", "created", "finished",
                    "expires_at", "error_code", "webhook_status")
    list_filter = ("status", "format", "webhook_status")
    search_fields = ("id", "request_id", "api_key__name", "api_key__prefix")
    date_hierarchy = "created"
    fields = ("id", "status", "api_key", "user", "request_id", "format", "page_count",
              "pages_done", "bytes_received", "parameters", "callback_url", "error_code",
              "error_message", "webhook_status", "created", "started", "finished",
              "expires_at")
    readonly_fields = fields
    actions = ["cancel"]

    @admin.display(description="pages")
    def progress(self, job):
        return f"{job.pages_done}/{job.page_count}"

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    @admin.action(description="Cancel the selected active jobs")
    def cancel(self, request, queryset):
        cancelled = sum(end_job(job.id, Job.CANCELLED, "cancelled", "Cancelled by an admin.")
                        for job in queryset.filter(status__in=Job.ACTIVE))
        self.message_user(request, f"{cancelled} jobs cancelled.", messages.SUCCESS)
