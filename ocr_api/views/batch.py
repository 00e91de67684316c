"""``POST /api/ocr/batch``: several images in one multipart request, inferred concurrently."""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response

from ocr_contract.parameters import RECOGNIZE
from ocr_inference.client import OcrResult

from .. import errors, inference, uploads
from ..image_probe import probe_image
from ..serializers import (BoxSerializer, ErrorDetailSerializer, ImageSerializer,
                           ModelSerializer, OcrParametersSerializer, error_responses)
from .base import OcrEndpoint, record_result, result_body


class BatchItemSerializer(serializers.Serializer):
    index = serializers.IntegerField(help_text="Position of the image in the request, from 0.")
    status = serializers.IntegerField(help_text="HTTP status this image alone would get.")
    model = ModelSerializer(required=False)
    image = ImageSerializer(required=False)
    text = serializers.CharField(required=False, allow_blank=True,
                                 help_text="The whole text in reading order.")
    boxes = BoxSerializer(many=True, required=False)
    inference_ms = serializers.FloatField(required=False)
    error = ErrorDetailSerializer(required=False)


class BatchResponseSerializer(serializers.Serializer):
    request_id = serializers.CharField()
    results = BatchItemSerializer(many=True)
    timing_ms = serializers.DictField(child=serializers.FloatField())


class OcrBatchView(OcrEndpoint):
    """Find and read the text in up to ``OCR_BATCH_MAX_IMAGES`` images sent as multipart ``images`` fields
    (at most ``OCR_BATCH_MAX_UPLOAD_BYTES`` together).

    Each image is validated on its own and the valid ones go to Triton concurrently; results
    come back in the order sent, each with its own status and error, so one bad image does not
    fail the others. One audit row per image; throttling and quota count images.
    """

    endpoint = "ocr_batch"
    parser_classes = [MultiPartParser]
    upload_help = ("send the images as multipart/form-data, each in a field 'images' "
                   "(one image alone can also go to /api/ocr as the raw body).")

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

    def throttle_cost(self, request) -> int:
        return len(request.FILES.getlist("images"))

    @extend_schema(
        operation_id="ocr_batch",
        summary="Find and read the text in several images",
        parameters=[OcrParametersSerializer],
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
        pending: list[tuple[int, bytes, object]] = []    # (index, bytes, ImageInfo)
        for index, upload in enumerate(files):
            record = self.recorder.new_record()
            record.bytes_received, record.parameters = upload.size, parameters
            try:
                uploads.check_image_size(upload.size)
                data = upload.read()
                info = probe_image(data, settings.OCR_MAX_PIXELS, settings.OCR_MIN_IMAGE_SIDE)
            except errors.ApiError as error:
                results.append(self._failed(index, record, error))
                continue
            record.image_format, record.width, record.height = info.format, info.width, info.height
            results.append({"index": index})
            pending.append((index, data, info))

        recognized = parameters.get("recognize", RECOGNIZE.default)
        answers = inference.infer_many([(data, parameters) for _, data, _ in pending])
        for (index, _, info), answer in zip(pending, answers):
            record = self.recorder.records[index]
            if isinstance(answer, OcrResult):
                record_result(record, answer)
                record.http_status = 200
                results[index] = {"index": index, "status": 200,
                                  **result_body(answer, info.format, recognized),
                                  "inference_ms": round(answer.inference_ms, 1)}
            else:
                results[index] = self._failed(index, record, answer)
        return Response({"request_id": request.request_id, "results": results,
                         "timing_ms": {"total": self.recorder.elapsed_ms()}})

    @staticmethod
    def _failed(index: int, record, error: errors.ApiError) -> dict:
        record.http_status, record.error_code = error.status_code, error.default_code
        return {"index": index, "status": error.status_code,
                "error": {"code": error.default_code, "message": str(error.detail)}}
