"""The one error contract of the API.

Every error answer, whatever raised it (DRF, Django, Triton, a bug), is JSON of one shape::

    {"request_id": "3f2c...", "error": {"code": "image_undecodable", "message": "..."}}

``code`` is stable and machine-readable (:data:`ocr_contract.errors.ERROR_CODES`, listed in
the README and the OpenAPI schema);
``message`` is for humans; ``field`` is added when one request parameter is at fault. No stack
trace, path or internal address ever reaches a client.
"""

from __future__ import annotations

import logging

from django.core.exceptions import DisallowedHost
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
from django.http import Http404, JsonResponse
from django.http.request import split_domain_port
from django.urls import Resolver404, resolve
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from ocr_contract.errors import ERROR_CODES
from ocr_inference.errors import InferenceError, InferenceRefused
from ocr_inference.errors import InferenceTimeout as InferenceTimeoutError

from .authentication import missing_key_message

logger = logging.getLogger(__name__)


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


class QuotaExceeded(ApiError):
    default_code = "quota_exceeded"
    default_detail = "The key's daily quota is used up."


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


#: Stable codes for DRF's own exceptions (their default codes, made explicit and stable).
_DRF_CODES = {
    exceptions.NotAuthenticated: "not_authenticated",
    exceptions.AuthenticationFailed: "authentication_failed",
    exceptions.PermissionDenied: "permission_denied",
    exceptions.NotFound: "not_found",
    exceptions.MethodNotAllowed: "method_not_allowed",
    exceptions.NotAcceptable: "not_acceptable",
    exceptions.UnsupportedMediaType: "unsupported_media_type",
    exceptions.ParseError: "malformed_request",
    exceptions.ValidationError: "invalid_parameter",
    exceptions.Throttled: "rate_limited",
}

def error_body(request, code: str, message: str, field: str | None = None) -> dict:
    """The JSON body of an error answer."""
    error = {"code": code, "message": message}
    if field:
        error["field"] = field
    return {"request_id": getattr(request, "request_id", None), "error": error}


def _code_of(exc: exceptions.APIException) -> str:
    if isinstance(exc, ApiError):
        return exc.default_code
    for klass in type(exc).__mro__:
        if klass in _DRF_CODES:
            return _DRF_CODES[klass]
    return exc.default_code if isinstance(exc.default_code, str) else "error"


def _message_and_field(exc: exceptions.APIException) -> tuple[str, str | None]:
    """Flatten DRF's nested ``detail`` into one message and the first field at fault."""
    detail = exc.detail
    if isinstance(detail, dict):
        field, messages = next(iter(detail.items()))
        first = messages[0] if isinstance(messages, list) and messages else messages
        field = None if field == "non_field_errors" else field
        return (f"{field}: {first}" if field else str(first)), field
    if isinstance(detail, list):
        return (str(detail[0]) if detail else exc.default_detail), None
    return str(detail), getattr(exc, "field", None)


def exception_handler(exc, context):
    """DRF ``EXCEPTION_HANDLER``: every exception becomes the one JSON error shape.

    Django's ``Http404``/``PermissionDenied`` and ``RequestDataTooBig`` are mapped to their
    API errors; anything unexpected is logged with its traceback and answered as a 500
    ``internal_error`` whose body says nothing about the cause.
    """
    if isinstance(exc, RequestDataTooBig):
        exc = PayloadTooLarge()
    elif isinstance(exc, SuspiciousOperation):
        # Django's parser limits (too many files or fields in a multipart body, ...).
        exc = exceptions.ParseError(f"The request body was refused: {exc}")
    elif isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()

    request = context.get("request")
    response = drf_exception_handler(exc, context)
    if response is None:
        logger.exception("unhandled error", exc_info=exc)
        return Response(error_body(request, "internal_error", "Internal server error."),
                        status=status.HTTP_500_INTERNAL_SERVER_ERROR)

    message, field = _message_and_field(exc)
    code = _code_of(exc)
    if code == "not_authenticated":
        message = missing_key_message(request)
    elif isinstance(exc, exceptions.UnsupportedMediaType) and not isinstance(exc, ApiError):
        message = unsupported_content_type_message(request, context.get("view"))
    response.data = error_body(request, code, message, field)
    retry_after = getattr(exc, "retry_after", None)
    if retry_after is not None:
        response["Retry-After"] = str(int(retry_after))
    return response


def unsupported_content_type_message(request, view) -> str:
    """What to send instead of a body whose content type no parser of ``view`` reads (DRF's
    415): the view's ``upload_help``, and the curl options for curl's default form encoding."""
    sent = request.content_type or "none"
    help_text = getattr(view, "upload_help", "")
    if not help_text:
        return f"Content type {sent!r} is not accepted here."
    message = f"Content type {sent!r} is not accepted: {help_text}"
    if sent == "application/x-www-form-urlencoded":
        message += (" With curl: -F image=@photo.jpg, or --data-binary @photo.jpg -H "
                    "'Content-Type: image/jpeg' (--data-binary alone sends a form encoding).")
    return message


def disallowed_host_message(request) -> str:
    """Which host name a request used that ``DJANGO_ALLOWED_HOSTS`` does not list, and what
    the server's operator sets to allow it (Django's 400 for an unknown ``Host``)."""
    raw = request.META.get("HTTP_HOST", "")[:200]
    domain, _ = split_domain_port(raw)
    if not domain:
        return f"The Host header {raw!r} is not a valid host name."
    return (f"This server does not answer to the host name {domain!r}: its operator must add "
            f"{domain!r} to the DJANGO_ALLOWED_HOSTS setting (comma-separated), or call it by "
            "a name listed there.")


def bad_request_view(request, exception=None):
    """Django's ``handler400``: the API's JSON error; for an unknown ``Host`` (a phone on the
    LAN calling ``make serve``) it says which host and which setting allows it."""
    message = (disallowed_host_message(request) if isinstance(exception, DisallowedHost)
               else "Bad request.")
    return JsonResponse(error_body(request, "malformed_request", message), status=400,
                        json_dumps_params={"separators": (",", ":")})


def not_found_message(request) -> str:
    """What a 404 says: the right path when the one asked for differs only by a trailing
    slash (``/api/ocr/`` for ``/api/ocr``), otherwise where the API's paths are listed."""
    path = request.path_info
    shown = path if len(path) <= 200 else path[:200] + "..."
    other = path.rstrip("/") if path.endswith("/") else path + "/"
    if other and other != path:
        try:
            resolve(other)
        except Resolver404:
            pass
        else:
            return f"There is no page at {shown}: did you mean {other}?"
    return f"There is no page at {shown}: the API's paths are listed at /api/docs."


def not_found_view(request, exception=None):
    """Django's ``handler404`` outside the admin: 404 ``not_found``, JSON, saying which path
    was meant (:func:`not_found_message`)."""
    return JsonResponse(error_body(request, "not_found", not_found_message(request)),
                        status=404, json_dumps_params={"separators": (",", ":")})


def json_error_view(status_code: int, code: str, message: str):
    """A Django error view (``handler404`` etc.) answering the API's JSON error shape."""

    def view(request, exception=None):
        return JsonResponse(error_body(request, code, message), status=status_code,
                            json_dumps_params={"separators": (",", ":")})  # like DRF's

    return view
