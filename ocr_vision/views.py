"""``POST /v1/images:annotate`` and ``POST /v1/files:annotate``: Cloud Vision's text detection
over the gateway's pipeline.

Like ``/api/ocr/batch``: each request of the batch is read on its own (its own ``error``, the
others still answered), every image or page is one audit row and counts one against the key's
rate and quota, and the pages go to Triton :func:`~ocr_api.inference.concurrent_pages` at a
time. What differs is the envelope: a JSON body with base64 content (up to 4/3 of
``OCR_BATCH_MAX_UPLOAD_BYTES``), the key in ``x-goog-api-key`` or ``?key=``, and refusals in
``google.rpc.Status``'s shape (:mod:`.status`), from which Cloud Vision's clients raise their
typed exceptions.
"""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.parsers import JSONParser
from rest_framework.response import Response

from ocr_api import errors, inference
from ocr_api.answer import page_body
from ocr_api.audit import AuditRecord
from ocr_api.intake import documents, uploads
from ocr_api.views.base import OcrEndpoint, record_results, sync_max_pages
from ocr_contract.limits import base64_bytes

from . import status
from .annotations import annotate
from .authentication import HEADER, GoogleApiKeyAuthentication
from .requests import (FILE_MAX_PAGES, VisionRequest, VisionRequestError, file_request,
                       image_request)

#: Formats files:annotate reads (Cloud Vision's: PDF, TIFF, GIF).
FILE_FORMATS = ("PDF", "TIFF", "GIF")

#: The OpenAPI responses of both routes: Cloud Vision's own shapes (its reference describes
#: them), a refusal as ``google.rpc.Status`` with the HTTP status as ``code``.
RESPONSES = {200: OpenApiResponse(OpenApiTypes.OBJECT, description=(
    "`{\"responses\": [...]}`: Cloud Vision's AnnotateImageResponse per request (files: "
    "AnnotateFileResponse), or that request's `error` (google.rpc.Status)."))}
RESPONSES.update({code: OpenApiResponse(OpenApiTypes.OBJECT, description=(
    f"`{{\"error\": {{\"code\": {code}, \"message\", \"status\": "
    f"\"{status.NAMES[status.rpc_code(code)]}\"}}}}`"))
    for code in (400, 401, 403, 406, 413, 429, 500, 503, 504)})


class _Item:
    """One request of the batch as it goes: what was asked, the opened upload, the pages to
    read (0-based), and per page its audit record and answer or error."""

    def __init__(self, asked: VisionRequest | VisionRequestError):
        self.asked = asked
        self.document: documents.Document | None = None
        self.pages: list[int] = []
        #: (HTTP status, message, the gateway's error code) once the item failed.
        self.error: tuple[int, str, str] | None = (
            (asked.http_status, asked.message, "invalid_parameter")
            if isinstance(asked, VisionRequestError) else None)
        self.records: list[AuditRecord] = []
        self.answers: list[dict] = []


