"""Admission with a deadline (ocr_api.admission, issue 38): the decision from a ledger
snapshot, the ledger, and job pages waiting instead of being refused. The real gateway under
load (gunicorn's threads sharing the ledger in Redis) is tests/jobs/test_admission_stack.py."""

from __future__ import annotations

import threading
import time

import pytest

from ocr_api import admission, errors
from ocr_inference.errors import InferenceFailed, InferenceTimeout
from ocr_api.admission.ledger import Entry, LocalLedger, Snapshot
from ocr_api.admission.policy import (DEFAULT_PAGE_S, DOCUMENT, IMAGE, Budget, backlog_s,
                                      decide, service_sample_s)

BUDGET = Budget(deadline_s=30.0, percent=80, parallel=1)      # limit 24 s


def entry(caller: str, cost_s: float, sent_at: float) -> Entry:
    return Entry(caller, cost_s, sent_at, sent_at + 30.0)


# -- the decision ------------------------------------------------------------------------

def test_backlog_is_what_is_in_flight_less_what_the_running_page_did():
    snapshot = Snapshot([entry("a", 4.0, 100.0), entry("b", 4.0, 101.0),
                         entry("a", 4.0, 102.0)], {}, {IMAGE: 4.0})
    # The oldest has run 3 of its 4 s: 1 + 4 + 4 left.
    assert backlog_s(snapshot, 103.0, parallel=1) == pytest.approx(9.0)
    # Two at a time: the two oldest ran 3 and 2 s; 1 + 2 + 4 left, shared by two.
    assert backlog_s(snapshot, 103.0, parallel=2) == pytest.approx(3.5)
    # A page past its estimate counts as done, never as negative work.
    assert backlog_s(snapshot, 200.0, parallel=1) == pytest.approx(8.0)
    assert backlog_s(Snapshot([], {}, {}), 0.0, parallel=1) == 0.0


def test_a_page_that_would_not_fit_is_refused_with_the_seconds_until_it_would():
    # 5 pages of 5 s sent just now: 25 s ahead, + 5 s = 30 > 24.
    snapshot = Snapshot([entry("a", 5.0, 100.0) for _ in range(5)], {}, {IMAGE: 5.0})
    refusal = decide(snapshot, "a", 100.0, BUDGET)
    assert (refusal.code, refusal.retry_after_s, refusal.backlog_s) == ("overloaded", 6, 25.0)
    # Three of them: 15 + 5 = 20 <= 24, sent.
    three = Snapshot(snapshot.entries[:3], {}, {IMAGE: 5.0})
    assert decide(three, "a", 100.0, BUDGET) is None


