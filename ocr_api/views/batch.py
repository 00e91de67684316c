"""``POST /api/ocr/batch``: several images in one multipart request, their pages sent to Triton
``TRITON_CONCURRENT_PAGES`` at a time."""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response

from ocr_contract.parameters import RECOGNIZE

from .. import errors, inference
from ..answer import build_answer
from ..intake import documents, uploads
from ..serializers import (ErrorDetailSerializer, ModelSerializer, OcrAnswerSerializer,
                           OcrParametersSerializer, error_responses, jobs_link_header)
from .base import (OcrEndpoint, record_results, refusal_for_sync,
                   sync_max_pages)


class BatchItemSerializer(OcrAnswerSerializer):
    """One upload's outcome: its answer (as ``POST /api/ocr`` gives it) or its error."""

    index = serializers.IntegerField(help_text="Position of the upload in the request, from 0.")
    status = serializers.IntegerField(help_text="HTTP status this upload alone would get.")
    model = ModelSerializer(required=False, help_text="The model that read it (absent for an "
                                                      "upload refused before inference).")
    inference_ms = serializers.FloatField(required=False)
    error = ErrorDetailSerializer(required=False)


class BatchResponseSerializer(serializers.Serializer):
    request_id = serializers.CharField()
    results = BatchItemSerializer(many=True)
    timing_ms = serializers.DictField(child=serializers.FloatField())


class OcrBatchView(OcrEndpoint):
    """Find and read the text in up to ``OCR_BATCH_MAX_IMAGES`` images sent as multipart ``images`` fields
    (at most ``OCR_BATCH_MAX_UPLOAD_BYTES`` together).

    Each image is validated on its own and the valid ones' pages go to Triton in order,
    ``TRITON_CONCURRENT_PAGES`` at a time, each with its deadline from when it is sent
    (:func:`ocr_api.inference.infer_documents`); results come back in the order sent, each with
    its own status and error, so one bad image does not fail the others (a document over
    ``OCR_MAX_PAGES`` is an item 413 ``too_many_pages`` naming ``POST /api/jobs``, and the
    response has ``POST /api/ocr``'s ``Link`` header). One audit row per image; throttling and
    quota count images.
    """

    endpoint = "ocr_batch"
    parser_classes = [MultiPartParser]
    upload_help = ("send the images as multipart/form-data, each in a field 'images' "
                   "(one image or PDF alone can also go to /api/ocr as the raw body).")

    def check_request_size(self, request) -> None:
        """Refuse an oversized body from its header, then a batch with no or too many images,
        so that throttling only ever charges a batch that will be processed.

        Raises:
            errors.PayloadTooLarge: over ``OCR_BATCH_MAX_UPLOAD_BYTES`` (declared or read).
            errors.MissingImage: no ``images`` field.
            errors.TooManyImages: more than ``OCR_BATCH_MAX_IMAGES``.
        """
        uploads.check_declared_length(request, settings.OCR_BATCH_MAX_UPLOAD_BYTES)
        files = request.FILES.getlist("images")
        if not files:
            raise errors.MissingImage("Send the images as one or more multipart fields 'images'.")
        if len(files) > settings.OCR_BATCH_MAX_IMAGES:
            raise errors.TooManyImages(f"{len(files)} images sent; at most "
                                       f"{settings.OCR_BATCH_MAX_IMAGES} per request.")
        total = sum(upload.size for upload in files)
        if total > settings.OCR_BATCH_MAX_UPLOAD_BYTES:
            raise errors.PayloadTooLarge(f"The images are {total} bytes together; the limit is "
                                         f"{settings.OCR_BATCH_MAX_UPLOAD_BYTES}.")

    def opened(self, request) -> list:
        """Each upload opened once (:func:`ocr_api.intake.documents.open_document`): its
        document, or the API error that refuses it."""
        if not hasattr(self, "_opened"):
            self._opened = []
            max_pages = sync_max_pages()
            for upload in request.FILES.getlist("images"):
                try:
                    if not upload.size:
                        raise errors.EmptyUpload()
                    uploads.check_image_size(upload.size)
                    self._opened.append(documents.open_document(upload.read(), max_pages))
                except errors.ApiError as error:
                    self._opened.append(refusal_for_sync(error, max_pages))
        return self._opened

    def throttle_cost(self, request) -> int:
        """Every page counts as an image; an upload that is refused counts one."""
        return sum(item.page_count if isinstance(item, documents.Document) else 1
                   for item in self.opened(request))

    @extend_schema(
        operation_id="ocr_batch",
        summary="Find and read the text in several images",
        description=(
            "Each upload is answered as `POST /api/ocr` would answer it alone, in `results` "
            "(its own `status` and `error`). A document over OCR_MAX_PAGES pages is an item "
            "413 `too_many_pages` whose message names `POST /api/jobs`; the response then has "
            "`Link: </api/jobs>; rel=\"alternate\"`."),
        parameters=[OcrParametersSerializer, jobs_link_header(200, 413)],
        request={"multipart/form-data": {"type": "object", "properties": {
            "images": {"type": "array", "items": {"type": "string", "format": "binary"}}},
            "required": ["images"]}},
        responses={200: BatchResponseSerializer,
                   **error_responses(400, 401, 403, 413, 415, 429, 500)},
    )
    def post(self, request):
        files = request.FILES.getlist("images")  # counted and sized by check_request_size
        parameters = uploads.parameters(request, file_fields=("images",))

        results: list[dict] = []
        pending: list[tuple[int, documents.Document]] = []
        for index, (upload, opened) in enumerate(zip(files, self.opened(request))):
            record = self.recorder.new_record()
            record.bytes_received, record.parameters = upload.size, parameters
            if isinstance(opened, errors.ApiError):
                results.append(self._failed(index, record, opened))
                continue
            record.image_format, record.page_count = opened.format, opened.page_count
            record.width, record.height = opened.width or None, opened.height or None
            results.append({"index": index})
            pending.append((index, opened))

        recognized = parameters.get("recognize", RECOGNIZE.default)
        outcomes = inference.infer_documents([document for _, document in pending], parameters)
        for (index, document), outcome in zip(pending, outcomes):
            record = self.recorder.records[index]
            if isinstance(outcome, errors.ApiError):
                results[index] = self._failed(index, record, outcome)
                continue
            record_results(record, outcome)
            record.http_status = 200
            answer = build_answer(document, outcome, recognized)
            results[index] = {"index": index, "status": 200, **answer.body(),
                              "inference_ms": round(max(o.inference_ms for o in outcome), 1)}
        response = Response({"request_id": request.request_id, "results": results,
                             "timing_ms": {"total": self.recorder.elapsed_ms()}})
        if any(isinstance(item, errors.TooManyPages) for item in self.opened(request)):
            response["Link"] = errors.jobs_link()      # as POST /api/ocr's 413 has it
        return response

    @staticmethod
    def _failed(index: int, record, error: errors.ApiError) -> dict:
        """One upload's refusal: its audit record takes the error, and its item says it as
        ``POST /api/ocr`` would (``{"index", "status", "error": {"code", "message",
        "field"?}}``)."""
        record.http_status, record.error_code = error.status_code, error.default_code
        return {"index": index, "status": error.status_code,
                "error": errors.error_detail(error.default_code, str(error.detail),
                                             error.field)}
