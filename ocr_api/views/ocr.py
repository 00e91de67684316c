"""``POST /api/ocr``: detect text boxes in one image."""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework.response import Response

from .. import errors, uploads
from ..image_probe import probe_image
from ..serializers import ErrorSerializer, OcrParametersSerializer, OcrResponseSerializer
from ..triton_client import get_client
from .base import OcrEndpoint, boxes_body, record_detection

#: A real answer for tests/data/images/korean.png at the default long side 1280.
_EXAMPLE_RESPONSE = {
    "request_id": "5263fa006cfa40f4a5d4f0dc30ddd9b8",
    "model": {"name": "ensemble_ocr", "version": "1"},
    "image": {"width": 629, "height": 420, "format": "PNG"},
    "boxes": [
        {"points": [[143.9, 89.1], [278.5, 100.2], [272.7, 171.2], [138.1, 160.1]],
         "score": 0.9648},
        {"points": [[379.4, 114.3], [518.4, 119.7], [515.8, 187.2], [376.8, 181.9]],
         "score": 0.9766},
        {"points": [[169.2, 182.2], [252.7, 190.2], [249.3, 226.5], [165.8, 218.6]],
         "score": 0.9922},
        {"points": [[355.0, 196.5], [530.6, 218.2], [525.4, 260.0], [349.9, 238.4]],
         "score": 0.9922},
        {"points": [[196.1, 282.5], [283.6, 286.6], [281.6, 327.3], [194.1, 323.1]],
         "score": 0.9961},
        {"points": [[352.6, 291.7], [456.1, 298.4], [453.4, 339.4], [350.0, 332.7]],
         "score": 1.0},
    ],
    "timing_ms": {"total": 712.3, "inference": 699.0},
}


def _error_responses(*statuses: int) -> dict:
    return {code: OpenApiResponse(ErrorSerializer, description=", ".join(
        name for name, st in errors.ERROR_CODES.items() if st == code)) for code in statuses}


class OcrView(OcrEndpoint):
    """Detect text boxes in one image. Audited and measured by :class:`OcrEndpoint`."""


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
        record = self.new_record()
        image = uploads.single_image(request)
        record.bytes_received = len(image)
        record.parameters = parameters = uploads.parameters(request)

        info = probe_image(image, settings.OCR_MAX_PIXELS, settings.OCR_MIN_IMAGE_SIDE)
        record.image_format, record.width, record.height = info.format, info.width, info.height

        detection = get_client().detect(image, parameters)
        record_detection(record, detection)
        return Response({
            "request_id": request.request_id,
            "model": {"name": detection.model_name, "version": detection.model_version},
            "image": {"width": detection.width, "height": detection.height,
                      "format": info.format},
            "boxes": boxes_body(detection),
            "timing_ms": {"total": self.elapsed_ms(),
                          "inference": round(detection.inference_ms, 1)},
        })
