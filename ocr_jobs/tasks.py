"""The jobs' Dramatiq actors: one message per page (:func:`read_page`), one per webhook
(:func:`deliver_webhook`).

A page's message carries only its row's id. The row counts its deliveries, so a page that
kills its worker (OOM, SIGKILL) is redelivered at most ``OCR_JOB_PAGE_MAX_DELIVERIES`` times
(Dramatiq's retries count exceptions, not crashes), and a page already stored is never read
again. When a page ends, however it ends, its key's window is topped up
(:func:`ocr_jobs.queueing.top_up`), so a redelivered page heals the queue too.
"""

from __future__ import annotations

import functools
import logging
import os
import time

import dramatiq
from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from ocr_api import errors, inference
from ocr_api.answer import page_body
from ocr_api.intake.documents import Document, open_document
from ocr_contract.parameters import RECOGNIZE

from . import metrics, queueing
from .broker import (DELIVER_WEBHOOK, PAGES_QUEUE, READ_PAGE, WEBHOOKS_QUEUE, get_broker,
                     send)
from .lifecycle import end_job
from .models import Job, JobPage

logger = logging.getLogger(__name__)

broker = get_broker()

#: Longest a page waits for synchronous requests to leave room (ocr_api.admission) before it
#: is sent anyway, seconds: jobs always progress, well within the message's 30-min limit.
PAGE_MAX_WAIT_S = 600.0

#: Codes a page's job fails with when the page itself cannot be read.
PAGE_CRASHED = "page_crashed"


class RetryPage(Exception):
    """Triton was unavailable or too slow: Dramatiq delivers the page again later."""


@functools.lru_cache(maxsize=4)
def _document(job_id: str, path: str) -> Document:
    """A job's upload, opened once per worker process for its pages (an LRU of a few jobs:
    a key's window keeps a worker on few jobs at a time)."""
    with open(path, "rb") as file:
        return open_document(file.read(), settings.OCR_JOB_MAX_PAGES)


def open_job_document(job: Job) -> Document:
    return _document(str(job.id), str(job.upload_path))


@dramatiq.actor(broker=broker, actor_name=READ_PAGE, queue_name=PAGES_QUEUE, max_retries=100,
                min_backoff=1000, max_backoff=30_000, time_limit=30 * 60 * 1000)
def read_page(page_id: int) -> None:
    """Read one page and store its answer, unless it was stored already."""
    try:
        _read_page(page_id)
    finally:
        api_key_id = JobPage.objects.filter(id=page_id).values_list("api_key_id", flat=True)
        for key in api_key_id[:1]:
            queueing.top_up(key)


def _read_page(page_id: int) -> None:
    taken = JobPage.objects.filter(id=page_id, status=JobPage.QUEUED).update(
        deliveries=F("deliveries") + 1, worker_pid=os.getpid())
    if not taken:                          # stored, failed, cancelled, or its job is gone
        metrics.PAGES.labels("skipped").inc()
        return
    page = JobPage.objects.select_related("job").get(id=page_id)
    job = page.job
    if job.status not in Job.ACTIVE:
        JobPage.objects.filter(id=page_id, status=JobPage.QUEUED).update(
            status=JobPage.CANCELLED)
        return
    if page.deliveries > settings.OCR_JOB_PAGE_MAX_DELIVERIES:
        _fail_page(page, PAGE_CRASHED, f"Page {page.number} was delivered {page.deliveries - 1} "
                   "times without being read (its worker died or Triton failed each time).")
        return
    if job.status == Job.QUEUED:
        Job.objects.filter(id=job.id, status=Job.QUEUED).update(status=Job.RUNNING,
                                                                started=timezone.now())
    try:
        document = open_job_document(job)
        started = time.perf_counter()
        result = inference.infer_job_page(document, page.number - 1, job.parameters,
                                          give_up_s=PAGE_MAX_WAIT_S)
    except errors.ApiError as error:
        if error.status_code >= 500 and page.deliveries < settings.OCR_JOB_PAGE_MAX_DELIVERIES:
            metrics.PAGES.labels("retried").inc()
            raise RetryPage(f"page {page.number} of job {job.id}: {error.default_code}") \
                from error
        _fail_page(page, error.default_code, f"Page {page.number}: {error.detail}")
        return
    except FileNotFoundError:              # deleted while in the broker
        return
    recognized = job.parameters.get("recognize", RECOGNIZE.default)
    body = page_body(result, page.number - 1, recognized)
    with transaction.atomic():
        stored = JobPage.objects.filter(id=page_id, status=JobPage.QUEUED).update(
            status=JobPage.DONE, body=body, inference_ms=round(result.inference_ms, 1))
        if stored:
            Job.objects.filter(id=job.id).update(pages_done=F("pages_done") + 1)
    if not stored:
        return
    metrics.PAGES.labels("done").inc()
    logger.info("job %s page %d/%d read in %.0f ms", job.id, page.number, job.page_count,
                (time.perf_counter() - started) * 1000)
    if not JobPage.objects.filter(job_id=job.id).exclude(status=JobPage.DONE).exists():
        end_job(job.id, Job.SUCCEEDED)


def _fail_page(page: JobPage, code: str, message: str) -> None:
    JobPage.objects.filter(id=page.id).update(status=JobPage.FAILED, error_code=code)
    metrics.PAGES.labels("failed").inc()
    end_job(page.job_id, Job.FAILED, code, message)


@dramatiq.actor(broker=broker, actor_name=DELIVER_WEBHOOK, queue_name=WEBHOOKS_QUEUE,
                max_retries=0, time_limit=5 * 60 * 1000)
def deliver_webhook(job_id: str, attempt: int) -> None:
    """Attempt ``attempt`` (1-based) of the job's webhook; the next one is sent with Dramatiq's
    delay after :func:`~ocr_jobs.webhooks.next_delay_s`, with the same ``webhook-id``."""
    from .webhooks import WebhookPolicy, deliver, new_message_id, next_delay_s

    job = Job.objects.filter(id=job_id).select_related("api_key").first()
    if job is None or not job.callback_url or job.api_key is None:
        return
    secret = getattr(job.api_key, "webhook_secret", None)
    if secret is None:
        return
    if not job.webhook_id:
        Job.objects.filter(id=job.id, webhook_id="").update(webhook_id=new_message_id())
        job.refresh_from_db(fields=["webhook_id"])
    result = deliver(job.callback_url, webhook_payload(job), secret.secret, job.webhook_id,
                     WebhookPolicy.from_settings(settings))
    metrics.WEBHOOKS.labels(result.outcome.value).inc()
    if result.delivered:
        Job.objects.filter(id=job.id).update(webhook_status="delivered")
        return
    delay = None if result.permanent else next_delay_s(attempt,
                                                       retry_after_s=result.retry_after_s)
    if delay is None:
        Job.objects.filter(id=job.id).update(
            webhook_status="refused" if result.permanent else "failed")
        return
    Job.objects.filter(id=job.id).update(webhook_status="retrying")
    send(WEBHOOKS_QUEUE, DELIVER_WEBHOOK, str(job.id), attempt + 1, delay_ms=int(delay * 1000))


def webhook_payload(job: Job) -> dict:
    """The event (Standard Webhooks' ``type``/``timestamp``/``data``): the job as
    ``GET /api/jobs/<id>`` shows it, never its text."""
    from .serializers import job_data

    return {"type": f"job.{job.status}",
            "timestamp": (job.finished or timezone.now()).isoformat().replace("+00:00", "Z"),
            "data": job_data(job)}
