"""One gRPC client for the ensemble: :class:`TritonClient`.

gRPC channels are thread-safe and keep a long-lived HTTP/2 connection, so one client serves
every thread of a process and each inference costs one RPC, not a new connection. With several
replicas in the target (``ipv4:10.0.0.1:8001,10.0.0.2:8001``, or ``dns:///triton:8001`` and
several Triton pods behind a headless Service) the channel balances calls round-robin across
them (:mod:`ocr_inference.targets`). Inference is idempotent, so a call that finds its replica
unreachable or not ready is sent again (:data:`RETRY_PAUSES_S`), to the next replica, within the
same deadline; one that found a model's Python stub dead, once that model is loaded again
(:mod:`ocr_inference.revival`).
"""

from __future__ import annotations

import logging
import threading
import time
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import Callable, ContextManager

import numpy as np
import tritonclient.grpc as grpcclient
from ocr_contract.parameters import DETECTOR
from ocr_contract.tensors import (ANGLE, BOX_OF_WORD, BOXES, CHARACTER_BOXES, CHARACTER_SCORES,
                                  CHARACTER_TEXTS, COMPUTED_FOR, CRAFT_DETECTOR,
                                  DEADLINE_PARAMETER, DETECTOR_ENSEMBLES, ENSEMBLE, IMAGE_SIZE,
                                  LINE_BOXES, LINE_OF_BOX, PARAGRAPH_OF_LINE, READING_ORDER,
                                  SCORES, TEXT, TEXT_SCORES, TEXTS, WORD_BOXES,
                                  WORD_OF_CHARACTER, WORD_SCORES, WORD_TEXTS)
from tritonclient.utils import InferenceServerException

from . import errors, targets
from .requests import build_inputs, parameter_inputs, requested_outputs, wants_characters
from .revival import StubRevival, dead_stub_model
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

#: Least time left before the deadline that is worth a retry, seconds.
MIN_RETRY_S = 0.05

#: Pauses before each further attempt of a call another replica may answer, seconds. A call
#: sent again at once can still be picked onto the replica whose connection just broke (the
#: round-robin picker learns of it on another gRPC thread), so the first pause gives it time
#: to; the second covers calls that were in flight on a replica when a second one failed.
RETRY_PAUSES_S = (0.1, 0.5)


