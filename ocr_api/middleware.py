"""Request id: every request gets one; its responses and log lines carry it."""

import contextvars
import logging
import uuid

_current_request_id = contextvars.ContextVar("request_id", default="-")


class RequestIdMiddleware:
    """Sets ``request.request_id`` (a new UUID4 hex string) and the ``X-Request-ID`` header.

    The id is generated here, never taken from the client, so audit rows cannot be spoofed.
    While the request runs, :class:`RequestIdLogFilter` stamps it on every log record.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        request.request_id = uuid.uuid4().hex
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
