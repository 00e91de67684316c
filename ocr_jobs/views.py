"""``/api/jobs``: a long document read page by page by worker processes.

- ``POST /api/jobs`` takes what ``POST /api/ocr`` takes (up to ``OCR_JOB_MAX_PAGES`` pages and
  ``OCR_JOB_MAX_BYTES``), plus ``callback_url``, and answers ``202`` with ``Location`` and
  ``Retry-After``. Authenticated, throttled (the quota counts pages, the rate counts jobs),
  audited and measured by :class:`~ocr_api.views.base.OcrEndpoint`.
- ``GET /api/jobs/<id>``: the job; ``DELETE`` cancels it (active) or deletes it (ended).
- ``GET /api/jobs/<id>/result?pages=1-50``: the answer ``POST /api/ocr`` gives, in parts, in
  every format.

A job is seen only by the key that created it (or a staff session): any other key gets 404.
"""

from __future__ import annotations

import hashlib
import json
import re

from django.conf import settings
from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.throttling import BaseThrottle
from rest_framework.views import APIView

from ocr_api import errors
from ocr_api.answer import Answer
from ocr_api.formats.renderers import RESULT_RENDERERS, AnswerResponse, answer_responses
from ocr_api.intake import documents, uploads
from ocr_api.models import ApiKey
from ocr_api.serializers import (SINGLE_UPLOAD_REQUEST, OcrParametersSerializer,
                                 error_responses)
from ocr_api.throttling import DailyQuotaThrottle, take
from ocr_api.views.base import OcrEndpoint
from ocr_contract.formats import ACCEPTED_FORMATS_TEXT

from . import errors as job_errors
from . import metrics, queueing
from .lifecycle import end_job, expiry
from .models import Job, JobPage, WebhookSecret
from .serializers import JobResultSerializer, JobSerializer, job_data
from .webhooks import CallbackUrlError, WebhookPolicy, new_secret, validate_callback_url

#: Pages of one part of a result, by default and at most.
RESULT_PART_PAGES = 50
#: The header that makes ``POST /api/jobs`` safe to send again.
IDEMPOTENCY_HEADER = "Idempotency-Key"
_PAGES = re.compile(r"^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$", re.ASCII)


def visible_jobs(request):
    """The jobs ``request`` may see: its key's, or all for a staff session."""
    if isinstance(request.auth, ApiKey):
        return Job.objects.filter(api_key=request.auth)
    user = request.user
    if user is not None and user.is_active and user.is_staff:
        return Job.objects.all()
    return Job.objects.none()


def get_job(request, job_id) -> Job:
    """The job, if ``request`` may see it.

    Raises:
        NotFound: no such job, or another key's (404, never 403).
    """
    job = visible_jobs(request).filter(id=job_id).first()
    if job is None:
        raise job_errors.NotFound("No job with this id for this key.")
    return job


def job_response(job: Job, status_code: int = 200, **extra) -> Response:
    response = Response({**job_data(job), **extra}, status=status_code)
    if job.status in Job.ACTIVE:
        response["Retry-After"] = str(retry_after_s(job))
    return response


