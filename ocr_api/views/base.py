"""What every OCR endpoint shares: authentication, parsers, throttles, the size check, and the
audit log and metrics of every request."""

from __future__ import annotations

from django.conf import settings
from django.urls import reverse
from ocr_contract.formats import ACCEPTED_FORMATS_TEXT
from ocr_inference.client import OcrResult
from rest_framework import exceptions
from rest_framework.authentication import SessionAuthentication
from rest_framework.parsers import MultiPartParser
from rest_framework.views import APIView

from .. import admission, audit, errors, inference
from ..authentication import ApiKeyAuthentication
from ..intake import uploads
from ..intake.parsers import OctetStreamParser, PdfParser, RawImageParser
from ..models import ApiKey
from ..throttling import (ApiKeyRateThrottle, DailyQuotaThrottle, UnauthenticatedRateThrottle,
                          settle_quota)


def record_results(record: audit.AuditRecord, results: list[OcrResult]) -> None:
    """Copy what Triton answered for an upload's pages into its audit record: sizes and
    counts, never the text."""
    first = results[0]
    record.width, record.height = first.width, first.height
    record.box_count = sum(len(result.boxes) for result in results)
    record.char_count = sum(len(text) for result in results for text in result.texts)
    record.inference_ms = max(result.inference_ms for result in results)
    record.model_name, record.model_version = first.model_name, first.model_version


def sync_max_pages() -> int:
    """Most pages of a document the synchronous endpoints read now: ``OCR_MAX_PAGES``, fewer
    while this deployment's pages (those of its default detector) take too long for the
    proxy's deadline (:meth:`ocr_api.admission.Admission.sync_page_limit`)."""
    return admission.get().sync_page_limit(settings.OCR_MAX_PAGES,
                                           inference.default_cost_kinds()[admission.DOCUMENT])


def refusal_for_sync(error: errors.ApiError, max_pages: int) -> errors.ApiError:
    """An upload's refusal as the synchronous endpoints (``POST /api/ocr``, ``/api/ocr/batch``)
    answer it: a document over ``max_pages`` (:func:`sync_max_pages`; 413
    ``too_many_pages``) is told to go to ``POST /api/jobs``, in its message and in a ``Link:
    </api/jobs>; rel="alternate"`` header (the error's ``link``, set by
    :func:`ocr_api.error_handlers.exception_handler`); any other refusal is ``error`` itself."""
    if not isinstance(error, errors.TooManyPages) or getattr(error, "link", None):
        return error
    jobs = reverse("jobs")
    page_s = admission.get().load(inference.default_cost_kinds())["page_s"][admission.DOCUMENT]
    why = "OCR_MAX_PAGES" if max_pages >= settings.OCR_MAX_PAGES else \
        (f"OCR_MAX_PAGES is {settings.OCR_MAX_PAGES}, fewer while a page takes this server "
         f"{page_s:.0f} s")
    refusal = errors.TooManyPages(
        f"{error.detail} Send it to POST {jobs}, which reads a document of up to "
        f"{settings.OCR_JOB_MAX_PAGES} pages (the gateway's OCR_JOB_MAX_PAGES) as a job in the "
        f"background, or here in parts of up to {max_pages} page{'s' * (max_pages != 1)} "
        f"({why}).",
        field=error.field)
    refusal.link = errors.jobs_link()
    return refusal