def test_before_any_measurement_a_page_costs_the_default():
    image_s = DEFAULT_PAGE_S[IMAGE]
    ahead = int(BUDGET.limit_s // image_s) - 1              # 11 pages of 2 s: 22 + 2 = 24
    entries = [entry("a", image_s, 100.0) for _ in range(ahead)]
    assert decide(Snapshot(entries, {}, {}), "a", 100.0, BUDGET) is None
    assert decide(Snapshot(entries + entries[:1], {}, {}), "a", 100.0, BUDGET).code == \
        "overloaded"
    # A document page costs more: 22 s ahead + 9 > 24.
    assert decide(Snapshot(entries, {}, {}), "a", 100.0, BUDGET, DOCUMENT).code == "overloaded"
    # Alone, a page that takes longer than the limit is sent: waiting would not help.
    assert decide(Snapshot([], {}, {DOCUMENT: 30.0}), "a", 100.0, BUDGET, DOCUMENT) is None
    # Measured, the kind's own average counts: 22 + 1.5 <= 24.
    measured = Snapshot(entries, {}, {DOCUMENT: 1.5})
    assert decide(measured, "a", 100.0, BUDGET, DOCUMENT) is None


def test_alone_a_key_may_use_all_the_room_with_others_its_share():
    # 24 s / 4 s = 6 pages fit; "a" has 4 in flight (16 s ahead, + 4 = 20: fits).
    costs = {IMAGE: 4.0}
    a_pages = [entry("a", 4.0, 100.0) for _ in range(4)]
    b_page = entry("b", 4.0, 100.0)
    assert decide(Snapshot(a_pages, {}, costs), "a", 100.0, BUDGET) is None
    # "b" has one in flight too: two callers, 3 pages each; "a" holds 4.
    busy = decide(Snapshot(a_pages + [b_page], {}, costs), "a", 100.0, BUDGET)
    assert (busy.code, busy.retry_after_s) == ("key_busy", 4)
    # "b" itself is under its share: sent.
    assert decide(Snapshot(a_pages[:1] + [b_page], {}, costs), "b", 100.0, BUDGET) is None
    # "b" refused a moment ago and waiting: "a" is held to its share as if "b" were in.
    waiting = decide(Snapshot(a_pages, {"b": 110.0}, costs), "a", 100.0, BUDGET)
    assert waiting.code == "key_busy"


def test_a_document_in_flight_holds_its_next_page_too():
    gate = admission.Admission(LocalLedger(), BUDGET)
    gate.ledger.observe(DOCUMENT, 9.0)
    admitted = gate.admit("a", [DOCUMENT, DOCUMENT])
    # Admitted is in: its first page and the next, before the first is sent.
    snapshot = gate.ledger.snapshot(time.time())
    assert sorted(e.cost_s for e in snapshot.entries) == [9.0, 9.0]
    # 9 s running, 9 s next: a third document page (9 s) no longer fits in 24 s.
    with pytest.raises(errors.Overloaded) as refusal:
        gate.admit("b", [DOCUMENT])
    assert refusal.value.retry_after == 3
    with admitted.page(0):
        assert len(gate.ledger.snapshot(time.time()).entries) == 2
    with admitted.page(1):                                            # its last page
        assert len(gate.ledger.snapshot(time.time()).entries) == 1
    assert gate.ledger.snapshot(time.time()).entries == []
    # Each answered page was measured: 9 s + 0.2 x (a few ms - 9 s).
    assert gate.ledger.snapshot(time.time()).page_s[DOCUMENT] < 9.0 * 0.8 ** 2 + 0.1


def test_a_refused_document_is_pointed_to_jobs_and_counted():
    gate = admission.Admission(LocalLedger(), BUDGET)
    gate.ledger.add("x", Entry("a", 20.0, time.time(), time.time() + 30))
    with pytest.raises(errors.Overloaded) as refusal:
        gate.admit("b", [DOCUMENT] * 3)
    assert "POST /api/jobs" in str(refusal.value.detail)
    assert refusal.value.status_code == 503 and refusal.value.retry_after >= 5
    # "b" holds its share while it waits.
    assert set(gate.ledger.snapshot(time.time()).waiting) == {"b"}


def test_the_page_cost_sample_converges_from_either_side():
    # A page that took 10 s after an estimated 6 s wait cost 4 s; one that waited longer
    # than it took (the estimate was too high) is counted at a fifth of its latency.
    assert service_sample_s(10.0, 6.0) == pytest.approx(4.0)
    assert service_sample_s(10.0, 12.0) == pytest.approx(2.0)


def test_a_job_page_waits_until_it_fits_in_half_the_room():
    gate = admission.Admission(LocalLedger(), BUDGET)
    gate.ledger.observe(DOCUMENT, 1.0)
    far = time.time() + 60
    for token in ("running", "queued", "queued2", "queued3"):    # ~16 s + 1 > 24 / 2
        gate.ledger.add(token, Entry("a", 4.0, time.time(), far))

    def release():                                                # ~8 s + 1 <= 12
        gate.ledger.remove("queued2")
        gate.ledger.remove("queued3")

    released = threading.Timer(0.5, release)
    released.start()
    started = time.monotonic()
    with gate.job_page(DOCUMENT, give_up_s=30, poll_s=0.05):
        waited = time.monotonic() - started
        callers = [e.caller for e in gate.ledger.snapshot(time.time()).entries]
    released.join()
    assert 0.4 < waited < 10
    assert callers.count(admission.JOBS) == 1                        # in the ledger meanwhile
    # Nothing drains: it goes anyway after give_up_s.
    for token in ("queued2", "queued3"):
        gate.ledger.add(token, Entry("a", 4.0, time.time(), far))
    started = time.monotonic()
    with gate.job_page(DOCUMENT, give_up_s=0.2, poll_s=0.05):
        assert 0.2 <= time.monotonic() - started < 5
    # Nothing in flight: a page bigger than half the room goes at once.
    idle = admission.Admission(LocalLedger(), BUDGET)
    started = time.monotonic()
    with idle.job_page(DOCUMENT, give_up_s=30, poll_s=0.05):        # its 9 s, alone
        assert time.monotonic() - started < 1


def test_a_page_that_timed_out_is_measured_and_a_failure_is_not():
    gate = admission.Admission(LocalLedger(), BUDGET)
    with pytest.raises(InferenceTimeout), gate.admit("a", [DOCUMENT]).page(0):
        time.sleep(0.2)
        raise InferenceTimeout(0.2)
    # The first sample is the kind's cost: at least the time it ran (nothing was ahead).
    assert 0.2 <= gate.ledger.snapshot(time.time()).page_s[DOCUMENT] < 5
    with pytest.raises(InferenceFailed), gate.admit("a", [IMAGE]).page(0):
        raise InferenceFailed("crashed")
    assert IMAGE not in gate.ledger.snapshot(time.time()).page_s
    assert gate.ledger.snapshot(time.time()).entries == []
