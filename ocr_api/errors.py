"""The API's error vocabulary: the errors the gateway raises, each with its stable code, and
the one JSON shape every error answer has::

    {"request_id": "3f2c...", "error": {"code": "image_undecodable", "message": "..."}}

``code`` is stable and machine-readable (:data:`ocr_contract.errors.ERROR_CODES`, listed in
the README and the OpenAPI schema);
``message`` is for humans; ``field`` is added when one request parameter is at fault. No stack
trace, path or internal address ever reaches a client. Turning whatever was raised (DRF,
Django, Triton, a bug) into that answer is :mod:`ocr_api.error_handlers`' job.
"""

from __future__ import annotations

from django.urls import reverse
from rest_framework import exceptions

from ocr_contract.errors import ERROR_CODES
from ocr_inference.errors import InferenceError, InferenceRefused
from ocr_inference.errors import InferenceTimeout as InferenceTimeoutError


class ApiError(exceptions.APIException):
    """An API error with a stable code. Subclasses set ``default_code``; their HTTP status is
    the code's in :data:`ocr_contract.errors.ERROR_CODES`.

    Args:
        message: human-readable explanation (defaults to ``default_detail``).
        field: the request parameter at fault, if any.
        retry_after: seconds for the ``Retry-After`` header (429, 503).
    """

    #: code -> the ApiError subclass answering it.
    by_code: dict[str, type["ApiError"]] = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.status_code = ERROR_CODES[cls.default_code]
        ApiError.by_code[cls.default_code] = cls

    def __init__(self, message: str | None = None, *, field: str | None = None,
                 retry_after: int | None = None):
        super().__init__(message or self.default_detail, self.default_code)
        self.field = field
        self.retry_after = retry_after


class InvalidParameter(ApiError):
    default_code = "invalid_parameter"
    default_detail = "A request parameter is invalid."


class MissingImage(ApiError):
    default_code = "missing_image"
    default_detail = "Send the image as multipart field 'image' or as a raw image/* body."


class EmptyUpload(MissingImage):
    """A file or body of 0 bytes: nothing was sent (not an unknown format)."""

    default_detail = "The upload is empty (0 bytes): send the image or document itself."


class TooManyImages(ApiError):
    default_code = "too_many_images"
    default_detail = "Too many images in one batch request."


class ImageUndecodable(ApiError):
    default_code = "image_undecodable"
    default_detail = "The image data is corrupt or truncated and cannot be decoded."


class ImageTooSmall(ApiError):
    default_code = "image_too_small"
    default_detail = "The image is too small to contain readable text."


class PayloadTooLarge(ApiError):
    default_code = "payload_too_large"
    default_detail = "The request body is larger than the upload limit."


class ImageTooLarge(ApiError):
    default_code = "image_too_large"
    default_detail = "The image has more pixels than the limit."


class UnsupportedImageFormat(ApiError):
    default_code = "unsupported_media_type"
    default_detail = "The body is not an image in a supported format."


class DocumentUndecodable(ApiError):
    default_code = "document_undecodable"
    default_detail = "The PDF is broken and cannot be read."


class DocumentEncrypted(ApiError):
    default_code = "document_encrypted"
    default_detail = "The PDF is encrypted with a password; send it decrypted."


class DocumentEmpty(ApiError):
    default_code = "document_empty"
    default_detail = "The PDF has no pages."


class DocumentTooComplex(ApiError):
    default_code = "document_too_complex"
    default_detail = "A page of the PDF takes too long to render."


class TooManyPages(ApiError):
    default_code = "too_many_pages"
    default_detail = "The document has more pages than one request reads."


def jobs_link() -> str:
    """The ``Link`` header value that points a client to ``POST /api/jobs`` (a document over
    the synchronous page limit, a page too slow for a request's deadline)."""
    return f'<{reverse("jobs")}>; rel="alternate"'


class PageTooSlow(ApiError):
    default_code = "page_too_slow"
    default_detail = "The page would take longer to read here than a request may wait."


class QuotaExceeded(ApiError):
    default_code = "quota_exceeded"
    default_detail = "The key's daily quota is used up."


class KeyBusy(ApiError):
    default_code = "key_busy"
    default_detail = "This key has its share of the pages being read while other keys wait."


class Overloaded(ApiError):
    default_code = "overloaded"
    default_detail = "The inference server has more work ahead than this request's deadline."


class InferenceUnavailable(ApiError):
    default_code = "inference_unavailable"
    default_detail = "The inference server is unavailable; retry later."


class InferenceTimeout(ApiError):
    default_code = "inference_timeout"
    default_detail = "The inference server did not answer in time."


class InferenceFailed(ApiError):
    default_code = "inference_failed"
    default_detail = "The inference server failed to process the image."


def from_inference(error: InferenceError, retry_after: int) -> ApiError:
    """The API error for a failed inference, chosen by its code.

    A model's refusal keeps the model's message and field; Triton's own failures (unreachable,
    crashed) get the generic message, so no internal address or trace reaches a client.

    Args:
        error: what :mod:`ocr_inference` raised.
        retry_after: seconds for ``Retry-After`` on 503 ``inference_unavailable``.
    """
    klass = ApiError.by_code.get(error.code, InferenceFailed)
    if isinstance(error, InferenceRefused):
        return klass(str(error), field=error.field)
    if isinstance(error, InferenceTimeoutError):
        return klass(str(error))
    return klass(retry_after=retry_after if klass is InferenceUnavailable else None)


def error_detail(code: str, message: str, field: str | None = None) -> dict:
    """The ``error`` object of an error answer: ``{"code", "message", "field"?}`` (``field``
    only when one request parameter is at fault)."""
    error = {"code": code, "message": message}
    if field:
        error["field"] = field
    return error


def error_body(request, code: str, message: str, field: str | None = None) -> dict:
    """The JSON body of an error answer: ``{"request_id", "error": error_detail(...)}``, the
    request id None for a request that has none (before the middleware)."""
    return {"request_id": getattr(request, "request_id", None),
            "error": error_detail(code, message, field)}