def retry_after_s(job: Job) -> int:
    """When to look again: about one page's time (at least 1 s)."""
    return max(1, min(30, (job.page_count - job.pages_done) // 4 or 1))


class JobRateThrottle(BaseThrottle):
    """A job counts one against the key's rate (``ApiKey.rate_per_minute``); its pages count in
    the daily quota (:class:`~ocr_api.throttling.DailyQuotaThrottle`)."""

    def allow_request(self, request, view) -> bool:
        if not isinstance(request.auth, ApiKey):
            return True
        self.wait_s = take(f"key:{request.auth.prefix}", 1, request.auth.rate_per_minute)
        return self.wait_s == 0

    def wait(self) -> float:
        return max(1.0, self.wait_s)


class JobListView(OcrEndpoint):
    """Create a job (:meth:`post`)."""

    endpoint = "jobs"
    throttle_classes = [DailyQuotaThrottle, JobRateThrottle]

    def check_request_size(self, request) -> None:
        uploads.check_declared_length(request, settings.OCR_JOB_MAX_BYTES)

    def check_throttles(self, request) -> None:
        """The size check, then: the same ``Idempotency-Key`` and body as an existing job is
        that job again (nothing charged); the same key with another body is 422."""
        self.check_request_size(request)
        key = request.headers.get(IDEMPOTENCY_HEADER, "")
        if key and isinstance(request.auth, ApiKey):
            if len(key) > 255:
                raise errors.InvalidParameter(f"{IDEMPOTENCY_HEADER}: at most 255 characters.",
                                              field=IDEMPOTENCY_HEADER)
            job = Job.objects.filter(api_key=request.auth, idempotency_key=key).first()
            if job is not None:
                if job.body_sha256 != self.body_sha256(request):
                    raise job_errors.IdempotencyKeyReused(
                        f"{IDEMPOTENCY_HEADER} {key!r} was used for another request body.")
                self.replayed = job
                return
        super().check_throttles(request)

    def upload(self, request) -> bytes:
        """The upload (:func:`ocr_api.intake.uploads.single_image`), at most
        ``OCR_JOB_MAX_BYTES``, read once."""
        if not hasattr(self, "_upload"):
            self._upload = uploads.single_image(request, settings.OCR_JOB_MAX_BYTES)
        return self._upload

    def opened(self, request) -> documents.Document:
        if not hasattr(self, "_opened"):
            try:
                self._opened = documents.open_document(self.upload(request),
                                                       settings.OCR_JOB_MAX_PAGES)
            except errors.ApiError as exc:
                self._opened = exc
        if isinstance(self._opened, errors.ApiError):
            raise self._opened
        return self._opened

    def throttle_cost(self, request) -> int:
        try:
            return self.opened(request).page_count
        except errors.ApiError:
            return 1

    def options(self, request) -> tuple[dict, str]:
        """The OCR parameters and the ``callback_url`` (query string or form field)."""
        parameters = uploads.parameters(request, file_fields=("image", "callback_url"))
        urls = request.query_params.getlist("callback_url")
        if hasattr(request.data, "getlist"):              # a form, not a raw body
            urls += request.data.getlist("callback_url")
        if len(urls) > 1:
            raise errors.InvalidParameter("callback_url: given more than once.",
                                          field="callback_url")
        return parameters, (urls[0] if urls else "")

    def body_sha256(self, request) -> str:
        parameters, callback_url = self.options(request)
        digest = hashlib.sha256(self.upload(request))
        digest.update(json.dumps([parameters, callback_url], sort_keys=True).encode())
        return digest.hexdigest()

    @extend_schema(
        operation_id="jobs_create",
        summary="Read a long document as a job",
        description=(
            "Takes what `POST /api/ocr` takes (a PDF or TIFF of up to OCR_JOB_MAX_PAGES pages, "
            f"or an image; {ACCEPTED_FORMATS_TEXT}), and optionally `callback_url` (a webhook "
            "sent once when the job ends, signed the Standard Webhooks way with the key's "
            "secret, shown once as `webhook_secret`). Answers 202 with `Location` and "
            "`Retry-After`. The same `Idempotency-Key` header and body answer the same job. "
            "Every page counts in the daily quota when the job is accepted; pages not read "
            "(failed, cancelled) are given back."),
        parameters=[OcrParametersSerializer,
                    OpenApiParameter("callback_url", str, required=False,
                                     description="https URL the job's end is posted to."),
                    OpenApiParameter(IDEMPOTENCY_HEADER, str, OpenApiParameter.HEADER,
                                     required=False)],
        request=SINGLE_UPLOAD_REQUEST,
        responses={202: JobSerializer,
                   **error_responses(400, 401, 403, 413, 415, 422, 429, 500)},
    )
    def post(self, request):
        record = self.recorder.new_record()
        replayed = getattr(self, "replayed", None)
        if replayed is not None:
            record.page_count, record.image_format = 0, replayed.format
            return self.accepted(replayed)
        data = self.upload(request)
        record.bytes_received = len(data)
        parameters, callback_url = self.options(request)
        record.parameters = parameters
        if callback_url:
            if not isinstance(request.auth, ApiKey):
                raise errors.InvalidParameter("callback_url: webhooks are signed with an API "
                                              "key's secret; create the job with a key.",
                                              field="callback_url")
            try:
                validate_callback_url(callback_url, WebhookPolicy.from_settings(settings))
            except CallbackUrlError as error:
                raise errors.InvalidParameter(error.message, field="callback_url") from None
        document = self.opened(request)
        record.image_format, record.page_count = document.format, document.page_count
        record.width, record.height = document.width or None, document.height or None

        api_key = request.auth if isinstance(request.auth, ApiKey) else None
        reservation = getattr(self, "quota_reservation", None)
        secret = None
        try:
            with transaction.atomic():
                job = Job.objects.create(
                    api_key=api_key, user=None if api_key else request.user,
                    request_id=request.request_id, format=document.format,
                    page_count=document.page_count, bytes_received=len(data),
                    parameters=parameters, page_points=[list(p) for p in document.page_points],
                    callback_url=callback_url,
                    idempotency_key=request.headers.get(IDEMPOTENCY_HEADER, "")
                    if api_key else "",
                    body_sha256=self.body_sha256(request),
                    quota_day=reservation[1] if reservation else None,
                    expires_at=expiry(timezone.now()))
                JobPage.objects.bulk_create(
                    JobPage(job=job, api_key=api_key, number=number)
                    for number in range(1, document.page_count + 1))
                if callback_url and not WebhookSecret.objects.filter(api_key=api_key).exists():
                    secret = WebhookSecret.objects.create(api_key=api_key,
                                                          secret=new_secret()).secret
                job.folder.mkdir(parents=True, exist_ok=True)
                job.upload_path.write_bytes(data)
                transaction.on_commit(lambda: queueing.top_up(job.api_key_id))
        except IntegrityError:           # the same Idempotency-Key at the same moment
            job = Job.objects.filter(api_key=api_key,
                                     idempotency_key=request.headers.get(IDEMPOTENCY_HEADER))
            job = job.first()
            if job is None:
                raise
            record.page_count = 0
            return self.accepted(job)
        except BaseException:
            if "job" in locals():
                job.delete_files()
            raise
        metrics.JOBS.labels(Job.QUEUED).inc()
        extra = {"webhook_secret": secret} if secret else {}
        return self.accepted(job, **extra)

    def accepted(self, job: Job, **extra) -> Response:
        response = job_response(job, status.HTTP_202_ACCEPTED, **extra)
        response["Location"] = reverse("job", args=[job.id])
        response.setdefault("Retry-After", "1")
        return response


class JobDetailView(APIView):
    """The job (``GET``), cancelled or deleted (``DELETE``)."""

    authentication_classes = OcrEndpoint.authentication_classes

    @extend_schema(operation_id="jobs_retrieve", summary="A job's state and progress",
                   responses={200: JobSerializer, **error_responses(401, 403, 404)})
    def get(self, request, job_id):
        return job_response(get_job(request, job_id))

    @extend_schema(operation_id="jobs_destroy", summary="Cancel a job, or delete an ended one",
                   description="An active job is cancelled (200, the job; the quota of its "
                               "pages not read is given back); an ended one is deleted with "
                               "its upload and result (204).",
                   responses={200: JobSerializer, 204: None,
                              **error_responses(401, 403, 404)})
    def delete(self, request, job_id):
        job = get_job(request, job_id)
        if job.status in Job.ACTIVE and end_job(job.id, Job.CANCELLED, "cancelled",
                                                "Cancelled by the client."):
            job.refresh_from_db()
            return job_response(job)
        job.delete_files()
        job.delete()
        return Response(status=status.HTTP_204_NO_CONTENT)


def page_range(value: str | None, page_count: int) -> tuple[int, int]:
    """``pages=first-last`` (1-based, inclusive; ``n`` alone is one page), at most
    :data:`RESULT_PART_PAGES` long, its end cut to the document's last page (``1-50`` of a
    12-page document is pages 1-12, as a client reading in parts of 50 asks); the first part
    when absent.

    Raises:
        errors.InvalidParameter: malformed, starting after the last page, or too long.
    """
    if not value:
        return 1, min(page_count, RESULT_PART_PAGES)
    match = _PAGES.match(value)
    if not match:
        raise errors.InvalidParameter("pages: write first-last, e.g. 1-50.", field="pages")
    first = int(match[1])
    last = int(match[2]) if match[2] else first
    if not 1 <= first <= min(last, page_count):
        raise errors.InvalidParameter(f"pages: the document has pages 1-{page_count}.",
                                      field="pages")
    if last - first + 1 > RESULT_PART_PAGES:
        raise errors.InvalidParameter(f"pages: at most {RESULT_PART_PAGES} pages per part.",
                                      field="pages")
    return first, min(last, page_count)


class JobResultView(APIView):
    """The answer of a succeeded job, in parts of pages and in every format."""

    authentication_classes = OcrEndpoint.authentication_classes
    renderer_classes = RESULT_RENDERERS

    @extend_schema(
        operation_id="jobs_result", summary="A succeeded job's answer",
        description=("The answer `POST /api/ocr` gives for the document, restricted to "
                     f"`pages` (first-last, at most {RESULT_PART_PAGES}; the first "
                     f"{RESULT_PART_PAGES} by default), with `next`, the next part's URL "
                     "(also a `Link: rel=next` header). `format=text` and `hocr` give those "
                     "pages; `format=pdf` the searchable PDF of the whole document."),
        parameters=[OpenApiParameter("pages", str, required=False),
                    OpenApiParameter("format", str, enum=["json", "text", "hocr", "pdf"],
                                     required=False)],
        responses={**answer_responses(OpenApiResponse(JobResultSerializer)),
                   **error_responses(400, 401, 403, 404, 409)})
    def get(self, request, job_id):
        job = get_job(request, job_id)
        if job.status != Job.SUCCEEDED:
            raise job_errors.JobNotFinished(f"The job is {job.status}; its result is there once it "
                                        "succeeded.")
        whole = request.accepted_renderer.format == "pdf"
        first, last = ((1, job.page_count) if whole
                       else page_range(request.query_params.get("pages"), job.page_count))
        bodies = tuple(JobPage.objects.filter(job=job, number__gte=first, number__lte=last)
                       .order_by("number").values_list("body", flat=True))
        if whole:
            try:
                with open(job.upload_path, "rb") as file:
                    data = file.read()
            except FileNotFoundError:        # storage lost (a volume not shared, deleted)
                raise job_errors.NotFound("The job's document is no longer stored, so its "
                                          "searchable PDF cannot be made; the JSON, text and "
                                          "hOCR results are still there.") from None
            document = documents.open_document(data, settings.OCR_JOB_MAX_PAGES)
        else:
            document = documents.Document(
                job.format, job.page_count, b"",
                page_points=tuple(tuple(p) for p in job.page_points[first - 1:last]))
        answer = Answer(document, bodies)
        url = reverse("job-result", args=[job.id])
        next_url = (f"{url}?pages={last + 1}-{min(job.page_count, last + RESULT_PART_PAGES)}"
                    if last < job.page_count and not whole else None)
        response = AnswerResponse(answer, {"request_id": request.request_id,
                                           "job_id": str(job.id), **answer.body(),
                                           "pages_range": [first, last], "next": next_url})
        if next_url:
            fmt = request.query_params.get("format")
            response["Link"] = f'<{next_url}{"&format=" + fmt if fmt else ""}>; rel="next"'
        return response
