"""The gateway's one Triton client: gRPC to the ``ensemble_ocr`` ensemble.

One :class:`TritonClient` per process (:func:`get_client`), created lazily after gunicorn
forks and shared by the worker's threads: gRPC channels are thread-safe and keep a long-lived
HTTP/2 connection, so each request costs one RPC, not a new connection. With a
``dns:///host:port`` target and several Triton pods behind a headless Service, the channel
balances calls round-robin across every address DNS returns.

Triton faults become API errors: unreachable, not ready or overloaded -> 503
``inference_unavailable``, past the deadline -> 504 ``inference_timeout``, a preprocessing
refusal -> the 4xx the model tagged it with (see ``ocr_pipeline.triton_python``), anything
else (a broken contract, a model crash) -> 502 ``inference_failed``.
"""

from __future__ import annotations

import atexit
import re
import threading
import time
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass

import logging

import numpy as np
import tritonclient.grpc as grpcclient
from django.conf import settings
from tritonclient.utils import InferenceServerException

from . import errors, metrics
from .shared_memory import SharedMemoryPool

logger = logging.getLogger(__name__)

#: gRPC channel options. Reconnect backoff is capped at 2 s (gRPC's default grows to 120 s)
#: so requests succeed again within seconds of Triton coming back.
_CHANNEL_ARGS = [
    ("grpc.max_send_message_length", 2**31 - 1),
    ("grpc.max_receive_message_length", 2**31 - 1),
    ("grpc.keepalive_time_ms", 30_000),
    ("grpc.keepalive_timeout_ms", 10_000),
    ("grpc.http2.max_pings_without_data", 0),
    ("grpc.initial_reconnect_backoff_ms", 250),
    ("grpc.min_reconnect_backoff_ms", 250),
    ("grpc.max_reconnect_backoff_ms", 2_000),
    ("grpc.lb_policy_name", "round_robin"),
]

#: Ensemble inputs for the optional request parameters: name -> (Triton dtype, numpy dtype).
PARAMETER_INPUTS = {
    "long_side": ("LONG_SIDE", "INT32", np.int32),
    "text_threshold": ("TEXT_THRESHOLD", "FP32", np.float32),
    "link_threshold": ("LINK_THRESHOLD", "FP32", np.float32),
    "low_text": ("LOW_TEXT", "FP32", np.float32),
    "refine": ("REFINE", "BOOL", np.bool_),
}

#: Tag that the Python models put in front of an INVALID_ARG message: "[image_undecodable] ..."
_ERROR_TAG = re.compile(r"\[([a-z_]+)\]\s*(.*)", re.S)
_TAGGED_ERRORS = {
    "image_undecodable": errors.ImageUndecodable,
    "image_too_large": errors.ImageTooLarge,
    "invalid_parameter": errors.InvalidParameter,
}


@dataclass(frozen=True)
class Detection:
    """The ensemble's answer for one image.

    Attributes:
        boxes: float32 ``[N, 4, 2]`` corner points in upright original-image pixels.
        scores: float32 ``[N]`` peak region score per box, 0..1.
        width, height: upright image size in pixels, as decoded by Triton.
        model_name, model_version: the ensemble that answered.
        inference_ms: wall time of the gRPC call in milliseconds.
    """

    boxes: np.ndarray
    scores: np.ndarray
    width: int
    height: int
    model_name: str
    model_version: str
    inference_ms: float


def build_inputs(image: bytes, parameters: dict) -> list[grpcclient.InferInput]:
    """The ensemble inputs for ``image`` and the optional ``parameters`` that are set.

    ``IMAGE_BYTES`` is a BYTES tensor built with ``dtype=object``: numpy's fixed-width bytes
    dtype would drop trailing NUL bytes and corrupt files that end in zeros.
    """
    tensor = grpcclient.InferInput("IMAGE_BYTES", [1], "BYTES")
    tensor.set_data_from_numpy(np.array([image], dtype=object))
    return [tensor, *parameter_inputs(parameters)]


def parameter_inputs(parameters: dict) -> list[grpcclient.InferInput]:
    """The optional ensemble inputs (``LONG_SIDE``, thresholds, ``REFINE``) that are set."""
    inputs = []
    for key, (name, triton_dtype, np_dtype) in PARAMETER_INPUTS.items():
        if parameters.get(key) is not None:
            tensor = grpcclient.InferInput(name, [1], triton_dtype)
            tensor.set_data_from_numpy(np.array([parameters[key]], dtype=np_dtype))
            inputs.append(tensor)
    return inputs


