"""``POST /api/ocr``: find and read the text in one image."""

from __future__ import annotations

import json
from pathlib import Path

from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from ocr_contract.formats import ACCEPTED_FORMATS_TEXT
from ocr_contract.parameters import RECOGNIZE

from .. import errors, inference
from ..answer import build_answer
from ..formats.renderers import RESULT_RENDERERS, AnswerResponse, answer_responses
from ..intake import documents, uploads
from ..serializers import (SINGLE_UPLOAD_REQUEST, TOO_MANY_PAGES_NOTE, OcrParametersSerializer,
                           OcrResponseSerializer, error_responses, jobs_link_header)
from .base import OcrEndpoint, record_results, refusal_for_sync, sync_max_pages

#: A real answer (tests/data/images/korean.png with language=ko), the schema's example; the
#: README links to the same file.
EXAMPLE_ANSWER = json.loads(
    (Path(__file__).resolve().parent.parent / "examples" / "korean.json").read_text("utf-8"))


class OcrView(OcrEndpoint):
    """Find and read the text in one image or document (PDF, multi-page TIFF), answered as JSON,
    plain text, hOCR or a searchable PDF (:mod:`ocr_api.formats.renderers`). Audited and
    measured by :class:`OcrEndpoint`."""

    renderer_classes = RESULT_RENDERERS

    def opened(self, request) -> documents.Document:
        """The upload, opened once per request (:func:`ocr_api.intake.documents.open_document`).

        Raises:
            errors.ApiError: the upload's refusal, the same each time it is asked.
        """
        if not hasattr(self, "_opened"):
            max_pages = sync_max_pages()
            try:
                self._opened = documents.open_document(self.upload(request), max_pages)
            except errors.ApiError as exc:
                self._opened = refusal_for_sync(exc, max_pages)
        if isinstance(self._opened, errors.ApiError):
            raise self._opened
        return self._opened

    def upload(self, request) -> bytes:
        """The uploaded bytes, read once (:func:`ocr_api.intake.uploads.single_image`)."""
        if not hasattr(self, "_upload"):
            self._upload = uploads.single_image(request)
        return self._upload

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
            "for the rate and the quota); a longer one is refused at once (413 "
            "`too_many_pages`, with `Link: </api/jobs>; rel=\"alternate\"`): send it to "
            "`POST /api/jobs`, or here in parts. Pages go to Triton in order, "
            "TRITON_CONCURRENT_PAGES at a time, each with its own TRITON_TIMEOUT_S deadline "
            "from when it is sent, so a document the limit lets in is answered, not timed out. "
            "Operators size OCR_MAX_PAGES as (TRITON_TIMEOUT_S + 30) / (1.5 x the seconds their "
            "densest page takes alone, `timing_ms.inference`): 4 for the cpu flavour on 2 "
            "cores (~9 s a dense page), more on a GPU, fewer on a slower machine. "
            "Parameters go in the query string or as form fields. Points are in the upright "
            "(EXIF-transposed) image's pixels (a PDF page's: rendered at OCR_PDF_DPI), "
            "clockwise from the top-left. The answer comes as JSON, or with `format=text`, "
            "`format=hocr` (hOCR 1.2) or `format=pdf` (a searchable PDF of what was sent), or "
            "by the `Accept` header; errors are always JSON."),
        parameters=[OcrParametersSerializer, jobs_link_header(413)],
        request=SINGLE_UPLOAD_REQUEST,
        responses={**answer_responses(OpenApiResponse(OcrResponseSerializer, examples=[
            OpenApiExample("korean.png, language=ko", value=EXAMPLE_ANSWER)])),
            **error_responses(400, 401, 403, 413, 415, 429, 500, 502, 503, 504,
                              notes={413: TOO_MANY_PAGES_NOTE})},
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
        answer = build_answer(document, results, parameters.get("recognize", RECOGNIZE.default))
        return AnswerResponse(answer, {
            "request_id": request.request_id,
            **answer.body(),
            "timing_ms": {"total": self.recorder.elapsed_ms(),
                          "inference": round(max(r.inference_ms for r in results), 1)},
        })
