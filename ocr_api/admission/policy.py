"""The admission decision, from a :class:`~ocr_api.admission.ledger.Snapshot` alone (no I/O).

Triton runs ``parallel`` pages at once (``TRITON_CONCURRENT_PAGES``: 1 for the cpu flavour)
and the rest wait in its queues, first come first served. A page sent now therefore waits for
what is ahead of it, :func:`backlog_s`, then takes about ``page_s`` itself; it is sent only if
both fit in ``limit_s``, the share of its ``TRITON_TIMEOUT_S`` deadline that
``OCR_ADMISSION_PERCENT`` allows (the rest is the estimate's margin). Otherwise the request is
refused at once (503 ``overloaded``) rather than sent to time out after its deadline.

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
        deadline_s: a page's deadline from when it is sent (``TRITON_TIMEOUT_S``), seconds.
        percent: the share of it that waiting and reading may be expected to take
            (``OCR_ADMISSION_PERCENT``); 0 turns admission off.
        parallel: pages Triton runs at once (``TRITON_CONCURRENT_PAGES``).
    """

    deadline_s: float
    percent: int
    parallel: int

    @property
    def limit_s(self) -> float:
        return self.deadline_s * self.percent / 100.0


@dataclass(frozen=True)
class Refusal:
    """Why a page is not sent now.

    Attributes:
        code: ``overloaded`` (Triton's backlog is full) or ``key_busy`` (the caller holds its
            share).
        retry_after_s: whole seconds after which the same request would likely be admitted.
        backlog_s: the estimated wait it was refused with, seconds.
    """

    code: str
    retry_after_s: int
    backlog_s: float


def page_cost_s(snapshot: Snapshot, kind: str) -> float:
    """What a page of ``kind`` is expected to take alone: the measured average, or
    :data:`DEFAULT_PAGE_S` before any."""
    return snapshot.page_s.get(kind, DEFAULT_PAGE_S[kind])


def backlog_s(snapshot: Snapshot, now: float, parallel: int) -> float:
    """Seconds a page sent now is expected to wait: the cost of every page in flight, less
    what the ``parallel`` oldest (the ones running, first come first served) have done since
    they were sent, shared by the ``parallel`` pages Triton runs at once."""
    entries = sorted(snapshot.entries, key=lambda entry: entry.sent_at)
    done = sum(min(entry.cost_s, max(0.0, now - entry.sent_at))
               for entry in entries[:max(1, parallel)])
    return max(0.0, sum(entry.cost_s for entry in entries) - done) / max(1, parallel)


def decide(snapshot: Snapshot, caller: str, now: float, budget: Budget,
           kind: str = IMAGE) -> Refusal | None:
    """Whether ``caller`` may send a page of ``kind`` now: None, or why not.

    Refused with ``overloaded`` when the backlog and the page do not fit in
    :attr:`Budget.limit_s` (``Retry-After``: until they would) and something is in flight
    (a page that alone takes longer is sent: refusing it would not help); with ``key_busy``
    when other
    callers are active (in flight, or refused and holding their share) and ``caller`` already
    has its equal share of the pages that fit in flight (``Retry-After``: one page's time).
    """
    page_s = page_cost_s(snapshot, kind)
    wait_s = backlog_s(snapshot, now, budget.parallel)
    over_s = wait_s + page_s - budget.limit_s
    if over_s > 0 and snapshot.entries:      # alone, waiting would not make it faster
        return Refusal("overloaded", max(1, math.ceil(over_s)), wait_s)
    callers = {entry.caller for entry in snapshot.entries} | set(snapshot.waiting) | {caller}
    if len(callers) > 1:
        fit = max(budget.parallel, math.floor(budget.limit_s / page_s * budget.parallel))
        share = max(budget.parallel, fit // len(callers))
        if sum(entry.caller == caller for entry in snapshot.entries) >= share:
            return Refusal("key_busy", max(1, math.ceil(page_s)), wait_s)
    return None


def service_sample_s(latency_s: float, waited_s: float) -> float:
    """A page's own cost, from its latency and the wait it was admitted with: latency less the
    estimated wait, at least a fifth of the latency. An underestimated cost makes the wait
    underestimated and the sample larger, an overestimated one the reverse, so the average
    converges on what pages cost even when none runs alone."""
    return max(latency_s - waited_s, 0.2 * latency_s)