class VisionEndpoint(OcrEndpoint):
    """What the two routes share: the key, the JSON body and its limit, the error shape, and
    reading the items' pages."""

    authentication_classes = [GoogleApiKeyAuthentication]
    parser_classes = [JSONParser]
    upload_help = 'send a JSON body {"requests": [...]}, as Cloud Vision takes it.'
    #: The key of each request's upload, for the messages.
    what = "image"

    @staticmethod
    def missing_key_message(request) -> str:
        """The 401 without a key: where these routes read it."""
        return (f"No API key: send it as the {HEADER} header (the client's api_key option) or "
                "the key query parameter.")

    def dispatch(self, request, *args, **kwargs):
        """The gateway's dispatch (audit rows, metrics, quota), then a refusal's body in
        Cloud Vision's shape, ``{"error": {"code", "message", "status"}}``."""
        response = super().dispatch(request, *args, **kwargs)
        data = getattr(response, "data", None)
        if response.status_code >= 400 and isinstance(data, dict) and "error" in data:
            response.data = status.http_error(response.status_code, data["error"]["message"])
        return response

    def check_request_size(self, request) -> None:
        """A declared body over the base64 of ``OCR_BATCH_MAX_UPLOAD_BYTES`` is refused from
        its header; then the batch's size: 1 to ``OCR_BATCH_MAX_IMAGES`` requests.

        Raises:
            errors.PayloadTooLarge, errors.MissingImage, errors.TooManyImages,
            errors.InvalidParameter.
        """
        uploads.check_declared_length(request, base64_bytes(settings.OCR_BATCH_MAX_UPLOAD_BYTES))
        if request.method == "POST":           # other methods: DRF's 405 (or OPTIONS' answer)
            self.items(request)

    def items(self, request) -> list[_Item]:
        """The batch's requests, read once (:meth:`read_request` each).

        Raises:
            errors.MissingImage: no ``requests``.
            errors.TooManyImages: more than ``OCR_BATCH_MAX_IMAGES``.
        """
        if not hasattr(self, "_items"):
            body = request.data if isinstance(request.data, dict) else {}
            asked = body.get("requests")
            if not isinstance(asked, list) or not asked:
                raise errors.MissingImage('Send {"requests": [...]}, one per ' + self.what + ".")
            if len(asked) > settings.OCR_BATCH_MAX_IMAGES:
                raise errors.TooManyImages(f"{len(asked)} requests; at most "
                                           f"{settings.OCR_BATCH_MAX_IMAGES} per call.")
            self._items = [self.opened(_Item(self.read_request(item))) for item in asked]
        return self._items

    def read_request(self, item) -> VisionRequest | VisionRequestError:
        raise NotImplementedError

    def opened(self, item: _Item) -> _Item:
        """Open the item's upload and choose its pages (or set its error)."""
        raise NotImplementedError

    def throttle_cost(self, request) -> int:
        """Every page read counts as an image; a request refused counts one."""
        if request.method != "POST":
            return 0
        return sum(len(item.pages) or 1 for item in self.items(request))

    def read(self, request) -> list[_Item]:
        """Send every item's pages to Triton and keep each page's answer (or the item's
        error), with one audit row per page."""
        items = self.items(request)
        inputs, owners = [], []
        for number, item in enumerate(items):
            if item.error is not None:
                record = self.recorder.new_record()
                record.http_status, _, record.error_code = item.error
                item.records.append(record)
                continue
            for page in item.pages:
                record = self.recorder.new_record()
                # The upload's bytes on its first page's row only: rows add up to the bytes.
                record.bytes_received = 0 if item.records else len(item.asked.content)
                record.image_format, record.page_count = item.document.format, 1
                record.parameters = item.asked.parameters
                item.records.append(record)
                data, extra = documents.page_input(item.document, page)
                inputs.append((data, {**item.asked.parameters, **extra}))
                owners.append((item, page, record))
        outcomes = inference.infer_many(inputs, groups=[id(item) for item, _, _ in owners],
                                        kinds=[inference.page_kind(item.document)
                                               for item, _, _ in owners])
        for (item, page, record), outcome in zip(owners, outcomes):
            if item.error is None and (outcome is None or isinstance(outcome, errors.ApiError)):
                error = outcome or errors.InferenceFailed("An earlier page failed.")
                item.error = (error.status_code, f"Page {page + 1}: {error.detail}",
                              error.default_code)
            if item.error is not None:           # this page failed, or one before it did
                record.http_status, _, record.error_code = item.error
                continue
            record_results(record, [outcome])
            record.http_status = 200
            item.answers.append(annotate(page_body(outcome, page, True), item.asked.languages))
        return items

    @staticmethod
    def error_of(item: _Item) -> dict:
        return {"error": status.item_status(*item.error[:2])}

    def open_upload(self, item: _Item, max_pages: int) -> documents.Document | None:
        """Open the item's upload; on a refusal set the item's error and return None."""
        try:
            return documents.open_document(item.asked.content, max_pages)
        except errors.ApiError as error:
            item.error = (error.status_code, str(error.detail), error.default_code)
            return None


