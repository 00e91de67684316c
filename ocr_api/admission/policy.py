"""The admission decision, from a :class:`~ocr_api.admission.ledger.Snapshot` alone (no I/O).

Pages are sent to Triton ``parallel`` at a time (``TRITON_CONCURRENT_PAGES``: 1 for the cpu
flavour) in the order they were admitted (:func:`has_turn`); the rest wait for their turn in
the gateway. A page admitted now therefore waits for what is ahead of it, :func:`backlog_s`,
then takes about ``page_s`` itself; it is admitted only if both fit in ``limit_s``, the share
of its ``TRITON_TIMEOUT_S`` deadline that ``OCR_ADMISSION_PERCENT`` allows (the rest is the
estimate's margin). Otherwise the request is refused at once (503 ``overloaded``) rather than
sent to time out after its deadline.

A page read at a larger working size than the default (an explicit ``long_side`` over 1280)
costs at most its kind's measured cost times :func:`working_scale` (the detector's cost follows
its input's pixels; decoding and reading do not grow so, and the small-print rule's second
detection does not apply to it), and is not measured: the kind's cost is the default size's.
A synchronous request with a page whose cost so scaled would not fit in ``limit_s`` even alone
is refused at once (:func:`too_slow`: ``page_too_slow``, pointing to ``POST /api/jobs``), not
sent to time out; at the default size a page is always sent when nothing is in flight (its
cost is measured again only when read).

Between callers (API keys; anonymous and staff traffic are callers too): when several have
pages in flight or were refused a moment ago, each may hold at most an equal share of the
pages that fit in ``limit_s`` (429 ``key_busy`` beyond it), so one key's burst leaves room for
the others. Alone, a caller may use all of it. This is what Triton's FIFO queues cannot do by
themselves: its priority levels do not reach the models a python-backend step calls
(triton-inference-server/server#6055).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ocr_contract.limits import JOB_PAGE_TIMEOUT_S
from ocr_contract.parameters import LONG_SIDE

from .ledger import Snapshot

#: Kinds of page, costed apart: a photo or screenshot, and a page of a document (PDF, or a
#: multi-page TIFF: mostly scans dense with text, several times a photo's boxes to read).
IMAGE, DOCUMENT = "image", "document"
#: A page's cost before this deployment measured one of its kind, seconds: on 2 CPU cores,
#: a shared photo at the default working size ~2 s (bench/results), and OCRmyPDF's linn.pdf
#: page (200 dpi, 731 words) 8.8 s. Replaced by the first page of the kind answered.
DEFAULT_PAGE_S = {IMAGE: 2.0, DOCUMENT: 9.0}


@dataclass(frozen=True)
class Budget:
    """How much waiting a page may be sent into.

    Attributes:
        deadline_s: a page's deadline from when it is admitted (``TRITON_TIMEOUT_S``),
            seconds.
        percent: the share of it that waiting and reading may be expected to take
            (``OCR_ADMISSION_PERCENT``); 0 turns admission off.
        parallel: pages sent to Triton at once (``TRITON_CONCURRENT_PAGES``).
        job_deadline_s: a job page's deadline from when it is admitted
            (``OCR_JOB_PAGE_TIMEOUT_S``), seconds.
    """

    deadline_s: float
    percent: int
    parallel: int
    job_deadline_s: float = float(JOB_PAGE_TIMEOUT_S.default)

    @property
    def limit_s(self) -> float:
        return self.deadline_s * self.percent / 100.0


@dataclass(frozen=True)
class Refusal:
    """Why a page is not sent now.

    Attributes:
        code: ``overloaded`` (Triton's backlog is full), ``key_busy`` (the caller holds its
            share) or ``page_too_slow`` (the page alone would not fit).
        retry_after_s: whole seconds after which the same request would likely be admitted
            (0 for ``page_too_slow``: it would not be, later either).
        backlog_s: the estimated wait it was refused with, seconds.
        page_s: the page's own expected cost, seconds.
    """

    code: str
    retry_after_s: int
    backlog_s: float
    page_s: float = 0.0


def page_cost_s(snapshot: Snapshot, kind: str) -> float:
    """What a page of ``kind`` is expected to take alone: the measured average, or
    :data:`DEFAULT_PAGE_S` before any. A kind may name its detector after a slash
    (``image/db``: :func:`ocr_api.inference.cost_kind`), measured apart; unmeasured, it costs
    its page kind's default."""
    return snapshot.page_s.get(kind, DEFAULT_PAGE_S[kind.split("/")[0]])


