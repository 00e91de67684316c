"""What every OCR endpoint shares: authentication, parsers, throttles, the size check, and the
audit log and metrics of every request."""

from __future__ import annotations

from django.conf import settings
from ocr_contract.formats import ACCEPTED_FORMATS_TEXT
from ocr_inference.client import OcrResult
from rest_framework import exceptions
from rest_framework.authentication import SessionAuthentication
from rest_framework.parsers import MultiPartParser
from rest_framework.views import APIView

from .. import audit, uploads
from ..authentication import ApiKeyAuthentication
from ..models import ApiKey
from ..parsers import OctetStreamParser, PdfParser, RawImageParser
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


class OcrEndpoint(APIView):
    """Base view of the OCR endpoints.

    :meth:`dispatch` records every request, answered or refused (authentication, throttling,
    validation, Triton): one audit row per image, and the metrics; a request that never
    authenticated is counted per address and minute instead, and throttled per address
    (:meth:`check_unauthenticated_throttle`). :meth:`initial` runs DRF's
    checks in DRF's order, with the size check between permissions and throttling. Subclasses
    add a :class:`~ocr_api.audit.AuditRecord` per image with ``self.recorder.new_record()``;
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
        response = super().dispatch(request, *args, **kwargs)
        data = getattr(response, "data", None)
        error = (data.get("error") or {}) if isinstance(data, dict) else {}
        self.recorder.finish(response.status_code, error.get("code", ""))
        # Quota reserved for images the audit log does not charge goes back.
        settle_quota(self, [(record.error_code, record.page_count)
                            for record in self.recorder.records])
        return response

    def initial(self, request, *args, **kwargs):
        """What runs before the handler, in order (DRF's ``APIView.initial`` plus one step)."""
        self.format_kwarg = self.get_format_suffix(**kwargs)
        request.accepted_renderer, request.accepted_media_type = \
            self.perform_content_negotiation(request)
        request.version, request.versioning_scheme = self.determine_version(
            request, *args, **kwargs)
        try:
            self.perform_authentication(request)
        except exceptions.APIException:              # an unknown, revoked or expired key
            self.check_unauthenticated_throttle(request)
            raise
        if isinstance(request.auth, ApiKey):
            self.recorder.api_key = request.auth
        elif getattr(request.user, "is_authenticated", False):
            self.recorder.user = request.user                # a staff session: the demo page
        user = request.user
        self.recorder.authenticated = isinstance(request.auth, ApiKey) or bool(
            user is not None and user.is_authenticated)
        if not self.recorder.authenticated:          # no key: permissions will say 401
            self.check_unauthenticated_throttle(request)
        self.check_permissions(request)
        # Before throttling, which may count images: what the headers alone refuse is not
        # charged.
        self.check_request_size(request)
        self.check_throttles(request)

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
            errors.PayloadTooLarge: see :func:`ocr_api.uploads.check_declared_length`.
        """
        uploads.check_declared_length(request, settings.OCR_MAX_UPLOAD_BYTES)