def map_triton_error(exc: InferenceServerException) -> errors.ApiError:
    """Translate a tritonclient exception into the API error a client should see."""
    status = str(exc.status() or "")
    message = exc.message() or ""
    retry_after = int(settings.TRITON_RETRY_AFTER_S)
    if status.endswith("DEADLINE_EXCEEDED"):
        return errors.InferenceTimeout(
            f"No answer from the inference server within {settings.TRITON_TIMEOUT_S:g} s.")
    if (status.endswith(("UNAVAILABLE", "NOT_FOUND", "CANCELLED", "RESOURCE_EXHAUSTED"))
            or "unknown model" in message):
        return errors.InferenceUnavailable(retry_after=retry_after)
    tagged = _ERROR_TAG.search(message) if status.endswith("INVALID_ARGUMENT") else None
    if tagged and tagged.group(1) in _TAGGED_ERRORS:
        detail = tagged.group(2).strip()
        # "[invalid_parameter] long_side must be ...": name the field like the gateway does.
        field = detail.split(" ", 1)[0] if detail.split(" ", 1)[0] in PARAMETER_INPUTS else None
        return _TAGGED_ERRORS[tagged.group(1)](detail, field=field)
    # Untagged: Triton or a model broke the contract, not the client's image.
    logger.error("Triton failed: %s %s", status, message)
    return errors.InferenceFailed()