def working_scale(long_side: int | None) -> float:
    """How many times the default working size's pixels a page is detected at, for its cost:
    ``(long_side / LONG_SIDE.default) ** 2`` for an explicit ``long_side`` (pixels) over the
    default (:data:`ocr_contract.parameters.LONG_SIDE`), else 1. Never under 1: a smaller
    page's detection costs less, but its decoding and reading do not (``long_side=64`` pages
    of a dense scan took 0.1 s each, not 1/400 of a default page's 4 s)."""
    return 1.0 if long_side is None else max(1.0, (long_side / LONG_SIDE.default) ** 2)


def backlog_s(snapshot: Snapshot, now: float, parallel: int) -> float:
    """Seconds a page admitted now is expected to wait: the work left of every page in
    flight (a running page's cost less what it has run, never below nothing; a waiting page's
    whole cost), shared by the ``parallel`` pages sent at once."""
    left = sum(entry.cost_s - (min(entry.cost_s, max(0.0, now - entry.started_at))
                               if entry.started_at is not None else 0.0)
               for entry in snapshot.pages.values())
    return left / max(1, parallel)


def has_turn(snapshot: Snapshot, token: str, parallel: int) -> bool:
    """Whether page ``token`` may be sent now: fewer than ``parallel`` pages in flight were
    admitted before it (running, or waiting ahead of it), and every page admitted before it
    has been sent (first come, first served: two pages whose turns come in the same moment
    are sent in the order admitted, not in the order their waiters happen to look). A
    document's reserved next page (:attr:`~.ledger.Entry.reserved`) holds a place but is never
    sent itself."""
    mine = snapshot.pages[token]
    ahead = [entry for other, entry in snapshot.pages.items()
             if (entry.admitted_at, other) < (mine.admitted_at, token)]
    return len(ahead) < max(1, parallel) and all(
        entry.started_at is not None for entry in ahead if not entry.reserved)


def too_slow(snapshot: Snapshot, budget: Budget, kinds: list[str],
             scales: list[float]) -> Refusal | None:
    """``page_too_slow`` when a page of a request (of ``kinds``, read at ``scales`` times the
    default working size's pixels: :func:`working_scale`) at a larger working size would not
    fit in :attr:`Budget.limit_s` even alone (its ``page_s``: the slowest such page's cost,
    seconds); else None."""
    slowest = max((page_cost_s(snapshot, kind) * scale
                   for kind, scale in zip(kinds, scales) if scale > 1), default=0.0)
    if slowest > budget.limit_s:
        return Refusal("page_too_slow", 0, 0.0, slowest)
    return None


def decide(snapshot: Snapshot, caller: str, now: float, budget: Budget,
           kind: str = IMAGE, scale: float = 1.0) -> Refusal | None:
    """Whether ``caller`` may send a page of ``kind`` read at ``scale`` times the default
    working size's pixels (:func:`working_scale`) now: None, or why not.

    Refused with ``overloaded`` when the backlog and the page do not fit in
    :attr:`Budget.limit_s` (``Retry-After``: until they would) and something is in flight
    (a page that alone takes longer is sent: refusing it would not help); with ``key_busy``
    when other
    callers are active (in flight, or refused and holding their share) and ``caller`` already
    has its equal share of the pages that fit in flight (``Retry-After``: one page's time).
    """
    page_s = page_cost_s(snapshot, kind) * scale
    wait_s = backlog_s(snapshot, now, budget.parallel)
    over_s = wait_s + page_s - budget.limit_s
    if over_s > 0 and snapshot.pages:        # alone, waiting would not make it faster
        return Refusal("overloaded", max(1, math.ceil(over_s)), wait_s)
    in_flight = snapshot.pages.values()          # no order needed (entries sorts them)
    callers = {entry.caller for entry in in_flight} | set(snapshot.waiting) | {caller}
    if len(callers) > 1:
        fit = max(budget.parallel, math.floor(budget.limit_s / page_s * budget.parallel))
        share = max(budget.parallel, fit // len(callers))
        if sum(entry.caller == caller for entry in in_flight) >= share:
            return Refusal("key_busy", max(1, math.ceil(page_s)), wait_s)
    return None
