"""``POST /api/ocr``: detect text boxes in one image."""

from __future__ import annotations

import time

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from .. import audit, errors
from ..image_probe import probe_image
from ..models import ApiKey
from ..parsers import OctetStreamParser, RawImageParser
from ..serializers import ErrorSerializer, OcrParametersSerializer, OcrResponseSerializer
from ..throttling import ApiKeyRateThrottle, DailyQuotaThrottle
from ..triton_client import get_client

_EXAMPLE_RESPONSE = {
    "request_id": "8d0c6b0f6a7e4c1bb1d0a1c1f2e3d4c5",
    "model": {"name": "ensemble_ocr", "version": "1"},
    "image": {"width": 629, "height": 420, "format": "PNG"},
    "boxes": [{"points": [[95.4, 79.6], [219.6, 79.6], [219.6, 125.1], [95.4, 125.1]],
               "score": 0.9648}],
    "timing_ms": {"total": 812.4, "inference": 790.1},
}


def _error_responses(*statuses: int) -> dict:
    return {code: OpenApiResponse(ErrorSerializer, description=", ".join(
        name for name, st in errors.ERROR_CODES.items() if st == code)) for code in statuses}


class OcrView(APIView):
    """Detect text boxes in one image.

    Every call, answered or refused, leaves one audit row (``finalize_response``).
    """

    parser_classes = [MultiPartParser, RawImageParser, OctetStreamParser]
    # Quota first: it raises at once, and a refused image must not enter the rate window.
    throttle_classes = [DailyQuotaThrottle, ApiKeyRateThrottle]

    @extend_schema(
        operation_id="ocr",
        summary="Detect text boxes in an image",
        description=(
            "Send the image as multipart field `image` or as the raw body with an `image/*` "
            "content type. The format is sniffed from the bytes (JPEG, PNG, WEBP, BMP, TIFF, "
            "GIF, HEIC/HEIF). Parameters go in the query string or as form fields. Points are "
            "in the upright (EXIF-transposed) image's pixels, clockwise from the top-left."),
        parameters=[OcrParametersSerializer],
        request={
            "multipart/form-data": {"type": "object", "properties": {
                "image": {"type": "string", "format": "binary"}}, "required": ["image"]},
            "image/*": OpenApiTypes.BINARY,
        },
        responses={200: OpenApiResponse(OcrResponseSerializer, examples=[
            OpenApiExample("korean.png", value=_EXAMPLE_RESPONSE)]),
            **_error_responses(400, 401, 403, 413, 415, 429, 500, 502, 503, 504)},
    )
    def post(self, request):
        record = self.audit_record
        self._check_declared_length(request)
        image = self._image_bytes(request)
        record.bytes_received = len(image)
        parameters = self._parameters(request)
        record.parameters = parameters

        info = probe_image(image, settings.OCR_MAX_PIXELS, settings.OCR_MIN_IMAGE_SIDE)
        record.image_format, record.width, record.height = info.format, info.width, info.height

        detection = get_client().detect(image, parameters)
        record.width, record.height = detection.width, detection.height
        record.box_count = len(detection.boxes)
        record.inference_ms = detection.inference_ms
        record.model_name, record.model_version = detection.model_name, detection.model_version
        return Response({
            "request_id": request.request_id,
            "model": {"name": detection.model_name, "version": detection.model_version},
            "image": {"width": detection.width, "height": detection.height,
                      "format": info.format},
            "boxes": [{"points": [[round(float(x), 1), round(float(y), 1)] for x, y in box],
                       "score": round(float(score), 4)}
                      for box, score in zip(detection.boxes, detection.scores)],
            "timing_ms": {"total": self._elapsed_ms(),
                          "inference": round(detection.inference_ms, 1)},
        })

    # -- request handling -------------------------------------------------------------------

    def initial(self, request, *args, **kwargs):
        self.started = time.perf_counter()
        self.audit_record = audit.AuditRecord(request_id=request._request.request_id,
                                              client_ip=audit.client_ip(request._request))
        super().initial(request, *args, **kwargs)

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        record = getattr(self, "audit_record", None)
        if record is not None:
            record.http_status = response.status_code
            data = response.data if isinstance(getattr(response, "data", None), dict) else {}
            record.error_code = (data.get("error") or {}).get("code", "")
            record.total_ms = self._elapsed_ms()
            audit.write(record, request.auth if isinstance(request.auth, ApiKey) else None)
        return response

    def _elapsed_ms(self) -> float:
        return round((time.perf_counter() - self.started) * 1000.0, 1)

    @staticmethod
    def _check_declared_length(request):
        """Refuse an oversized body from its Content-Length, before reading it."""
        try:
            declared = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            declared = 0
        if declared > settings.OCR_MAX_UPLOAD_BYTES + 64 * 1024:  # multipart framing slack
            raise errors.PayloadTooLarge(
                f"The body is {declared} bytes; the limit is {settings.OCR_MAX_UPLOAD_BYTES}.")

    @staticmethod
    def _image_bytes(request) -> bytes:
        data = request.data
        if isinstance(data, bytes):
            image = data
        elif not request.content_type.startswith("multipart/"):
            image = b""  # an empty raw body: DRF runs no parser on it; sniffing says 415
        else:
            upload = request.FILES.get("image")
            if upload is None:
                raise errors.MissingImage()
            if upload.size > settings.OCR_MAX_UPLOAD_BYTES:
                raise errors.PayloadTooLarge(
                    f"The image is {upload.size} bytes; the limit is "
                    f"{settings.OCR_MAX_UPLOAD_BYTES}.")
            image = upload.read()
        if len(image) > settings.OCR_MAX_UPLOAD_BYTES:
            raise errors.PayloadTooLarge(
                f"The image is {len(image)} bytes; the limit is {settings.OCR_MAX_UPLOAD_BYTES}.")
        return image

    @staticmethod
    def _parameters(request) -> dict:
        raw = {key: request.query_params.get(key) for key in request.query_params}
        if not isinstance(request.data, bytes):
            raw.update({key: request.data.get(key) for key in request.data if key != "image"})
        serializer = OcrParametersSerializer(data=raw)
        if not serializer.is_valid():
            field, messages = next(iter(serializer.errors.items()))
            raise errors.InvalidParameter(f"{field}: {messages[0]}", field=field)
        return dict(serializer.validated_data)
