"""Jobs and their pages. The job's state lives here, not in the broker: each page's answer is
stored as it comes (:func:`ocr_api.answer.page_body`, as JSON), so a redelivered page already
stored is never read again, and the broker holds only page ids (at most ``OCR_JOB_WINDOW`` per
key, :mod:`ocr_jobs.queueing`). Neither the upload nor the text is ever in the audit log."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

from django.conf import settings
from django.db import models

from ocr_api.models import ApiKey


class Job(models.Model):
    """One document sent to ``POST /api/jobs``.

    The upload is a file under ``VAR_DIR/jobs/<id>/`` (:attr:`folder`), deleted with the job.
    """

    QUEUED, RUNNING, SUCCEEDED, FAILED, CANCELLED = (
        "queued", "running", "succeeded", "failed", "cancelled")
    STATUSES = [(s, s) for s in (QUEUED, RUNNING, SUCCEEDED, FAILED, CANCELLED)]
    ACTIVE = (QUEUED, RUNNING)
    ENDED = (SUCCEEDED, FAILED, CANCELLED)

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    api_key = models.ForeignKey(ApiKey, null=True, blank=True, on_delete=models.CASCADE,
                                related_name="jobs")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                             on_delete=models.CASCADE, related_name="ocr_jobs",
                             help_text="The staff user whose session created it.")
    request_id = models.CharField(max_length=64, db_index=True,
                                  help_text="The creating request's id (its audit row).")
    status = models.CharField(max_length=16, choices=STATUSES, default=QUEUED, db_index=True)
    format = models.CharField(max_length=16)
    page_count = models.PositiveIntegerField()
    pages_done = models.PositiveIntegerField(default=0)
    bytes_received = models.PositiveBigIntegerField(default=0)
    parameters = models.JSONField(default=dict, blank=True)
    #: A PDF's page sizes in points (as displayed), for the result's formats without reopening
    #: the upload; empty for images.
    page_points = models.JSONField(default=list, blank=True)
    callback_url = models.CharField(max_length=2048, blank=True)
    idempotency_key = models.CharField(max_length=255, blank=True)
    body_sha256 = models.CharField(max_length=64, blank=True)
    error_code = models.CharField(max_length=64, blank=True)
    error_message = models.TextField(blank=True)
    #: The UTC day whose quota the pages were charged to (None: the key has no quota).
    quota_day = models.DateField(null=True, blank=True)
    webhook_id = models.CharField(max_length=64, blank=True)
    webhook_status = models.CharField(max_length=32, blank=True,
                                      help_text="delivered, retrying, failed or refused.")
    created = models.DateTimeField(auto_now_add=True, db_index=True)
    started = models.DateTimeField(null=True, blank=True)
    finished = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(db_index=True)

    class Meta:
        ordering = ["-created"]
        constraints = [models.UniqueConstraint(
            fields=["api_key", "idempotency_key"], name="ocr_jobs_unique_idempotency_key",
            condition=~models.Q(idempotency_key=""))]

    def __str__(self):
        return f"job {self.id} ({self.status}, {self.pages_done}/{self.page_count})"

    @property
    def folder(self) -> Path:
        return Path(settings.VAR_DIR) / "jobs" / str(self.id)

    @property
    def upload_path(self) -> Path:
        return self.folder / "upload"

    def delete_files(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


class JobPage(models.Model):
    """One page of a job: its state, its deliveries, and its answer once read."""

    PENDING, QUEUED, DONE, FAILED, CANCELLED = "pending", "queued", "done", "failed", "cancelled"
    STATUSES = [(s, s) for s in (PENDING, QUEUED, DONE, FAILED, CANCELLED)]

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="pages")
    #: The key whose window the page counts in (the job's, copied for the window's query).
    api_key = models.ForeignKey(ApiKey, null=True, blank=True, on_delete=models.CASCADE,
                                related_name="+")
    number = models.PositiveIntegerField(help_text="1-based.")
    status = models.CharField(max_length=16, choices=STATUSES, default=PENDING)
    #: Times a worker took the page from the broker (crash redeliveries and retries count).
    deliveries = models.PositiveIntegerField(default=0)
    body = models.JSONField(null=True, blank=True, help_text="ocr_api.answer.page_body")
    error_code = models.CharField(max_length=64, blank=True)
    inference_ms = models.FloatField(null=True, blank=True)
    worker_pid = models.PositiveIntegerField(null=True, blank=True)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["job", "number"]
        constraints = [models.UniqueConstraint(fields=["job", "number"],
                                               name="ocr_jobs_unique_page")]
        indexes = [models.Index(fields=["api_key", "status"])]

    def __str__(self):
        return f"page {self.number} of {self.job_id} ({self.status})"


class WebhookSecret(models.Model):
    """A key's ``whsec_…`` secret that signs its jobs' webhooks (Standard Webhooks). Made on the
    key's first job with a ``callback_url`` and shown once, in that job's answer."""

    api_key = models.OneToOneField(ApiKey, on_delete=models.CASCADE,
                                   related_name="webhook_secret")
    secret = models.CharField(max_length=128)
    created = models.DateTimeField(auto_now_add=True)

    def __str__(self):
        return f"webhook secret of {self.api_key}"
