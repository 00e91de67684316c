"""Request id: every request gets one; its responses and log lines carry it."""

import contextvars
import logging
import re
import uuid

_current_request_id = contextvars.ContextVar("request_id", default="-")
#: The form of a request id: 32 lowercase hex digits (nginx's ``$request_id``, a UUID4's hex).
REQUEST_ID = re.compile(r"[0-9a-f]{32}")


def request_id_of(request) -> str:
    """The id of ``request``: the one the buffering proxy gave it (``X-Request-ID``, believed
    only from ``OCR_TRUSTED_PROXIES`` and only in the form :data:`REQUEST_ID`), so that the
    proxy's own error answers and logs and the gateway's share one id; otherwise a new UUID4.
    """
    # Imported here: logging loads this module before Django's apps (and audit's models).
    from .audit import is_trusted_proxy

    sent = request.META.get("HTTP_X_REQUEST_ID", "")
    if REQUEST_ID.fullmatch(sent) and is_trusted_proxy(request.META.get("REMOTE_ADDR")):
        return sent
    return uuid.uuid4().hex


class RequestIdMiddleware:
    """Sets ``request.request_id`` (:func:`request_id_of`) and the ``X-Request-ID`` header.

    A client never chooses its id (only a trusted proxy does), so audit rows cannot be
    spoofed. While the request runs, :class:`RequestIdLogFilter` stamps it on every log record.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        request.request_id = request_id_of(request)
        token = _current_request_id.set(request.request_id)
        try:
            response = self.get_response(request)
        finally:
            _current_request_id.reset(token)
        response["X-Request-ID"] = request.request_id
        return response


class RequestIdLogFilter(logging.Filter):
    """Adds ``record.request_id`` ("-" outside a request) for the log format to print.

    Django logs a request's 4xx/5xx line (``django.request``) after the middleware returned;
    that record carries the request itself, whose id is used then.
    """

    def filter(self, record):
        request_id = _current_request_id.get()
        if request_id == "-":
            request_id = getattr(getattr(record, "request", None), "request_id", "-")
        record.request_id = request_id
        return True