class OcrEndpoint(APIView):
    """Base view of the OCR endpoints.

    :meth:`dispatch` records every request, answered or refused (authentication, throttling,
    validation, Triton): one audit row per image, and the metrics; a request that never
    authenticated is counted per address and minute instead, and throttled per address
    (:meth:`check_unauthenticated_throttle`). DRF's ``APIView.initial`` runs the checks in
    its order (content negotiation, version, authentication, permissions, throttles), which
    these hooks extend: :meth:`perform_authentication` tells the recorder who sent the request
    and throttles a request without a valid key; :meth:`check_throttles` checks the request's
    size first (between permissions and throttling). Subclasses add a
    :class:`~ocr_api.audit.AuditRecord` per image with ``self.recorder.new_record()``;
    records without their own ``http_status`` take the response's.
    """

    endpoint = "ocr"
    #: What the endpoint reads, for the 415 of a content type no parser takes.
    upload_help = (f"send the image or PDF as multipart/form-data field 'image', or as the raw "
                   f"body with its image/* or application/pdf content type (or "
                   f"application/octet-stream); formats: {ACCEPTED_FORMATS_TEXT}.")
    # API key first (its challenge answers anonymous 401s); a staff session for the demo page.
    authentication_classes = [ApiKeyAuthentication, SessionAuthentication]
    parser_classes = [MultiPartParser, RawImageParser, PdfParser, OctetStreamParser]
    # Quota first: it raises at once, and a refused image must not enter the rate window.
    throttle_classes = [DailyQuotaThrottle, ApiKeyRateThrottle]

    def dispatch(self, request, *args, **kwargs):
        self.recorder = audit.RequestRecorder(request, self.endpoint)
        # gunicorn's threads serve one request after another: no caller carries over.
        caller = admission.current_caller.set("anonymous")
        try:
            response = super().dispatch(request, *args, **kwargs)
        finally:
            admission.current_caller.reset(caller)
        data = getattr(response, "data", None)
        error = (data.get("error") or {}) if isinstance(data, dict) else {}
        self.recorder.finish(response.status_code, error.get("code", ""))
        # Quota reserved for images the audit log does not charge goes back.
        settle_quota(self, [(record.error_code, record.page_count)
                            for record in self.recorder.records])
        return response

    def perform_authentication(self, request) -> None:
        """DRF's authentication, then: the key or staff user goes to the recorder, and a
        request without a valid key (none, or an unknown, revoked or expired one) is counted
        against its address (:meth:`check_unauthenticated_throttle`) before it is refused.

        Raises:
            exceptions.AuthenticationFailed: a key that is not valid (401).
            exceptions.Throttled: too many requests without a valid key from the address.
        """
        try:
            super().perform_authentication(request)
        except exceptions.APIException:              # an unknown, revoked or expired key
            self.check_unauthenticated_throttle(request)
            raise
        if isinstance(request.auth, ApiKey):
            self.recorder.api_key = request.auth
        elif getattr(request.user, "is_authenticated", False):
            self.recorder.user = request.user                # a staff session: the demo page
        admission.current_caller.set(admission.caller_of(request))
        user = request.user
        self.recorder.authenticated = isinstance(request.auth, ApiKey) or bool(
            user is not None and user.is_authenticated)
        if not self.recorder.authenticated:          # no key: permissions will say 401
            self.check_unauthenticated_throttle(request)

    def check_throttles(self, request) -> None:
        """The size check, then DRF's throttles. Before throttling, which may count images:
        what the headers alone refuse is not charged.

        Raises:
            errors.PayloadTooLarge: see :meth:`check_request_size`.
            exceptions.Throttled, errors.QuotaExceeded, errors.TooManyImages: the throttles'
                (:mod:`ocr_api.throttling`).
        """
        self.check_request_size(request)
        super().check_throttles(request)

    def check_unauthenticated_throttle(self, request) -> None:
        """Count a request without a valid key against its address's rate.

        Raises:
            exceptions.Throttled: 429 rate_limited with ``Retry-After``, see
                :class:`~ocr_api.throttling.UnauthenticatedRateThrottle`.
        """
        throttle = UnauthenticatedRateThrottle()
        if not throttle.allow_request(request, self):
            raise exceptions.Throttled(
                throttle.wait(), detail="Too many requests without a valid API key from this "
                                        "address.")

    def check_request_size(self, request) -> None:
        """Refuse an oversized body from its Content-Length header, without reading it.

        Raises:
            errors.PayloadTooLarge: see :func:`ocr_api.intake.uploads.check_declared_length`.
        """
        uploads.check_declared_length(request, settings.OCR_MAX_UPLOAD_BYTES)
