"""A job's ends: succeeded, failed or cancelled; each once (a conditional update), with what
follows: the quota of pages not read given back, the audit row completed (sizes, never text),
the webhook sent, the metrics counted."""

from __future__ import annotations

import datetime as dt
import logging

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from ocr_api.models import OcrRequest, QuotaUsage

from . import metrics
from .broker import DELIVER_WEBHOOK, WEBHOOKS_QUEUE, send
from .models import Job, JobPage

logger = logging.getLogger(__name__)


def expiry(now: dt.datetime) -> dt.datetime:
    return now + dt.timedelta(seconds=settings.OCR_JOB_RESULT_TTL)


def end_job(job_id, status: str, error_code: str = "", error_message: str = "") -> bool:
    """Move an active job to ``status`` (one of :attr:`Job.ENDED`) if no one else ended it.

    Returns:
        True when this call ended it.
    """
    now = timezone.now()
    with transaction.atomic():
        ended = Job.objects.filter(id=job_id, status__in=Job.ACTIVE).update(
            status=status, error_code=error_code, error_message=error_message[:2000],
            finished=now, expires_at=expiry(now))
        if not ended:
            return False
        JobPage.objects.filter(job_id=job_id, status__in=(JobPage.PENDING, JobPage.QUEUED)
                               ).update(status=JobPage.CANCELLED)
        job = Job.objects.get(id=job_id)
        _settle(job)
        if job.callback_url and job.api_key_id:
            transaction.on_commit(lambda: _send_webhook(job.id))
    metrics.JOBS.labels(status).inc()
    return True


def _send_webhook(job_id) -> None:
    """The webhook's first attempt (:func:`ocr_jobs.tasks.deliver_webhook`)."""
    try:
        send(WEBHOOKS_QUEUE, DELIVER_WEBHOOK, str(job_id), 1)
    except Exception:  # noqa: BLE001 - the broker is down: the job stays answered by polling
        logger.exception("could not send the webhook of job %s", job_id)
        Job.objects.filter(id=job_id).update(webhook_status="failed")


def _settle(job: Job) -> None:
    """The quota of pages not read goes back, and the job's audit row says what was read."""
    unread = job.page_count - job.pages_done
    if unread and job.quota_day and job.api_key_id:
        QuotaUsage.objects.filter(api_key_id=job.api_key_id, day=job.quota_day).update(
            images=F("images") - unread)
    bodies = list(JobPage.objects.filter(job=job, status=JobPage.DONE)
                  .values_list("body", "inference_ms"))
    OcrRequest.objects.filter(request_id=job.request_id, endpoint="jobs").update(
        page_count=job.pages_done,
        box_count=sum(len(body.get("boxes", ())) for body, _ in bodies),
        char_count=sum(len(box.get("text", "")) for body, _ in bodies
                       for box in body.get("boxes", ())),
        inference_ms=max((ms or 0.0 for _, ms in bodies), default=None))
