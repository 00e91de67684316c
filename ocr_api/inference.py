"""The gateway's Triton client, made from the settings, and its failures as API errors.

One :class:`~ocr_inference.client.TritonClient` per process, created lazily (after gunicorn
forks) and shared by the worker's threads; it is made again when the settings it was made
from change (tests point it at their own Triton).
"""

from __future__ import annotations

import atexit
import threading

from django.conf import settings
from ocr_inference.client import OcrResult, TritonClient
from ocr_inference.errors import InferenceError

from . import errors, metrics

_lock = threading.Lock()
_client: TritonClient | None = None
_made_from: tuple | None = None


def get_client() -> TritonClient:
    """This process's client for ``TRITON_GRPC_URL`` / ``TRITON_MODEL``."""
    global _client, _made_from
    wanted = (settings.TRITON_GRPC_URL, settings.TRITON_MODEL, settings.TRITON_TIMEOUT_S,
              settings.TRITON_SHARED_MEMORY_BYTES if settings.TRITON_SHARED_MEMORY else 0)
    with _lock:
        if _client is None or _made_from != wanted:
            if _client is not None:
                _client.close()
            _client, _made_from = TritonClient(*wanted), wanted
        return _client


def api_error(error: InferenceError) -> errors.ApiError:
    """The API error a client sees for ``error``, counted in ``ocr_triton_errors_total``."""
    metrics.TRITON_ERRORS.labels(error.code).inc()
    return errors.from_inference(error, retry_after=settings.TRITON_RETRY_AFTER_S)


def infer(image: bytes, parameters: dict) -> OcrResult:
    """OCR of one image by the configured ensemble.

    Raises:
        errors.ApiError: see :func:`ocr_api.errors.from_inference`.
    """
    try:
        return get_client().infer(image, parameters)
    except InferenceError as error:
        raise api_error(error) from error


def infer_many(items: list[tuple[bytes, dict]]) -> list[OcrResult | errors.ApiError]:
    """OCR of several images at once; per item its result or the API error it failed with."""
    return [api_error(outcome) if isinstance(outcome, InferenceError) else outcome
            for outcome in get_client().infer_many(items)]


def infer_pages(document, parameters: dict) -> list[OcrResult]:
    """OCR of every page of an opened document (:class:`ocr_api.documents.Document`), the
    pages sent to Triton at once.

    Raises:
        errors.ApiError: the first page that failed, its message prefixed with the page.
    """
    from .documents import page_input

    inputs = [page_input(document, index) for index in range(document.page_count)]
    if len(inputs) == 1:
        data, extra = inputs[0]
        return [infer(data, {**parameters, **extra})]
    outcomes = infer_many([(data, {**parameters, **extra}) for data, extra in inputs])
    for number, outcome in enumerate(outcomes, start=1):
        if isinstance(outcome, errors.ApiError):
            raise type(outcome)(f"Page {number} of {len(outcomes)}: {outcome.detail}",
                                field=outcome.field, retry_after=outcome.retry_after)
    return outcomes


@atexit.register
def close_client() -> None:
    """Close this process's channel (at exit, before gRPC's module teardown)."""
    global _client, _made_from
    with _lock:
        if _client is not None:
            _client.close()
            _client, _made_from = None, None