class TritonClient:
    """gRPC client for one ensemble on one Triton target (``host:port`` or ``dns:///...``).

    Args:
        url: gRPC target.
        model: ensemble name (``ensemble_ocr``).
        timeout_s: deadline of one inference, seconds.
        shared_memory_bytes: when > 0, image bytes go through system shared-memory regions of
            this size (:mod:`ocr_api.shared_memory`); only for Triton on the same host.
    """

    _OUTPUTS = ("BOXES", "SCORES", "IMAGE_SIZE")

    def __init__(self, url: str, model: str, timeout_s: float, shared_memory_bytes: int = 0):
        self.url, self.model, self.timeout_s = url, model, timeout_s
        self.settings = (url, model, timeout_s, shared_memory_bytes)
        self._client = grpcclient.InferenceServerClient(url, channel_args=_CHANNEL_ARGS)
        self.shared_memory = (SharedMemoryPool(self._client, shared_memory_bytes)
                              if shared_memory_bytes else None)

    @contextmanager
    def _inputs(self, image: bytes, parameters: dict, use_shared_memory: bool = True):
        """The ensemble inputs; IMAGE_BYTES in a shared-memory region when possible."""
        if self.shared_memory is None or not use_shared_memory:
            yield build_inputs(image, parameters)
            return
        with self.shared_memory.image_input(image) as tensor:
            yield ([tensor, *parameter_inputs(parameters)] if tensor is not None
                   else build_inputs(image, parameters))

    def _detection(self, result, elapsed_ms: float) -> Detection:
        """The answer as a :class:`Detection`.

        Raises:
            errors.InferenceFailed: the outputs do not have the ensemble's documented shapes.
        """
        response = result.get_response()
        try:
            width, height = (int(v) for v in result.as_numpy("IMAGE_SIZE"))
            boxes = result.as_numpy("BOXES").reshape(-1, 4, 2)
            scores = result.as_numpy("SCORES").reshape(-1)
            if len(boxes) != len(scores):
                raise ValueError(f"{len(boxes)} boxes but {len(scores)} scores")
        except (TypeError, ValueError, AttributeError) as exc:
            logger.error("malformed answer from %s: %s", response.model_name, exc)
            metrics.TRITON_ERRORS.labels(errors.InferenceFailed.default_code).inc()
            raise errors.InferenceFailed() from exc
        return Detection(boxes=boxes, scores=scores, width=width, height=height,
                         model_name=response.model_name, model_version=response.model_version,
                         inference_ms=elapsed_ms)

    def _failure(self, exc: InferenceServerException) -> errors.ApiError:
        error = map_triton_error(exc)
        metrics.TRITON_ERRORS.labels(error.default_code).inc()
        return error

    def _lost_shared_memory(self, exc: InferenceServerException) -> bool:
        """Triton lost the region registrations (it restarted): re-register on next use."""
        if self.shared_memory is not None and self.shared_memory.lost_registration(exc):
            self.shared_memory.forget_registrations()
            return True
        return False

    def detect(self, image: bytes, parameters: dict,
               use_shared_memory: bool = True) -> Detection:
        """Run the ensemble on one encoded image.

        Args:
            image: the encoded file as uploaded.
            parameters: optional ``long_side``, ``text_threshold``, ``link_threshold``,
                ``low_text``, ``refine``; missing or None ones take the model's defaults.
            use_shared_memory: allow the shared-memory path when it is configured.

        Raises:
            errors.ApiError: see :func:`map_triton_error`.
        """
        outputs = [grpcclient.InferRequestedOutput(n) for n in self._OUTPUTS]
        started = time.perf_counter()
        try:
            with self._inputs(image, parameters, use_shared_memory) as inputs:
                result = self._client.infer(self.model, inputs, outputs=outputs,
                                            client_timeout=self.timeout_s)
        except InferenceServerException as exc:
            if use_shared_memory and self._lost_shared_memory(exc):
                return self.detect(image, parameters, use_shared_memory=False)
            raise self._failure(exc) from exc
        return self._detection(result, (time.perf_counter() - started) * 1000.0)

    def detect_many(self, items: list[tuple[bytes, dict]]) -> list[Detection | errors.ApiError]:
        """Run the ensemble on several images concurrently (gRPC async inference).

        Args:
            items: ``(image bytes, parameters)`` per image.

        Returns:
            per item, in order: its :class:`Detection`, or the :class:`errors.ApiError` it
            failed with (one bad image does not fail the others).
        """
        results: list = [None] * len(items)
        done = threading.Semaphore(0)
        outputs = [grpcclient.InferRequestedOutput(n) for n in self._OUTPUTS]

        def submit(index: int, image: bytes, parameters: dict) -> None:
            stack = ExitStack()
            started = time.perf_counter()

            def callback(result, error):
                # Runs on a gRPC thread: whatever happens, record an outcome and signal.
                try:
                    stack.close()  # frees the shared-memory region, if one was leased
                    results[index] = error if error is not None else self._detection(
                        result, (time.perf_counter() - started) * 1000.0)
                except Exception as exc:  # noqa: BLE001 - reported as this image's failure
                    results[index] = (exc if isinstance(exc, errors.ApiError)
                                      else errors.InferenceFailed())
                finally:
                    done.release()

            try:
                inputs = stack.enter_context(self._inputs(image, parameters))
                self._client.async_infer(self.model, inputs, callback, outputs=outputs,
                                         client_timeout=self.timeout_s)
            except InferenceServerException as exc:
                stack.close()
                results[index] = exc
                done.release()

        for index, (image, parameters) in enumerate(items):
            submit(index, image, parameters)
        # Every call has the client deadline; the margin covers callbacks still running.
        deadline = time.monotonic() + self.timeout_s + 10.0
        for _ in items:
            if not done.acquire(timeout=max(0.0, deadline - time.monotonic())):
                break
        for index, result in enumerate(results):
            if result is None:  # never answered, even past the deadline
                results[index] = errors.InferenceTimeout()
                continue
            if isinstance(result, InferenceServerException):
                if self._lost_shared_memory(result):
                    try:
                        results[index] = self.detect(*items[index], use_shared_memory=False)
                    except errors.ApiError as error:
                        results[index] = error
                else:
                    results[index] = self._failure(result)
        return results

    def is_ready(self, timeout_s: float = 2.0) -> bool:
        """True when Triton is live and the ensemble is ready (never raises)."""
        try:
            return bool(self._client.is_server_live(client_timeout=timeout_s)
                        and self._client.is_model_ready(self.model, client_timeout=timeout_s))
        except InferenceServerException:
            return False

    def close(self):
        """Unregister shared memory (if any) and close the channel."""
        if self.shared_memory is not None:
            self.shared_memory.close()
        self._client.close()


_lock = threading.Lock()
_client: TritonClient | None = None


def get_client() -> TritonClient:
    """This process's shared client for the configured Triton (re-made if settings change)."""
    global _client
    wanted = (settings.TRITON_GRPC_URL, settings.TRITON_MODEL, settings.TRITON_TIMEOUT_S,
              settings.TRITON_SHARED_MEMORY_BYTES if settings.TRITON_SHARED_MEMORY else 0)
    with _lock:
        if _client is None or _client.settings != wanted:
            if _client is not None:
                _client.close()
            _client = TritonClient(*wanted)
        return _client


@atexit.register
def close_client() -> None:
    """Close this process's channel (at exit, before gRPC's module teardown)."""
    global _client
    with _lock:
        if _client is not None:
            _client.close()
            _client = None
