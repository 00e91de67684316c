"""What every OCR endpoint shares: parsers, throttles, timing, metrics and the audit log."""

from __future__ import annotations

import time

from django.conf import settings
from rest_framework.authentication import SessionAuthentication
from rest_framework.parsers import MultiPartParser
from rest_framework.views import APIView

from .. import audit, metrics, uploads
from ..authentication import ApiKeyAuthentication
from ..models import ApiKey
from ..parsers import OctetStreamParser, RawImageParser
from ..throttling import ApiKeyRateThrottle, DailyQuotaThrottle
from ..triton_client import Detection


def boxes_body(detection: Detection) -> list[dict]:
    """The ``boxes`` of an answer: points rounded to 0.1 px, scores to 4 decimals."""
    return [{"points": [[round(float(x), 1), round(float(y), 1)] for x, y in box],
             "score": round(float(score), 4)}
            for box, score in zip(detection.boxes, detection.scores)]


def record_detection(record: audit.AuditRecord, detection: Detection) -> None:
    """Copy what Triton answered into an audit record."""
    record.width, record.height = detection.width, detection.height
    record.box_count = len(detection.boxes)
    record.inference_ms = detection.inference_ms
    record.model_name, record.model_version = detection.model_name, detection.model_version


class OcrEndpoint(APIView):
    """Base view of the OCR endpoints.

    Every request, answered or refused (authentication, throttling, validation, Triton), ends
    in :meth:`finalize_response`, which writes the audit rows and the metrics: one per image.
    Subclasses append :class:`~ocr_api.audit.AuditRecord` objects to ``self.records`` (made
    by :meth:`new_record`); records without their own ``http_status`` take the response's.
    """

    endpoint = "ocr"
    # API key first (its challenge answers anonymous 401s); a staff session for the demo page.
    authentication_classes = [ApiKeyAuthentication, SessionAuthentication]
    parser_classes = [MultiPartParser, RawImageParser, OctetStreamParser]
    # Quota first: it raises at once, and a refused image must not enter the rate window.
    throttle_classes = [DailyQuotaThrottle, ApiKeyRateThrottle]

    def initial(self, request, *args, **kwargs):
        self.started = time.perf_counter()
        self.records: list[audit.AuditRecord] = []
        metrics.IN_FLIGHT.inc()
        self._in_flight = True
        super().initial(request, *args, **kwargs)

    def check_throttles(self, request):
        """After authentication, before throttling (which may count images): refuse what
        can be refused from the headers alone, without reading the body."""
        self.check_before_throttling(request)
        super().check_throttles(request)

    def check_before_throttling(self, request) -> None:
        """Refuse an oversized body from its Content-Length header.

        Raises:
            errors.PayloadTooLarge: see :func:`ocr_api.uploads.check_declared_length`.
        """
        uploads.check_declared_length(request, settings.OCR_MAX_UPLOAD_BYTES)

    def new_record(self) -> audit.AuditRecord:
        """An audit record for one image of this request (also added to ``self.records``)."""
        request = self.request._request
        record = audit.AuditRecord(request_id=request.request_id, endpoint=self.endpoint,
                                   client_ip=audit.client_ip(request))
        self.records.append(record)
        return record

    def elapsed_ms(self) -> float:
        return round((time.perf_counter() - self.started) * 1000.0, 1)

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        if not hasattr(self, "started"):
            return response  # refused before initial() ran (e.g. unknown method)
        if getattr(self, "_in_flight", False):
            metrics.IN_FLIGHT.dec()
            self._in_flight = False
        data = response.data if isinstance(getattr(response, "data", None), dict) else {}
        code = (data.get("error") or {}).get("code", "")
        records = self.records or [self.new_record()]
        total_ms = self.elapsed_ms()
        # _auth, not auth: reading .auth would run authentication now, and raise again if it
        # is what failed (or never ran because the request was refused first).
        auth = getattr(request, "_auth", None)
        api_key = auth if isinstance(auth, ApiKey) else None
        for record in records:
            if not record.http_status:
                record.http_status, record.error_code = response.status_code, code
            record.total_ms = total_ms
            audit.write(record, api_key)
            metrics.observe_image(self.endpoint, record.http_status, record.error_code,
                                  record.inference_ms)
        metrics.REQUEST_SECONDS.labels(self.endpoint).observe(total_ms / 1000.0)
        return response
