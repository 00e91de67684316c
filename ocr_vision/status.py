"""``google.rpc.Status`` for the gateway's refusals: the error shape Cloud Vision answers, from
which its clients raise their typed exceptions (``google.api_core.exceptions``).

Codes from ``google/rpc/code.proto``; the HTTP status of each as Google's REST APIs map them.
"""

from __future__ import annotations

#: google.rpc.Code values used here.
INVALID_ARGUMENT, DEADLINE_EXCEEDED, NOT_FOUND, PERMISSION_DENIED = 3, 4, 5, 7
RESOURCE_EXHAUSTED, FAILED_PRECONDITION, UNIMPLEMENTED, INTERNAL, UNAVAILABLE = 8, 9, 12, 13, 14
UNAUTHENTICATED = 16

NAMES = {INVALID_ARGUMENT: "INVALID_ARGUMENT", DEADLINE_EXCEEDED: "DEADLINE_EXCEEDED",
         NOT_FOUND: "NOT_FOUND", PERMISSION_DENIED: "PERMISSION_DENIED",
         RESOURCE_EXHAUSTED: "RESOURCE_EXHAUSTED", FAILED_PRECONDITION: "FAILED_PRECONDITION",
         UNIMPLEMENTED: "UNIMPLEMENTED", INTERNAL: "INTERNAL", UNAVAILABLE: "UNAVAILABLE",
         UNAUTHENTICATED: "UNAUTHENTICATED"}

#: The rpc code of each HTTP status the gateway answers (an upload too large or of a format
#: it cannot read is Cloud Vision's INVALID_ARGUMENT, like any bad request).
BY_HTTP_STATUS = {400: INVALID_ARGUMENT, 401: UNAUTHENTICATED, 403: PERMISSION_DENIED,
                  404: NOT_FOUND, 405: UNIMPLEMENTED, 406: INVALID_ARGUMENT,
                  409: FAILED_PRECONDITION, 413: INVALID_ARGUMENT, 415: INVALID_ARGUMENT,
                  422: INVALID_ARGUMENT, 429: RESOURCE_EXHAUSTED, 500: INTERNAL,
                  502: UNAVAILABLE, 503: UNAVAILABLE, 504: DEADLINE_EXCEEDED}


def rpc_code(http_status: int) -> int:
    """The ``google.rpc.Code`` of an HTTP status (INTERNAL for one not listed)."""
    return BY_HTTP_STATUS.get(http_status, INTERNAL)


def item_status(http_status: int, message: str) -> dict:
    """One request's ``error`` inside a 200 answer: ``{"code": <rpc code>, "message"}``."""
    return {"code": rpc_code(http_status), "message": message}


def http_error(http_status: int, message: str) -> dict:
    """The body of a refused HTTP request: ``{"error": {"code": <HTTP status>, "message",
    "status": <rpc code name>}}``, as Google's REST APIs answer."""
    return {"error": {"code": http_status, "message": message,
                      "status": NAMES[rpc_code(http_status)]}}
