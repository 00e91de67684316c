"""Admission with a deadline: a synchronous request is refused at once when Triton cannot
answer it within its deadline, instead of being sent to time out; job pages wait for room.

Every page sent to Triton is written in a ledger shared by the gateway's workers, the job
workers and the other replicas (:mod:`.ledger`) from when it is admitted until its answer;
:mod:`.policy` decides from it. A request is checked once (:meth:`Admission.admit`: the check
and its first page's entry in one step); its later pages follow without a check, so a document
let in is read to the end, and while one is in flight the next is written in as well (it will
wait behind what is admitted meanwhile). Job pages wait for room instead
(:meth:`Admission.job_page`).

What the ledger assumes is what happens: pages are sent to Triton in the order they were
admitted, ``TRITON_CONCURRENT_PAGES`` at a time (:func:`.policy.has_turn`), the others waiting
for their turn in the gateway with their deadline running from admission. Triton would run
every page sent to it at once, each network's threads taking the cores from the others', so
that all finish late together instead of one after another (issue 54: three photos admitted
in the same second on a 2-core AVX2 server, all answered 504). A page's cost is the time its
own call took, measured at the concurrency pages run at.

Metrics: ``ocr_admission_refusals_total{reason}``, ``ocr_admission_backlog_seconds``,
``ocr_admission_pages_in_flight``, ``ocr_admission_wait_seconds`` (:mod:`ocr_api.metrics`).
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
import uuid
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Callable

from django.conf import settings
from ocr_inference.client import Call
from ocr_inference.errors import InferenceTimeout
from ocr_proxy.config import proxy_read_timeout_s
from redis.exceptions import RedisError

from .. import errors, metrics
from .ledger import RENEW_S, Entry, LocalLedger, RedisLedger, Snapshot, now
from .policy import (DOCUMENT, IMAGE, Budget, Refusal, backlog_s, decide, has_turn, page_cost_s,
                     too_slow)

logger = logging.getLogger(__name__)

#: Who the current thread's request is from (:func:`caller_of`); set by the OCR endpoints.
current_caller: ContextVar[str] = ContextVar("ocr_admission_caller", default="anonymous")

#: The caller job pages are sent as: jobs together are one caller among the keys.
JOBS = "jobs"

#: While Redis does not answer, this process uses its own ledger for this long, seconds.
FALLBACK_S = 60.0

#: How often a page waiting for its turn looks at the ledger again, seconds.
TURN_POLL_S = 0.05

#: A synchronous document's pages are counted at this many times their measured average (a
#: dense scan takes 4x a photo; the average hides which): OCR_MAX_PAGES' sizing rule.
PAGE_HEADROOM = 1.5


def caller_of(request) -> str:
    """The caller a request counts as: its API key (``key:<prefix>``), the staff user of a
    session (``user:<id>``), or ``anonymous``."""
    prefix = getattr(getattr(request, "auth", None), "prefix", None)
    if prefix:
        return f"key:{prefix}"
    user = getattr(request, "user", None)
    if getattr(user, "is_authenticated", False):
        return f"user:{user.pk}"
    return "anonymous"


@dataclass
class InFlight:
    """A page written in the ledger: its entry's token (and its request's next page's), and its
    deadline (epoch s)."""

    tokens: list[str]
    expires_at: float


class Admission:
    """One process's view of the shared ledger.

    Args:
        ledger: where pages in flight are written (:class:`~.ledger.RedisLedger`, or
            :class:`~.ledger.LocalLedger`).
        budget: the deadline, its admitted share and Triton's parallelism.
        fallback: the ledger used for :data:`FALLBACK_S` after ``ledger`` fails (Redis down):
            admission then covers this process only, never stops serving.
    """

    def __init__(self, ledger, budget: Budget, fallback: LocalLedger | None = None):
        self.ledger, self.budget = ledger, budget
        self.fallback = fallback or LocalLedger()
        self._fallback_until = 0.0
        self._lock = threading.Lock()
        self._held: set[str] = set()            # tokens of this process's pages in flight
        self._renewer: tuple[int, threading.Thread] | None = None

    @property
    def enabled(self) -> bool:
        return self.budget.percent > 0

    def _with_ledger(self, work: Callable):
        """``work(ledger)`` on the shared ledger, or on this process's while the shared one
        does not answer (then for :data:`FALLBACK_S`, with a warning)."""
        if time.monotonic() >= self._fallback_until:
            try:
                return work(self.ledger)
            except RedisError as exc:
                with self._lock:
                    if time.monotonic() >= self._fallback_until:
                        logger.warning("admission ledger unavailable (%s): this process admits "
                                       "on its own for %.0f s", type(exc).__name__, FALLBACK_S)
                    self._fallback_until = time.monotonic() + FALLBACK_S
        return work(self.fallback)

    def _enter(self, ledger, snapshot: Snapshot, moment: float, caller: str, kind: str,
               next_follows: bool, deadline_s: float | None = None,
               scale: float = 1.0) -> InFlight:
        """Write a page (and its request's next one, expected to be sent when it ends) in
        ``ledger``, with its deadline ``deadline_s`` (default the budget's) from now, costed
        at ``scale`` times its kind's cost (:func:`.policy.working_scale`)."""
        cost_s = page_cost_s(snapshot, kind) * scale
        waited_s = backlog_s(snapshot, moment, self.budget.parallel)
        expires_at = moment + (deadline_s or self.budget.deadline_s)
        tokens = [uuid.uuid4().hex]
        self._hold(tokens[0])
        ledger.add(tokens[0], Entry(caller, cost_s, moment, expires_at))
        if next_follows:
            tokens.append(uuid.uuid4().hex)
            self._hold(tokens[1])
            ledger.add(tokens[1], Entry(caller, cost_s, moment + waited_s + cost_s,
                                        expires_at + cost_s, reserved=True))
        metrics.ADMISSION_WAIT.observe(waited_s)
        metrics.ADMISSION_BACKLOG.set(waited_s)
        metrics.ADMISSION_PAGES.set(len(snapshot.pages) + len(tokens))
        return InFlight(tokens, expires_at)

    def _hold(self, token: str) -> None:
        """Keep ``token``'s lease renewed (:mod:`.ledger`) until :meth:`_release`, by a thread
        of this process (started again in a forked child)."""
        with self._lock:
            self._held.add(token)
            if self._renewer is None or self._renewer[0] != os.getpid():
                thread = threading.Thread(target=self._renew, name="admission-leases",
                                          daemon=True)
                self._renewer = (os.getpid(), thread)
                thread.start()

    def _release(self, tokens: list[str]) -> None:
        with self._lock:
            self._held.difference_update(tokens)

    def _renew(self) -> None:
        while True:
            time.sleep(RENEW_S)
            with self._lock:
                tokens = list(self._held)
            if tokens:
                try:
                    self._with_ledger(lambda ledger: ledger.renew(tokens, now()))
                except Exception:  # noqa: BLE001 - the thread must outlive one bad renewal
                    logger.exception("admission: renewing the pages' leases failed")

    def _take_turn(self, page: InFlight, poll_s: float = TURN_POLL_S) -> float:
        """Wait until ``page`` may be sent (:func:`.policy.has_turn`), mark it sent, and
        return the seconds left before its deadline.

        Raises:
            InferenceTimeout: the deadline passed while it waited (it is not sent).
        """
        token = page.tokens[0]

        def turn(ledger) -> float | None:
            moment = now()
            if moment >= page.expires_at:
                return 0.0
            snapshot = ledger.snapshot(moment)
            if token in snapshot.pages and not has_turn(snapshot, token, self.budget.parallel):
                return None
            ledger.start(token, moment)
            return page.expires_at - moment

        while (left_s := self._with_ledger(turn)) is None:
            time.sleep(poll_s)
        if left_s <= 0:
            raise InferenceTimeout(self.budget.deadline_s)
        return left_s

    @contextmanager
    def _in_flight(self, page: InFlight, kind: str, scale: float = 1.0):
        """Around a page's Triton call: its turn first (yields its :class:`Call`: the seconds
        it may take), then take it out of the ledger and measure what its call cost when it
        was answered (not from the response cache: a cached answer costs milliseconds
        whatever the page), or at least cost when it timed out (a page that never finishes
        in time would otherwise never be measured, and keep its kind's default); a page at a
        larger working size (``scale`` over 1) is not measured: its time is not the kind's."""
        measured, started = False, None
        try:
            call = Call(self._take_turn(page))
            started = time.perf_counter()
            yield call
            measured = not call.cached
        except InferenceTimeout:
            measured = started is not None
            raise
        finally:
            latency_s = time.perf_counter() - started if started is not None else 0.0
            self._release(page.tokens)

            def leave(ledger):
                for token in page.tokens:
                    ledger.remove(token)
                if measured and scale == 1.0:
                    ledger.observe(kind, latency_s)

            self._with_ledger(leave)

    # -- synchronous requests -------------------------------------------------------------

    def admit(self, caller: str, kinds: list[str],
              scales: list[float] | None = None) -> "Admitted":
        """Let ``caller``'s request in, its pages of ``kinds`` (in the order sent) read at
        ``scales`` times the default working size's pixels (:func:`.policy.working_scale`;
        default 1 each), or refuse it. The check and the first page's entry are one step
        under the ledger's lock, so a burst arriving at once is counted page by page.

        Raises:
            errors.PageTooSlow: a page's working size would take longer than the deadline's
                share even alone (:func:`.policy.too_slow`; 413, no ``Retry-After``:
                ``POST /api/jobs`` reads it).
            errors.Overloaded: Triton's backlog and the first page do not fit in the
                deadline's share (503, ``Retry-After``); a document is told that
                ``POST /api/jobs`` waits.
            errors.KeyBusy: other callers are active and ``caller`` holds its share (429,
                ``Retry-After``).
        """
        scales = scales or [1.0] * len(kinds)
        if not self.enabled:
            return Admitted(self, caller, kinds, None, scales)

        def check_and_enter(ledger) -> InFlight | Refusal:
            with ledger.locked():
                moment = now()
                snapshot = ledger.snapshot(moment)
                refusal = (too_slow(snapshot, self.budget, kinds, scales)
                           or decide(snapshot, caller, moment, self.budget, kinds[0],
                                     scales[0]))
                if refusal is None:
                    return self._enter(ledger, snapshot, moment, caller, kinds[0],
                                       len(kinds) > 1, scale=scales[0])
                if refusal.code == "overloaded":
                    # The caller holds its share while it waits, so the callers already in
                    # do not take all the room that frees up meanwhile.
                    ledger.hold_share(caller, moment + refusal.retry_after_s
                                      + page_cost_s(snapshot, kinds[0]) * scales[0])
                return refusal

        outcome = self._with_ledger(check_and_enter)
        if isinstance(outcome, Refusal):
            metrics.ADMISSION_REFUSALS.labels(outcome.code).inc()
            raise refused(outcome, kinds, self.budget)
        return Admitted(self, caller, kinds, outcome, scales)

    # -- job pages ------------------------------------------------------------------------

    @contextmanager
    def job_page(self, kind: str, give_up_s: float, poll_s: float = 0.5, scale: float = 1.0):
        """A job's page in the ledger while in flight (as the caller :data:`JOBS`), admitted
        once the backlog and the page itself fit in half the deadline's share, or nothing is
        in flight, so that it leaves synchronous requests room (its network and its rendering
        take cores from theirs, too); after ``give_up_s`` seconds of waiting it goes anyway
        (jobs always progress). Never refused. Its deadline is a job page's
        (:attr:`~.policy.Budget.job_deadline_s`, from admission), not a request's; the
        context yields its :class:`Call` (the seconds it may take: the whole job page deadline
        when admission is off), to be told whether the answer was cached. ``scale``: its
        working size's pixels over the default's (:func:`.policy.working_scale`)."""
        if not self.enabled:
            yield Call(self.budget.job_deadline_s)
            return
        started = time.monotonic()

        def enter_if_room(ledger) -> InFlight | None:
            with ledger.locked():
                moment = now()
                snapshot = ledger.snapshot(moment)
                ahead_s = backlog_s(snapshot, moment, self.budget.parallel)
                if (snapshot.pages and time.monotonic() - started < give_up_s
                        and ahead_s + page_cost_s(snapshot, kind) * scale
                        > self.budget.limit_s / 2):
                    return None
                return self._enter(ledger, snapshot, moment, JOBS, kind, False,
                                   self.budget.job_deadline_s, scale)

        while (page := self._with_ledger(enter_if_room)) is None:
            time.sleep(poll_s)
        with self._in_flight(page, kind, scale) as call:
            yield call

    # -- documents ------------------------------------------------------------------------

    def sync_page_limit(self, max_pages: int, document_kind: str = DOCUMENT) -> int:
        """Most pages of a document ``POST /api/ocr`` reads here now: ``max_pages``
        (``OCR_MAX_PAGES``), or fewer where this deployment's measured cost of a document's
        page would not let them finish before the proxy in front gives up. The proxy waits
        :func:`ocr_proxy.config.proxy_read_timeout_s` for the answer, of which a request may
        spend ``TRITON_TIMEOUT_S`` waiting for a gunicorn thread; its pages, read one after
        another, have the rest, each counted at :data:`PAGE_HEADROOM` times the measured
        average (at least one page: a single page's deadline is its own, admission checks it).
        ``document_kind``: how the pages are costed (their detector's:
        :func:`ocr_api.inference.cost_kind`)."""
        page_s = page_cost_s(self._with_ledger(lambda ledger: ledger.snapshot(now())),
                             document_kind)
        budget_s = proxy_read_timeout_s(self.budget.deadline_s) - self.budget.deadline_s
        return max(1, min(max_pages, math.floor(budget_s / (PAGE_HEADROOM * page_s))))

    # -- readiness ------------------------------------------------------------------------

    def load(self, costed_as: dict[str, str] | None = None) -> dict:
        """What ``GET /api/ready`` tells about load: ``backlog_s`` (seconds of work ahead of a
        page sent now), ``pages_in_flight`` (next pages of documents included), ``page_s``
        (the expected cost of an image and of a document page), ``limit_s`` and
        ``saturated`` (an image sent now would be refused). ``costed_as``: the cost kind each
        page kind is measured under (the default detector's:
        :func:`ocr_api.inference.cost_kind`); default the kinds themselves."""
        costed_as = costed_as or {IMAGE: IMAGE, DOCUMENT: DOCUMENT}
        moment = now()
        snapshot = self._with_ledger(lambda ledger: ledger.snapshot(moment))
        wait_s = backlog_s(snapshot, moment, self.budget.parallel)
        page_s = {kind: round(page_cost_s(snapshot, costed_as[kind]), 2)
                  for kind in (IMAGE, DOCUMENT)}
        return {"backlog_s": round(wait_s, 1), "pages_in_flight": len(snapshot.pages),
                "page_s": page_s, "limit_s": round(self.budget.limit_s, 1),
                "saturated": self.enabled and wait_s + page_s[IMAGE] > self.budget.limit_s}


class Admitted:
    """A request let in by :meth:`Admission.admit`: its pages are written in the ledger while
    they are in flight (:meth:`page`), the first from the moment it was admitted."""

    def __init__(self, gate: Admission, caller: str, kinds: list[str], first: InFlight | None,
                 scales: list[float]):
        self.gate, self.caller, self.kinds, self.first = gate, caller, kinds, first
        self.scales = scales

    @contextmanager
    def page(self, index: int):
        """Page ``index`` (0-based) in the ledger around its Triton call, with the next page
        of the request when there is one; measured when it is answered (not from the response
        cache) or times out. Yields its :class:`~ocr_inference.client.Call` once its turn
        came: the seconds it may take (None when admission is off: the client's own
        deadline), to be told whether the answer was cached."""
        if not self.gate.enabled:
            yield Call()
            return
        kind, next_follows = self.kinds[index], index + 1 < len(self.kinds)
        scale = self.scales[index]
        if index == 0 and self.first is not None:
            page, self.first = self.first, None
        else:
            def enter(ledger) -> InFlight:
                moment = now()
                return self.gate._enter(ledger, ledger.snapshot(moment), moment, self.caller,
                                        kind, next_follows, scale=scale)
            page = self.gate._with_ledger(enter)
        with self.gate._in_flight(page, kind, scale) as call:
            yield call


def refused(refusal: Refusal, kinds: list[str], budget: Budget) -> errors.ApiError:
    """The API error of a refusal (``kinds``: of the request's pages; a document's refusal
    points to jobs, as a page too slow for any request's deadline does, in its message and its
    ``Link`` header)."""
    if refusal.code == "page_too_slow":
        error = errors.PageTooSlow(
            f"At the working size asked (long_side) this page would take about "
            f"{refusal.page_s:.0f} s to read on this server, more than the "
            f"{budget.limit_s:.0f} s a request may take. Send it to POST /api/jobs, "
            f"which gives a page {budget.job_deadline_s:.0f} s (OCR_JOB_PAGE_TIMEOUT_S), or ask "
            f"a smaller long_side.", field="long_side")
        error.link = errors.jobs_link()
        return error
    if refusal.code == "key_busy":
        return errors.KeyBusy(
            f"This key already has its share of the pages being read while others wait; "
            f"retry after {refusal.retry_after_s} s.", retry_after=refusal.retry_after_s)
    message = (f"The inference server has about {refusal.backlog_s:.0f} s of work ahead; "
               f"this request would not be answered in time. Retry after "
               f"{refusal.retry_after_s} s")
    if DOCUMENT in kinds:
        message += ", or send the document to POST /api/jobs, which waits for room"
    return errors.Overloaded(message + ".", retry_after=refusal.retry_after_s)


_admission: Admission | None = None
_made_from: tuple | None = None
_made_lock = threading.Lock()
#: This process's ledgers by broker URL ("" for its own), and the one it falls back on: kept
#: when only the budget's settings change, so what was measured stays.
_ledgers: dict[str, object] = {}
_fallback = LocalLedger()


def get() -> Admission:
    """This process's :class:`Admission`, made from the settings (again when they change):
    the ledger in ``OCR_BROKER_URL``'s Redis, else this process's own."""
    global _admission, _made_from
    wanted = (settings.OCR_BROKER_URL, float(settings.TRITON_TIMEOUT_S),
              int(settings.OCR_ADMISSION_PERCENT), max(1, int(settings.TRITON_CONCURRENT_PAGES)),
              float(settings.OCR_JOB_PAGE_TIMEOUT_S))
    with _made_lock:
        if _admission is None or _made_from != wanted:
            url = wanted[0] if wanted[0].startswith(("redis://", "rediss://")) else ""
            if url not in _ledgers:
                _ledgers[url] = RedisLedger(url) if url else LocalLedger()
            _admission = Admission(_ledgers[url], Budget(*wanted[1:]), _fallback)
            _made_from = wanted
        return _admission
