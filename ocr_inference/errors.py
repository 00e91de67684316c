"""Inference failures, each with the API error code of :data:`ocr_contract.errors.ERROR_CODES`
a client should see. The gateway turns them into HTTP answers by code.

- unreachable, not ready, overloaded, a model's Python stub dead
  (:func:`ocr_inference.revival.dead_stub_model`) -> :class:`InferenceUnavailable` (503);
- past the deadline -> :class:`InferenceTimeout` (504);
- a model refused the request (undecodable image, parameter out of bounds) ->
  :class:`InferenceRefused` with the model's code (4xx);
- anything else (a crash, an answer that breaks the contract) -> :class:`InferenceFailed` (502).
"""

from __future__ import annotations

from ocr_contract.errors import ModelError, decode_model_error
from ocr_contract.tensors import DEADLINE_PARAMETER
from tritonclient.utils import InferenceServerException

from .revival import dead_stub_model


class InferenceError(Exception):
    """Base class. ``code`` is an API error code; ``field`` the parameter at fault, if any."""

    code = "inference_failed"
    field: str | None = None


class InferenceUnavailable(InferenceError):
    """Triton cannot be reached, the ensemble is not ready, or it refuses work for now."""

    code = "inference_unavailable"


class InferenceTimeout(InferenceError):
    """No answer within the deadline (``timeout_s`` seconds)."""

    code = "inference_timeout"

    def __init__(self, timeout_s: float):
        super().__init__(f"No answer from the inference server within {timeout_s:g} s.")
        self.timeout_s = timeout_s


class InferenceFailed(InferenceError):
    """Triton or a model failed in a way that is not the client's doing."""

    code = "inference_failed"


class InferenceRefused(InferenceError):
    """A model refused the request; ``code``, message and ``field`` are the model's."""

    def __init__(self, error: ModelError):
        super().__init__(error.message)
        self.code, self.field = error.code, error.field


#: gRPC statuses that mean "try again later", not "this request is wrong".
_UNAVAILABLE_STATUSES = ("UNAVAILABLE", "NOT_FOUND", "CANCELLED", "RESOURCE_EXHAUSTED")


def from_triton(exc: InferenceServerException, timeout_s: float) -> InferenceError:
    """The :class:`InferenceError` for a tritonclient exception.

    Args:
        exc: what tritonclient raised (or passed to an async callback).
        timeout_s: the call's deadline, for the timeout's message.
    """
    status = str(exc.status() or "")
    message = exc.message() or ""
    if status.endswith("DEADLINE_EXCEEDED") or (status.endswith("CANCELLED")
                                                 and DEADLINE_PARAMETER in message):
        return InferenceTimeout(timeout_s)   # a step stopped it past the deadline we sent
    if status.endswith(_UNAVAILABLE_STATUSES) or "unknown model" in message \
            or dead_stub_model(message):
        return InferenceUnavailable(message)
    refusal = decode_model_error(message) if status.endswith("INVALID_ARGUMENT") else None
    if refusal is not None:
        return InferenceRefused(refusal)
    return InferenceFailed(f"{status} {message}".strip())
