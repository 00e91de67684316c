"""``POST /api/ocr``: find and read the text in one image."""

from __future__ import annotations

import json
from pathlib import Path

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from ocr_contract.formats import ACCEPTED_FORMATS_TEXT
from ocr_contract.parameters import RECOGNIZE
from rest_framework.response import Response

from .. import inference, uploads
from ..image_probe import probe_image
from ..serializers import OcrParametersSerializer, OcrResponseSerializer, error_responses
from .base import OcrEndpoint, record_result, result_body

#: A real answer (tests/data/images/korean.png with language=ko), the schema's example; the
#: README links to the same file.
EXAMPLE_ANSWER = json.loads(
    (Path(__file__).resolve().parent.parent / "examples" / "korean.json").read_text("utf-8"))


class OcrView(OcrEndpoint):
    """Find and read the text in one image. Audited and measured by :class:`OcrEndpoint`."""

    @extend_schema(
        operation_id="ocr",
        summary="Find and read the text in an image",
        description=(
            "Send the image as multipart field `image` or as the raw body with an `image/*` "
            "content type (or `application/octet-stream`). The format is sniffed from the "
            f"bytes ({ACCEPTED_FORMATS_TEXT}). "
            "Parameters go in the query string or as form fields. Points are in the upright "
            "(EXIF-transposed) image's pixels, clockwise from the top-left."),
        parameters=[OcrParametersSerializer],
        request={
            "multipart/form-data": {"type": "object", "properties": {
                "image": {"type": "string", "format": "binary"}}, "required": ["image"]},
            "image/*": OpenApiTypes.BINARY,
            # The same raw body for clients generated from the schema (openapi-python-client
            # skips "image/*" as an unsupported content type).
            "application/octet-stream": OpenApiTypes.BINARY,
        },
        responses={200: OpenApiResponse(OcrResponseSerializer, examples=[
            OpenApiExample("korean.png, language=ko", value=EXAMPLE_ANSWER)]),
            **error_responses(400, 401, 403, 413, 415, 429, 500, 502, 503, 504)},
    )
    def post(self, request):
        record = self.recorder.new_record()
        image = uploads.single_image(request)
        record.bytes_received = len(image)
        record.parameters = parameters = uploads.parameters(request)

        info = probe_image(image, settings.OCR_MAX_PIXELS, settings.OCR_MIN_IMAGE_SIDE)
        record.image_format, record.width, record.height = info.format, info.width, info.height

        result = inference.infer(image, parameters)
        record_result(record, result)
        return Response({
            "request_id": request.request_id,
            **result_body(result, info.format, parameters.get("recognize", RECOGNIZE.default)),
            "timing_ms": {"total": self.recorder.elapsed_ms(),
                          "inference": round(result.inference_ms, 1)},
        })