def _retryable(exc: InferenceServerException) -> bool:
    """The call may succeed on another replica: it was unreachable, not ready or overloaded
    (never a timeout, a refusal or a model failure)."""
    return isinstance(errors.from_triton(exc, 0.0), errors.InferenceUnavailable)


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
        reading_order: int32 ``[N]`` box indices in reading order.
        line_of_box: int32 ``[N]`` each box's line (0-based, reading order).
        line_boxes: float32 ``[L, 4, 2]`` each line's rectangle, original-image pixels.
        paragraph_of_line: int32 ``[L]`` each line's paragraph (0-based).
        angle: the page's angle, clockwise degrees (0, 90, 180, 270).
        words: :class:`Words`, every box's words (empty when the text was not read).
        characters: :class:`Words` of the words' characters (``owner`` their word), or None
            when not asked for (``detail=characters``).
        cached: the answer came from Triton's response cache, computed for an earlier request
            (its ``COMPUTED_FOR`` is not this call's deadline): its time says nothing of what
            reading the image costs.
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
    reading_order: np.ndarray
    line_of_box: np.ndarray
    line_boxes: np.ndarray
    paragraph_of_line: np.ndarray
    angle: int = 0
    words: "Words | None" = None
    characters: "Words | None" = None
    cached: bool = False


@dataclass
class Call:
    """One call of :meth:`TritonClient.infer_many`, as the context around it sees it.

    Attributes:
        timeout_s: the seconds the call may take (None: the client's :attr:`timeout_s`).
        cached: set once answered: the answer came from Triton's response cache
            (:attr:`OcrResult.cached`).
    """

    timeout_s: float | None = None
    cached: bool = False


@dataclass(frozen=True)
class Words:
    """Words (or characters) as the ensemble answers them.

    Attributes:
        boxes: float32 ``[M, 4, 2]`` corners in the page's pixels, clockwise from the text's
            own top-left.
        texts: their texts.
        scores: float32 ``[M]`` confidences, 0..1.
        owner: int32 ``[M]`` the box (for words) or word (for characters) each belongs to.
    """

    boxes: np.ndarray
    texts: list[str]
    scores: np.ndarray
    owner: np.ndarray

    @staticmethod
    def read(result: grpcclient.InferResult, boxes: str, texts: str, scores: str,
             owner: str, owners: int) -> "Words":
        """The four outputs named from ``result``.

        Raises:
            ValueError: their lengths differ, or an owner index is not below ``owners``.
        """
        found = Words(result.as_numpy(boxes).reshape(-1, 4, 2),
                      [bytes(t).decode("utf-8") for t in result.as_numpy(texts).reshape(-1)],
                      result.as_numpy(scores).reshape(-1), result.as_numpy(owner).reshape(-1))
        if not len(found.boxes) == len(found.texts) == len(found.scores) == len(found.owner) \
                or (len(found.owner) and not 0 <= found.owner.min() <= found.owner.max()
                    < owners):
            raise ValueError(f"{len(found.boxes)} {boxes}, {len(found.texts)} {texts}, "
                             f"{len(found.scores)} {scores}, {len(found.owner)} {owner}")
        return found


class TritonClient:
    """gRPC client for one ensemble on a Triton target of one or several replicas.

    Args:
        url: gRPC target: ``host:port``, ``ipv4:a:port,b:port`` or ``dns:///name:port``
            (:mod:`ocr_inference.targets`); calls go round-robin over its replicas.
        model: the ensemble's name.
        timeout_s: deadline of one inference, seconds, retry included.
        shared_memory_bytes: when > 0, image bytes go through system shared-memory regions of
            this size (:mod:`ocr_inference.shared_memory`); only for one Triton on the same
            host, so it is ignored when ``url`` names several replicas.
    """

    def __init__(self, url: str, model: str = ENSEMBLE, timeout_s: float = 30.0,
                 shared_memory_bytes: int = 0):
        self.url, self.model, self.timeout_s = url, model, timeout_s
        self._client = grpcclient.InferenceServerClient(url, channel_args=CHANNEL_ARGS)
        if shared_memory_bytes and len(targets.replicas(url)) > 1:
            # A region registered through the balanced channel exists on one replica only.
            logger.warning("shared memory is off: %s names several Triton replicas", url)
            shared_memory_bytes = 0
        self.shared_memory = (SharedMemoryPool(self._client, shared_memory_bytes)
                              if shared_memory_bytes else None)
        self._probes: dict[str, grpcclient.InferenceServerClient] = {}
        self._probes_lock = threading.Lock()
        self._revival = StubRevival(url)

    # -- one image -------------------------------------------------------------------------

    def model_for(self, parameters: dict) -> str:
        """The ensemble a request goes to: :attr:`model` (the CRAFT pipeline's) unless its
        ``detector`` names another (:data:`ocr_contract.tensors.DETECTOR_ENSEMBLES`).

        Raises:
            KeyError: an unknown detector (``auto`` is the gateway's to resolve:
                :func:`ocr_api.detectors.resolved`).
        """
        detector = parameters.get(DETECTOR.name) or CRAFT_DETECTOR
        return self.model if detector == CRAFT_DETECTOR else DETECTOR_ENSEMBLES[detector]

    def infer(self, image: bytes, parameters: dict, timeout_s: float | None = None
              ) -> OcrResult:
        """Run the ensemble on one encoded image.

        Args:
            image: the encoded file as uploaded.
            parameters: ``{API name: value}`` of :mod:`ocr_contract.parameters`; absent or
                None ones take the model's defaults.
            timeout_s: this call's deadline, seconds, retries included (default
                :attr:`timeout_s`; the gateway's admission gives what is left of a page's).

        A call that finds its replica unreachable or not ready is sent again (the channel
        picks the next replica) after each pause of :data:`RETRY_PAUSES_S` that the time left
        before the deadline allows.

        Raises:
            errors.InferenceError: see :func:`ocr_inference.errors.from_triton`.
        """
        started = time.perf_counter()
        timeout_s = self.timeout_s if timeout_s is None else timeout_s
        # The deadline as data too: a step already running when the gRPC deadline passes is
        # never told (Triton 2.51), but stops at its next piece of work past this.
        deadline = {DEADLINE_PARAMETER: int((time.time() + timeout_s) * 1000)}
        try:
            with self._inputs(image, parameters) as inputs:
                result = self._client.infer(self.model_for(parameters), inputs,
                                            outputs=requested_outputs(parameters),
                                            client_timeout=timeout_s, parameters=deadline)
        except InferenceServerException as exc:
            return self._after_failure(exc, image, parameters, started, deadline, timeout_s)
        return self._result(result, started, deadline, wants_characters(parameters))

    # -- several images --------------------------------------------------------------------

    def infer_many(self, items: list[tuple[bytes, dict]], concurrency: int = 1,
                   groups: list | None = None,
                   around: Callable[[int], ContextManager] = lambda index: nullcontext(),
                   ) -> list[OcrResult | errors.InferenceError | None]:
        """Run the ensemble on several images, in order, at most ``concurrency`` at a time.

        Each call is :meth:`infer`'s: its deadline (:attr:`timeout_s`, retries included, or
        what ``around`` gives) starts when it is sent, so an image never spends its deadline
        waiting behind the other items. Sending more at once than Triton runs at once gains
        nothing (they queue inside Triton) and would start their deadlines early.

        Args:
            items: ``(image bytes, parameters)`` per image.
            concurrency: most calls in flight at once (at least 1).
            groups: per item, the group it belongs to (the pages of one document); after an
                item fails, the later items of its group are not sent. None: every item is its
                own group (one bad image does not stop the others).
            around: makes, from an item's index, a context entered around its call (the
                gateway's admission, :meth:`ocr_api.admission.Admitted.page`); it gives a
                :class:`Call` (the seconds the call may take; told whether the answer was
                cached), or None.

        Returns:
            per item, in order: its :class:`OcrResult`, the
            :class:`~ocr_inference.errors.InferenceError` it failed with, or None when it was
            not sent because an earlier item of its group failed (items are sent in order, so
            a group's first failure comes before its first item not sent).
        """
        outcomes: list[OcrResult | errors.InferenceError | None] = [None] * len(items)
        failed: set = set()
        pending = iter(range(len(items)))
        lock = threading.Lock()

        def next_item() -> int | None:
            with lock:
                for index in pending:
                    if groups is None or groups[index] not in failed:
                        return index
                return None

        def run(index: int) -> None:
            try:
                with around(index) as call:
                    call = call or Call()
                    result = self.infer(*items[index], timeout_s=call.timeout_s)
                    call.cached = result.cached
                    outcomes[index] = result
            except errors.InferenceError as exc:
                outcomes[index] = exc
                if groups is not None:
                    with lock:
                        failed.add(groups[index])

        crashed: list[BaseException] = []

        def sender() -> None:
            try:
                while (index := next_item()) is not None:
                    run(index)
            except BaseException as exc:  # a bug: raised in the calling thread below
                crashed.append(exc)
                with lock:
                    for _ in pending:      # send nothing more
                        pass

        senders = min(max(1, concurrency), len(items))
        if senders <= 1:
            sender()            # in the calling thread: no thread for the common case
        else:
            threads = [threading.Thread(target=sender, name=f"triton-sender-{n}", daemon=True)
                       for n in range(senders - 1)]
            for thread in threads:
                thread.start()
            sender()
            for thread in threads:
                thread.join()
        if crashed:
            raise crashed[0]
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

    def _lost_registration(self, exc: InferenceServerException) -> bool:
        """Triton no longer knows our shared-memory regions (it restarted): they are forgotten,
        to be registered again on next use."""
        if self.shared_memory is not None and self.shared_memory.lost_registration(exc):
            self.shared_memory.forget_registrations()
            return True
        return False

    def _after_failure(self, exc: InferenceServerException, image: bytes,
                       parameters: dict, started: float, deadline: dict,
                       timeout_s: float) -> OcrResult:
        """What to do after a failed call: send it again, with the image in the message, after
        each pause of :data:`RETRY_PAUSES_S`, while another replica may answer it
        (:func:`_retryable`) or Triton lost our shared-memory regions, and time is left before
        the deadline; otherwise raise. A call that found a model's Python stub dead is sent
        again once that model is loaded again (:mod:`ocr_inference.revival`). ``deadline``: the
        call's request parameters (its ``DEADLINE_PARAMETER``), sent again unchanged;
        ``timeout_s``: the call's deadline, seconds from ``started``.

        Raises:
            errors.InferenceError: the (last) failure, mapped by :func:`errors.from_triton`.
        """
        def left_after(pause: float) -> float:
            """Seconds of the deadline left once ``pause`` is slept."""
            return timeout_s - (time.perf_counter() - started) - pause

        for pause in RETRY_PAUSES_S:
            remaining = left_after(pause)
            if not (self._lost_registration(exc) or _retryable(exc)) or remaining <= MIN_RETRY_S:
                break
            dead = dead_stub_model(exc.message() or "")
            if dead is not None:
                if not self._revival.revive(dead, remaining):
                    break
                remaining = left_after(pause)       # the load took some of it
                if remaining <= MIN_RETRY_S:
                    break
            logger.warning("Triton call failed (%s), sent again", exc.status())
            time.sleep(pause)
            try:
                result = self._client.infer(self.model_for(parameters),
                                            build_inputs(image, parameters),
                                            outputs=requested_outputs(parameters),
                                            client_timeout=remaining, parameters=deadline)
            except InferenceServerException as retry_exc:
                exc = retry_exc
            else:
                return self._result(result, started, deadline, wants_characters(parameters))
        raise self._error(exc, timeout_s)

    def _error(self, exc: InferenceServerException, timeout_s: float) -> errors.InferenceError:
        """The :class:`~ocr_inference.errors.InferenceError` of a failed call whose deadline
        was ``timeout_s`` (logged when it is Triton's failure)."""
        error = errors.from_triton(exc, timeout_s)
        if isinstance(error, errors.InferenceFailed):
            logger.error("Triton failed: %s", error)
        return error

    def _result(self, result: grpcclient.InferResult, started: float, deadline: dict,
                characters: bool = False) -> OcrResult:
        """The answer as an :class:`OcrResult` (with its characters when ``characters``);
        ``deadline``: the call's request parameters, which a computed answer echoes
        (:data:`~ocr_contract.tensors.COMPUTED_FOR`).

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
            order = result.as_numpy(READING_ORDER.name).reshape(-1)
            line_of_box = result.as_numpy(LINE_OF_BOX.name).reshape(-1)
            line_boxes = result.as_numpy(LINE_BOXES.name).reshape(-1, 4, 2)
            paragraphs = result.as_numpy(PARAGRAPH_OF_LINE.name).reshape(-1)
            angle = int(result.as_numpy(ANGLE.name).reshape(-1)[0])
            cached = int(result.as_numpy(COMPUTED_FOR.name).reshape(-1)[0]) \
                != deadline[DEADLINE_PARAMETER]
            words = Words.read(result, WORD_BOXES.name, WORD_TEXTS.name, WORD_SCORES.name,
                               BOX_OF_WORD.name, len(boxes))
            letters = Words.read(result, CHARACTER_BOXES.name, CHARACTER_TEXTS.name,
                                 CHARACTER_SCORES.name, WORD_OF_CHARACTER.name,
                                 len(words.texts)) if characters else None
            if len(boxes) != len(scores) or len(texts) not in (0, len(boxes)) \
                    or len(text_scores) != len(texts) or len(order) != len(boxes) \
                    or len(line_of_box) != len(boxes) or len(paragraphs) != len(line_boxes) \
                    or sorted(order.tolist()) != list(range(len(boxes))) \
                    or (len(boxes) and not 0 <= line_of_box.min() <= line_of_box.max()
                        < len(line_boxes)):
                raise ValueError(f"{len(boxes)} boxes, {len(scores)} scores, {len(texts)} "
                                 f"texts, {len(text_scores)} text scores, {len(order)} in the "
                                 f"reading order, {len(line_boxes)} lines")
        except (TypeError, ValueError, AttributeError, IndexError) as exc:
            logger.error("malformed answer from %s: %s", response.model_name, exc)
            raise errors.InferenceFailed(f"malformed answer: {exc}") from exc
        return OcrResult(boxes=boxes, scores=scores, width=width, height=height,
                         model_name=response.model_name, model_version=response.model_version,
                         inference_ms=elapsed_ms, texts=texts, text_scores=text_scores,
                         text=text, reading_order=order, line_of_box=line_of_box,
                         line_boxes=line_boxes, paragraph_of_line=paragraphs, angle=angle,
                         words=words, characters=letters, cached=cached)

    # -- health ----------------------------------------------------------------------------

    def is_ready(self, timeout_s: float = 2.0) -> bool:
        """True when Triton is live and the ensemble is ready (never raises). With several
        replicas this asks whichever one the channel picks; see :meth:`replicas_ready`."""
        return self._ready(self._client, timeout_s)

    def _ready(self, client: grpcclient.InferenceServerClient, timeout_s: float) -> bool:
        try:
            return bool(client.is_server_live(client_timeout=timeout_s)
                        and client.is_model_ready(self.model, client_timeout=timeout_s))
        except InferenceServerException:
            return False

    def replicas_ready(self, timeout_s: float = 2.0) -> tuple[int, int]:
        """``(ready, total)``: of the replicas the target names now
        (:func:`ocr_inference.targets.replicas`), how many are live with the ensemble ready.
        Each is asked over a channel of its own, kept for the next call (never raises)."""
        names = targets.replicas(self.url)
        with self._probes_lock:
            for name in set(self._probes) - set(names):      # gone from DNS
                self._probes.pop(name).close()
            for name in names:
                if name not in self._probes:
                    # Same short reconnect backoff: a replica back is seen within seconds.
                    self._probes[name] = grpcclient.InferenceServerClient(
                        name, channel_args=CHANNEL_ARGS)
            probes = [self._probes[name] for name in names]
        return sum(self._ready(probe, timeout_s) for probe in probes), len(names)

    def close(self) -> None:
        """Unregister shared memory (if any) and close the channels."""
        if self.shared_memory is not None:
            self.shared_memory.close()
        self._client.close()
        with self._probes_lock:
            for probe in self._probes.values():
                probe.close()
            self._probes.clear()
