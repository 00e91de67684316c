"""How every failure becomes the API's one error answer (:mod:`ocr_api.errors`' shape): DRF's
``EXCEPTION_HANDLER`` for everything a DRF view raises, and Django's error views
(``handler400``, ``handler403``, ``handler404``, ``handler500``) for what fails outside one,
with the messages that tell a client what to send instead.
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

from .authentication import missing_key_message
from .errors import ApiError, PayloadTooLarge, error_body

logger = logging.getLogger(__name__)


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


def _code_of(exc: exceptions.APIException) -> str:
    """The stable code of ``exc``: an :class:`ApiError`'s own, DRF's by :data:`_DRF_CODES`."""
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
        # A view that reads its key elsewhere (Cloud Vision's routes) says where.
        message = getattr(context.get("view"), "missing_key_message", missing_key_message)(
            request)
    elif isinstance(exc, exceptions.UnsupportedMediaType) and not isinstance(exc, ApiError):
        message = unsupported_content_type_message(request, context.get("view"))
    response.data = error_body(request, code, message, field)
    retry_after = getattr(exc, "retry_after", None)
    if retry_after is not None:
        response["Retry-After"] = str(int(retry_after))
    link = getattr(exc, "link", None)      # where to go instead (413 too_many_pages: jobs)
    if link:
        response["Link"] = link
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
