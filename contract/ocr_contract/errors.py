"""Error codes of the API, and how a Triton model reports one.

Every error the API answers has a stable ``code`` from :data:`ERROR_CODES`. A model that
refuses a request (an image it cannot decode, a parameter out of bounds) fails it with
Triton's INVALID_ARG and a message made by :func:`encode_model_error`; the gateway reads it
back with :func:`decode_model_error` and answers that code, never by reading the wording.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

#: Every code the API can answer with, and its HTTP status.
ERROR_CODES: dict[str, int] = {
    "invalid_parameter": 400,
    "missing_image": 400,
    "too_many_images": 400,
    "malformed_request": 400,
    "image_undecodable": 400,
    "image_too_small": 400,
    "document_undecodable": 400,
    "document_encrypted": 400,
    "document_empty": 400,
    "document_too_complex": 400,
    "not_authenticated": 401,
    "authentication_failed": 401,
    "permission_denied": 403,
    "not_found": 404,
    "method_not_allowed": 405,
    "not_acceptable": 406,
    "payload_too_large": 413,
    "image_too_large": 413,
    "too_many_pages": 413,
    # Admission: a page whose working size (an explicit long_side) would take this machine
    # longer than a request's deadline; POST /api/jobs reads it.
    "page_too_slow": 413,
    "unsupported_media_type": 415,
    "rate_limited": 429,
    "quota_exceeded": 429,
    # Admission (ocr_api.admission): the key holds its share of the pages in flight while
    # other keys wait; Triton's backlog would not let the request be answered in time.
    "key_busy": 429,
    "overloaded": 503,
    "internal_error": 500,
    "inference_failed": 502,
    "inference_unavailable": 503,
    "inference_timeout": 504,
    # Jobs (ocr_jobs): a job's result asked before it succeeded; an Idempotency-Key sent again
    # with another body.
    "job_not_finished": 409,
    "idempotency_key_reused": 422,
    # Answered by the buffering proxy in front of the gateway (ocr_proxy/config.py) itself.
    "request_timeout": 408,
    "uri_too_long": 414,
    "headers_too_large": 431,
    "unsupported_transfer_encoding": 501,
    "gateway_unavailable": 502,
    "service_unavailable": 503,
    "gateway_timeout": 504,
    "unsupported_http_version": 505,
}

#: The codes a model may fail a request with (all client errors).
IMAGE_UNDECODABLE = "image_undecodable"
IMAGE_TOO_LARGE = "image_too_large"
INVALID_PARAMETER = "invalid_parameter"
DOCUMENT_UNDECODABLE = "document_undecodable"
DOCUMENT_TOO_COMPLEX = "document_too_complex"
MODEL_ERROR_CODES = (IMAGE_UNDECODABLE, IMAGE_TOO_LARGE, INVALID_PARAMETER,
                     DOCUMENT_UNDECODABLE, DOCUMENT_TOO_COMPLEX)

#: Starts the JSON object inside a model's error message (Triton may put text around it).
_MARKER = "ocr-error:"


@dataclass(frozen=True)
class ModelError:
    """A model's refusal: a code of :data:`MODEL_ERROR_CODES`, a message for the client, and
    the parameter at fault (its API name), if one is."""

    code: str
    message: str
    field: str | None = None


def encode_model_error(code: str, message: str, field: str | None = None) -> str:
    """The Triton error message that carries a :class:`ModelError`.

    Raises:
        ValueError: ``code`` is not one of :data:`MODEL_ERROR_CODES`.
    """
    if code not in MODEL_ERROR_CODES:
        raise ValueError(f"{code!r} is not a model error code")
    return _MARKER + json.dumps({"code": code, "message": message, "field": field})


def decode_model_error(text: str) -> ModelError | None:
    """The :class:`ModelError` inside a Triton error message, or None when there is none (the
    failure was not a model's refusal: a crash, a broken contract)."""
    start = text.find(_MARKER)
    if start < 0:
        return None
    try:
        data, _ = json.JSONDecoder().raw_decode(text, start + len(_MARKER))
        error = ModelError(str(data["code"]), str(data["message"]), data.get("field"))
    except (ValueError, KeyError, TypeError):
        return None
    return error if error.code in MODEL_ERROR_CODES else None
