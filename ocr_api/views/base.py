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
from ..parsers import OctetStreamParser, RawImageParser
from ..throttling import (ApiKeyRateThrottle, DailyQuotaThrottle, UnauthenticatedRateThrottle,
                          settle_quota)


def result_body(result: OcrResult, image_format: str, recognized: bool) -> dict:
    """What an answer says about one image: the model, the image, the whole text (when it was
    read) and the boxes. Points are rounded to 0.1 px, scores to 4 decimals."""
    boxes = [{"points": [[round(float(x), 1), round(float(y), 1)] for x, y in box],
              "score": round(float(score), 4)}
             for box, score in zip(result.boxes, result.scores)]
    body = {"model": {"name": result.model_name, "version": result.model_version},
            "image": {"width": result.width, "height": result.height, "format": image_format}}
    if recognized:
        for box, text, score in zip(boxes, result.texts, result.text_scores):
            box["text"], box["text_score"] = text, round(float(score), 4)
        body["text"] = result.text
    body["boxes"] = boxes
    return body


def record_result(record: audit.AuditRecord, result: OcrResult) -> None:
    """Copy what Triton answered into an audit record: sizes and counts, never the text."""
    record.width, record.height = result.width, result.height
    record.box_count = len(result.boxes)
    record.char_count = sum(len(text) for text in result.texts)
    record.inference_ms = result.inference_ms
    record.model_name, record.model_version = result.model_name, result.model_version


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
    upload_help = (f"send the image as multipart/form-data field 'image', or as the raw body "
                   f"with its image/* content type (or application/octet-stream); formats: "
                   f"{ACCEPTED_FORMATS_TEXT}.")
    # API key first (its challenge answers anonymous 401s); a staff session for the demo page.
    authentication_classes = [ApiKeyAuthentication, SessionAuthentication]
    parser_classes = [MultiPartParser, RawImageParser, OctetStreamParser]
    # Quota first: it raises at once, and a refused image must not enter the rate window.
    throttle_classes = [DailyQuotaThrottle, ApiKeyRateThrottle]

    def dispatch(self, request, *args, **kwargs):
        self.recorder = audit.RequestRecorder(request, self.endpoint)
        response = super().dispatch(request, *args, **kwargs)
        data = getattr(response, "data", None)
        error = (data.get("error") or {}) if isinstance(data, dict) else {}
        self.recorder.finish(response.status_code, error.get("code", ""))
        # Quota reserved for images the audit log does not charge goes back.
        settle_quota(self, [record.error_code for record in self.recorder.records])
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