class ImagesAnnotateView(VisionEndpoint):
    """``POST /v1/images:annotate``: ``{"requests": [{"image": {"content"}, "features",
    "imageContext"?}]}`` -> ``{"responses": [AnnotateImageResponse, ...]}``."""

    endpoint = "vision_images"

    def read_request(self, item):
        try:
            return image_request(item)
        except VisionRequestError as error:
            return error

    def opened(self, item: _Item) -> _Item:
        if item.error is None:
            document = self.open_upload(item, 1)
            if document is not None and document.format == "PDF":
                item.error = (400, "image.content is a PDF: send it to files:annotate.",
                              "invalid_parameter")
            elif item.error and item.error[2] == "too_many_pages":
                item.error = (400, "image.content has several pages: send it to "
                                   "files:annotate.", "invalid_parameter")
            elif document is not None:
                item.document, item.pages = document, [0]
        return item

    @extend_schema(
        operation_id="vision_images_annotate", summary="Cloud Vision: text in images",
        description=("Google Cloud Vision's `images:annotate` for `TEXT_DETECTION` and "
                     "`DOCUMENT_TEXT_DETECTION` (README, \"Moving from Cloud Vision\"): "
                     "`textAnnotations` and `fullTextAnnotation` (pages, blocks, paragraphs, "
                     "words, symbols) per request, or its `error`. Key in `x-goog-api-key` or "
                     "`?key=`; refusals as `{\"error\": {\"code\", \"message\", \"status\"}}`."),
        request={"application/json": OpenApiTypes.OBJECT}, responses=RESPONSES)
    def post(self, request):
        responses = [self.error_of(item) if item.error else (item.answers[0] if item.answers
                                                              else {})
                     for item in self.read(request)]
        return Response({"responses": responses})


class FilesAnnotateView(VisionEndpoint):
    """``POST /v1/files:annotate``: ``{"requests": [{"inputConfig": {"content", "mimeType"},
    "features", "pages"?}]}`` -> ``{"responses": [{"responses": [AnnotateImageResponse with
    "context": {"pageNumber"}], "totalPages"}]}``; at most :data:`FILE_MAX_PAGES` (or
    ``OCR_MAX_PAGES`` if lower) pages per file."""

    endpoint = "vision_files"
    what = "file"

    def max_pages(self) -> int:
        return min(FILE_MAX_PAGES, sync_max_pages())

    def read_request(self, item):
        try:
            return file_request(item, self.max_pages())
        except VisionRequestError as error:
            return error

    def opened(self, item: _Item) -> _Item:
        if item.error is not None:
            return item
        document = self.open_upload(item, settings.OCR_JOB_MAX_PAGES)
        if document is None:
            return item
        if document.format not in FILE_FORMATS:
            item.error = (400, f"inputConfig.content is {document.format}; files:annotate reads "
                               f"{', '.join(FILE_FORMATS)} (images go to images:annotate).",
                          "invalid_parameter")
            return item
        count = document.page_count
        asked = item.asked.pages or tuple(range(1, min(count, self.max_pages()) + 1))
        pages = [count + p if p < 0 else p - 1 for p in asked]
        if not all(0 <= p < count for p in pages):
            item.error = (400, f"pages: the file has pages 1-{count}.", "invalid_parameter")
            return item
        item.document, item.pages = document, pages
        return item

    @extend_schema(
        operation_id="vision_files_annotate", summary="Cloud Vision: text in PDF/TIFF pages",
        description=("Google Cloud Vision's `files:annotate` (inline content) for "
                     "`TEXT_DETECTION` and `DOCUMENT_TEXT_DETECTION`: per file, one response "
                     f"per page (`context.pageNumber`), at most {FILE_MAX_PAGES} pages or "
                     "OCR_MAX_PAGES if lower (longer documents: `POST /api/jobs`)."),
        request={"application/json": OpenApiTypes.OBJECT}, responses=RESPONSES)
    def post(self, request):
        responses = []
        for item in self.read(request):
            if item.error:
                responses.append(self.error_of(item))
                continue
            pages = [{**answer, "context": {"pageNumber": page + 1}}
                     for page, answer in zip(item.pages, item.answers)]
            responses.append({"responses": pages, "totalPages": item.document.page_count})
        return Response({"responses": responses})
