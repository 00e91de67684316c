"""One gRPC client for the ensemble: :class:`TritonClient`.

gRPC channels are thread-safe and keep a long-lived HTTP/2 connection, so one client serves
every thread of a process and each inference costs one RPC, not a new connection. With a
``dns:///host:port`` target and several Triton pods behind a headless Service, the channel
balances calls round-robin across every address DNS returns.
"""

from __future__ import annotations

import logging
import threading
import time
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass

import numpy as np
import tritonclient.grpc as grpcclient
from ocr_contract.tensors import BOXES, ENSEMBLE, IMAGE_SIZE, SCORES, TEXT, TEXT_SCORES, TEXTS
from tritonclient.utils import InferenceServerException

from . import errors
from .requests import build_inputs, parameter_inputs, requested_outputs
from .shared_memory import SharedMemoryPool

logger = logging.getLogger(__name__)

#: gRPC channel options. Reconnect backoff is capped at 2 s (gRPC's default grows to 120 s)
#: so requests succeed again within seconds of Triton coming back.
CHANNEL_ARGS = [
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


@dataclass(frozen=True)
class OcrResult:
    """The ensemble's answer for one image.

    Attributes:
        boxes: float32 ``[N, 4, 2]`` corner points in upright original-image pixels.
        scores: float32 ``[N]`` peak region score per box, 0..1.
        width, height: upright image size in pixels, as decoded by Triton.
        model_name, model_version: the ensemble that answered.
        inference_ms: wall time of the gRPC call, milliseconds.
        texts: the text read in each box (empty when recognition was not asked for).
        text_scores: float32 ``[N]`` confidence of each text, 0..1 (empty likewise).
        text: the whole text in reading order, lines joined by newlines.
    """

    boxes: np.ndarray
    scores: np.ndarray
    width: int
    height: int
    model_name: str
    model_version: str
    inference_ms: float
    texts: list[str]
    text_scores: np.ndarray
    text: str


class TritonClient:
    """gRPC client for one ensemble on one Triton target (``host:port`` or ``dns:///...``).

    Args:
        url: gRPC target.
        model: the ensemble's name.
        timeout_s: deadline of one inference, seconds.
        shared_memory_bytes: when > 0, image bytes go through system shared-memory regions of
            this size (:mod:`ocr_inference.shared_memory`); only for Triton on the same host.
    """

    def __init__(self, url: str, model: str = ENSEMBLE, timeout_s: float = 30.0,
                 shared_memory_bytes: int = 0):
        self.url, self.model, self.timeout_s = url, model, timeout_s
        self._client = grpcclient.InferenceServerClient(url, channel_args=CHANNEL_ARGS)
        self.shared_memory = (SharedMemoryPool(self._client, shared_memory_bytes)
                              if shared_memory_bytes else None)

    # -- one image -------------------------------------------------------------------------

    def infer(self, image: bytes, parameters: dict) -> OcrResult:
        """Run the ensemble on one encoded image.

        Args:
            image: the encoded file as uploaded.
            parameters: ``{API name: value}`` of :mod:`ocr_contract.parameters`; absent or
                None ones take the model's defaults.

        Raises:
            errors.InferenceError: see :func:`ocr_inference.errors.from_triton`.
        """
        started = time.perf_counter()
        try:
            with self._inputs(image, parameters) as inputs:
                result = self._client.infer(self.model, inputs, outputs=requested_outputs(),
                                            client_timeout=self.timeout_s)
        except InferenceServerException as exc:
            return self._after_failure(exc, image, parameters)
        return self._result(result, started)

    # -- several images --------------------------------------------------------------------

    def infer_many(self, items: list[tuple[bytes, dict]]) -> list[OcrResult | errors.InferenceError]:
        """Run the ensemble on several images concurrently (gRPC async inference).

        Args:
            items: ``(image bytes, parameters)`` per image.

        Returns:
            per item, in order: its :class:`OcrResult`, or the
            :class:`~ocr_inference.errors.InferenceError` it failed with (one bad image does
            not fail the others).
        """
        outcomes: list = [None] * len(items)
        done = threading.Semaphore(0)

        def submit(index: int, image: bytes, parameters: dict) -> None:
            stack = ExitStack()
            started = time.perf_counter()

            def callback(result, error):
                # Runs on a gRPC thread: whatever happens, record an outcome and signal.
                try:
                    stack.close()  # frees the shared-memory region, if one was leased
                    outcomes[index] = error if error is not None else self._result(result,
                                                                                   started)
                except errors.InferenceError as exc:
                    outcomes[index] = exc
                finally:
                    done.release()

            try:
                inputs = stack.enter_context(self._inputs(image, parameters))
                self._client.async_infer(self.model, inputs, callback,
                                         outputs=requested_outputs(),
                                         client_timeout=self.timeout_s)
            except InferenceServerException as exc:
                stack.close()
                outcomes[index] = exc
                done.release()

        for index, (image, parameters) in enumerate(items):
            submit(index, image, parameters)
        # Every call has the client deadline; the margin covers callbacks still running.
        deadline = time.monotonic() + self.timeout_s + 10.0
        for _ in items:
            if not done.acquire(timeout=max(0.0, deadline - time.monotonic())):
                break
        for index, outcome in enumerate(outcomes):
            if outcome is None:  # never answered, even past the deadline
                outcomes[index] = errors.InferenceTimeout(self.timeout_s)
            elif isinstance(outcome, InferenceServerException):
                try:
                    outcomes[index] = self._after_failure(outcome, *items[index])
                except errors.InferenceError as exc:
                    outcomes[index] = exc
        return outcomes

    # -- shared pieces ---------------------------------------------------------------------

    @contextmanager
    def _inputs(self, image: bytes, parameters: dict, use_shared_memory: bool = True):
        """The ensemble inputs; IMAGE_BYTES in a shared-memory region when one is free."""
        if self.shared_memory is None or not use_shared_memory:
            yield build_inputs(image, parameters)
            return
        with self.shared_memory.image_input(image) as tensor:
            yield ([tensor, *parameter_inputs(parameters)] if tensor is not None
                   else build_inputs(image, parameters))

    def _after_failure(self, exc: InferenceServerException, image: bytes,
                       parameters: dict) -> OcrResult:
        """What to do after a failed call: once Triton has lost our shared-memory regions (it
        restarted), register them again on next use and send this image in the message;
        otherwise raise the failure.

        Raises:
            errors.InferenceError: the failure, mapped by :func:`errors.from_triton`.
        """
        if self.shared_memory is not None and self.shared_memory.lost_registration(exc):
            self.shared_memory.forget_registrations()
            started = time.perf_counter()
            try:
                result = self._client.infer(self.model, build_inputs(image, parameters),
                                            outputs=requested_outputs(),
                                            client_timeout=self.timeout_s)
            except InferenceServerException as retry_exc:
                exc = retry_exc
            else:
                return self._result(result, started)
        error = errors.from_triton(exc, self.timeout_s)
        if isinstance(error, errors.InferenceFailed):
            logger.error("Triton failed: %s", error)
        raise error

    def _result(self, result: grpcclient.InferResult, started: float) -> OcrResult:
        """The answer as an :class:`OcrResult`.

        Raises:
            errors.InferenceFailed: the outputs do not have the contract's shapes.
        """
        elapsed_ms = (time.perf_counter() - started) * 1000.0
        response = result.get_response()
        try:
            width, height = (int(v) for v in result.as_numpy(IMAGE_SIZE.name))
            boxes = result.as_numpy(BOXES.name).reshape(-1, 4, 2)
            scores = result.as_numpy(SCORES.name).reshape(-1)
            texts = [bytes(t).decode("utf-8") for t in result.as_numpy(TEXTS.name).reshape(-1)]
            text_scores = result.as_numpy(TEXT_SCORES.name).reshape(-1)
            text = bytes(result.as_numpy(TEXT.name).reshape(-1)[0]).decode("utf-8")
            if len(boxes) != len(scores) or len(texts) not in (0, len(boxes)) \
                    or len(text_scores) != len(texts):
                raise ValueError(f"{len(boxes)} boxes, {len(scores)} scores, {len(texts)} "
                                 f"texts, {len(text_scores)} text scores")
        except (TypeError, ValueError, AttributeError, IndexError) as exc:
            logger.error("malformed answer from %s: %s", response.model_name, exc)
            raise errors.InferenceFailed(f"malformed answer: {exc}") from exc
        return OcrResult(boxes=boxes, scores=scores, width=width, height=height,
                         model_name=response.model_name, model_version=response.model_version,
                         inference_ms=elapsed_ms, texts=texts, text_scores=text_scores,
                         text=text)

    # -- health ----------------------------------------------------------------------------

    def is_ready(self, timeout_s: float = 2.0) -> bool:
        """True when Triton is live and the ensemble is ready (never raises)."""
        try:
            return bool(self._client.is_server_live(client_timeout=timeout_s)
                        and self._client.is_model_ready(self.model, client_timeout=timeout_s))
        except InferenceServerException:
            return False

    def close(self) -> None:
        """Unregister shared memory (if any) and close the channel."""
        if self.shared_memory is not None:
            self.shared_memory.close()
        self._client.close()
