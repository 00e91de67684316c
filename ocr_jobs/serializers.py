"""The job as the API shows it (``POST``/``GET /api/jobs``, the webhook's ``data``), and its
schema. Never the text: that is the result's (``GET /api/jobs/<id>/result``)."""

from __future__ import annotations

from django.urls import reverse
from rest_framework import serializers

from .models import Job


def _time(value):
    return value.isoformat().replace("+00:00", "Z") if value else None


def job_data(job: Job) -> dict:
    """``{"id", "status", "progress": {"done", "total"}, "document": {"format", "pages"},
    "created", "started", "finished", "expires_at", "error"?, "links": {"self", "result"}}``."""
    url = reverse("job", args=[job.id])
    data = {"id": str(job.id), "status": job.status,
            "progress": {"done": job.pages_done, "total": job.page_count},
            "document": {"format": job.format, "pages": job.page_count},
            "created": _time(job.created), "started": _time(job.started),
            "finished": _time(job.finished), "expires_at": _time(job.expires_at),
            "links": {"self": url, "result": reverse("job-result", args=[job.id])}}
    if job.callback_url:
        data["callback_url"] = job.callback_url
    if job.error_code:
        data["error"] = {"code": job.error_code, "message": job.error_message}
    return data


class ProgressSerializer(serializers.Serializer):
    done = serializers.IntegerField(help_text="Pages read.")
    total = serializers.IntegerField(help_text="Pages of the document.")


class JobDocumentSerializer(serializers.Serializer):
    format = serializers.CharField()
    pages = serializers.IntegerField()


class JobLinksSerializer(serializers.Serializer):
    self = serializers.CharField()
    result = serializers.CharField(help_text="The result once the job succeeded.")


class JobErrorSerializer(serializers.Serializer):
    code = serializers.CharField(help_text="Stable code: an API error code of the page that "
                                           "failed, or page_crashed (its worker died each time).")
    message = serializers.CharField()


class JobSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    status = serializers.ChoiceField(choices=[s for s, _ in Job.STATUSES])
    progress = ProgressSerializer()
    document = JobDocumentSerializer()
    created = serializers.DateTimeField()
    started = serializers.DateTimeField(allow_null=True)
    finished = serializers.DateTimeField(allow_null=True)
    expires_at = serializers.DateTimeField(
        help_text="When the upload and result are deleted (OCR_JOB_RESULT_TTL after the end).")
    callback_url = serializers.CharField(required=False)
    error = JobErrorSerializer(required=False, help_text="Why the job failed.")
    links = JobLinksSerializer()
    webhook_secret = serializers.CharField(
        required=False, help_text="The key's whsec_ secret that signs its webhooks: only in "
                                  "the answer that created it (shown once).")


class JobResultSerializer(serializers.Serializer):
    """The answer ``POST /api/ocr`` gives for the document, restricted to ``pages``."""

    request_id = serializers.CharField()
    job_id = serializers.UUIDField()
    pages_range = serializers.ListField(child=serializers.IntegerField(),
                                        help_text="[first, last] page of this part.")
    next = serializers.CharField(allow_null=True, help_text="The next part's URL, or null.")
