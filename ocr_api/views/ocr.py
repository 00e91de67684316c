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

from .. import documents, errors, inference, uploads
from ..renderers import RESULT_RENDERERS, FormatNegotiation
from ..serializers import OcrParametersSerializer, OcrResponseSerializer, error_responses
from .base import OcrEndpoint, record_results

#: A real answer (tests/data/images/korean.png with language=ko), the schema's example; the
#: README links to the same file.
EXAMPLE_ANSWER = json.loads(
    (Path(__file__).resolve().parent.parent / "examples" / "korean.json").read_text("utf-8"))


class OcrView(OcrEndpoint):
    """Find and read the text in one image or document (PDF, multi-page TIFF), answered as JSON,
    plain text, hOCR or a searchable PDF (:mod:`ocr_api.renderers`). Audited and measured by
    :class:`OcrEndpoint`."""

    renderer_classes = RESULT_RENDERERS
    content_negotiation_class = FormatNegotiation

    def opened(self, request) -> documents.Document:
        """The upload, opened once per request (:func:`ocr_api.documents.open_document`).

        Raises:
            errors.ApiError: the upload's refusal, the same each time it is asked.
        """
        if not hasattr(self, "_opened"):
            try:
                self._opened = documents.open_document(self.upload(request),
                                                       settings.OCR_MAX_PAGES)
            except errors.ApiError as exc:
                self._opened = exc
        if isinstance(self._opened, errors.ApiError):
            raise self._opened
        return self._opened

    def upload(self, request) -> bytes:
        """The uploaded bytes, read once (:func:`ocr_api.uploads.single_image`)."""
        if not hasattr(self, "_upload"):
            self._upload = uploads.single_image(request)
        return self._upload

    def document_for_output(self) -> documents.Document | None:
        """The opened upload, for the renderers that need what was sent (the searchable PDF)."""
        try:
            return self.opened(self.request)
        except errors.ApiError:
            return None

    def throttle_cost(self, request) -> int:
        """Pages count as images for the rate and the quota; an upload that cannot be opened
        costs one (and is refused by :meth:`post`)."""
        try:
            return self.opened(request).page_count
        except errors.ApiError:
            return 1

    @extend_schema(
        operation_id="ocr",
        summary="Find and read the text in an image or a document",
        description=(
            "Send the image or document as multipart field `image` or as the raw body with an "
            "`image/*` or `application/pdf` content type (or `application/octet-stream`). The "
            f"format is sniffed from the bytes ({ACCEPTED_FORMATS_TEXT}). A PDF or multi-page "
            f"TIFF of up to OCR_MAX_PAGES pages answers `pages` (each page counts as one image "
            "for the rate and the quota); a longer one is sent in parts. "
            "Parameters go in the query string or as form fields. Points are in the upright "
            "(EXIF-transposed) image's pixels (a PDF page's: rendered at OCR_PDF_DPI), "
            "clockwise from the top-left. The answer comes as JSON, or with `format=text`, "
            "`format=hocr` (hOCR 1.2) or `format=pdf` (a searchable PDF of what was sent), or "
            "by the `Accept` header; errors are always JSON."),
        parameters=[OcrParametersSerializer],
        request={
            "multipart/form-data": {"type": "object", "properties": {
                "image": {"type": "string", "format": "binary"}}, "required": ["image"]},
            "image/*": OpenApiTypes.BINARY,
            "application/pdf": OpenApiTypes.BINARY,
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
        record.bytes_received = len(self.upload(request))
        record.parameters = parameters = uploads.parameters(request)
        document = self.opened(request)
        record.image_format, record.page_count = document.format, document.page_count
        record.width, record.height = document.width or None, document.height or None

        results = inference.infer_pages(document, parameters)
        record_results(record, results)
        recognized = parameters.get("recognize", RECOGNIZE.default)
        pages = [documents.page_body(result, document, index, recognized)
                 for index, result in enumerate(results)]
        return Response({
            "request_id": request.request_id,
            **documents.document_body(document, pages),
            "timing_ms": {"total": self.recorder.elapsed_ms(),
                          "inference": round(max(r.inference_ms for r in results), 1)},
        })
