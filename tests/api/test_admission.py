"""Admission with a deadline (ocr_api.admission, issue 38): the decision from a ledger
snapshot, the ledger, and job pages waiting instead of being refused. The real gateway under
load (gunicorn's threads sharing the ledger in Redis) is tests/jobs/test_admission_stack.py."""

from __future__ import annotations

import threading
import time

import pytest

from ocr_api import admission, errors
from ocr_inference.errors import InferenceFailed, InferenceTimeout
from ocr_api.admission.ledger import LEASE_S, Entry, LocalLedger, Snapshot
from ocr_api.admission.policy import (DEFAULT_PAGE_S, DOCUMENT, IMAGE, Budget, backlog_s,
                                      decide, has_turn, too_slow, working_scale)

BUDGET = Budget(deadline_s=30.0, percent=80, parallel=1)      # limit 24 s


def entry(caller: str, cost_s: float, admitted_at: float,
          started_at: float | None = None) -> Entry:
    return Entry(caller, cost_s, admitted_at, admitted_at + 30.0, started_at)


def snap(entries: list[Entry], waiting: dict | None = None,
         page_s: dict | None = None) -> Snapshot:
    """A snapshot of ``entries`` (tokens "0", "1", ...)."""
    return Snapshot({str(n): e for n, e in enumerate(entries)}, waiting or {}, page_s or {})


# -- the decision ------------------------------------------------------------------------

def test_backlog_is_what_is_in_flight_less_what_the_running_pages_did():
    snapshot = snap([entry("a", 4.0, 100.0, started_at=100.0), entry("b", 4.0, 101.0),
                     entry("a", 4.0, 102.0)], page_s={IMAGE: 4.0})
    # The running page has run 3 of its 4 s: 1 + 4 + 4 left.
    assert backlog_s(snapshot, 103.0, parallel=1) == pytest.approx(9.0)
    # Two at a time, the second running since 101: 1 + 2 + 4 left, shared by two.
    two = snap([entry("a", 4.0, 100.0, 100.0), entry("b", 4.0, 101.0, 101.0),
                entry("a", 4.0, 102.0)], page_s={IMAGE: 4.0})
    assert backlog_s(two, 103.0, parallel=2) == pytest.approx(3.5)
    # A page past its estimate counts as done, never as negative work.
    assert backlog_s(snapshot, 200.0, parallel=1) == pytest.approx(8.0)
    assert backlog_s(snap([]), 0.0, parallel=1) == 0.0


def test_pages_take_their_turns_in_the_order_they_were_admitted():
    snapshot = snap([entry("a", 4.0, 100.0, started_at=100.0), entry("b", 4.0, 101.0),
                     entry("c", 4.0, 102.0)])
    assert [has_turn(snapshot, token, parallel=1) for token in "012"] == [True, False, False]
    assert [has_turn(snapshot, token, parallel=2) for token in "012"] == [True, True, False]
    # The running page answered: the next in line goes.
    snapshot.pages.pop("0")
    assert [has_turn(snapshot, token, parallel=1) for token in "12"] == [True, False]


def test_two_turns_in_one_moment_go_in_the_order_admitted_and_a_reservation_holds_none():
    # Two slots free at once (the pages before ended together): the later page waits until
    # the earlier one has been sent, whichever of their waiters looks first.
    both_free = snap([entry("a", 4.0, 100.0), entry("a", 4.0, 101.0)])
    assert [has_turn(both_free, token, parallel=2) for token in "01"] == [True, False]
    both_free.pages["0"] = entry("a", 4.0, 100.0, started_at=102.0)
    assert has_turn(both_free, "1", parallel=2)
    # A document's reserved next page holds a place but is never sent: it does not hold the
    # pages behind it back.
    reserved = Entry("a", 4.0, 101.0, 131.0, reserved=True)
    ahead = snap([entry("a", 4.0, 100.0, started_at=100.0), reserved, entry("b", 4.0, 102.0)])
    assert has_turn(ahead, "2", parallel=3)


def test_a_page_that_would_not_fit_is_refused_with_the_seconds_until_it_would():
    # 5 pages of 5 s sent just now: 25 s ahead, + 5 s = 30 > 24.
    snapshot = snap([entry("a", 5.0, 100.0) for _ in range(5)], page_s={IMAGE: 5.0})
    refusal = decide(snapshot, "a", 100.0, BUDGET)
    assert (refusal.code, refusal.retry_after_s, refusal.backlog_s) == ("overloaded", 6, 25.0)
    # Three of them: 15 + 5 = 20 <= 24, sent.
    three = snap(snapshot.entries[:3], page_s={IMAGE: 5.0})
    assert decide(three, "a", 100.0, BUDGET) is None


def test_before_any_measurement_a_page_costs_the_default():
    image_s = DEFAULT_PAGE_S[IMAGE]
    ahead = int(BUDGET.limit_s // image_s) - 1              # 11 pages of 2 s: 22 + 2 = 24
    entries = [entry("a", image_s, 100.0) for _ in range(ahead)]
    assert decide(snap(entries), "a", 100.0, BUDGET) is None
    assert decide(snap(entries + entries[:1]), "a", 100.0, BUDGET).code == "overloaded"
    # A document page costs more: 22 s ahead + 9 > 24.
    assert decide(snap(entries), "a", 100.0, BUDGET, DOCUMENT).code == "overloaded"
    # Alone, a page that takes longer than the limit is sent: waiting would not help.
    assert decide(snap([], page_s={DOCUMENT: 30.0}), "a", 100.0, BUDGET, DOCUMENT) is None
    # Measured, the kind's own average counts: 22 + 1.5 <= 24.
    measured = snap(entries, page_s={DOCUMENT: 1.5})
    assert decide(measured, "a", 100.0, BUDGET, DOCUMENT) is None


def test_alone_a_key_may_use_all_the_room_with_others_its_share():
    # 24 s / 4 s = 6 pages fit; "a" has 4 in flight (16 s ahead, + 4 = 20: fits).
    costs = {IMAGE: 4.0}
    a_pages = [entry("a", 4.0, 100.0) for _ in range(4)]
    b_page = entry("b", 4.0, 100.0)
    assert decide(snap(a_pages, page_s=costs), "a", 100.0, BUDGET) is None
    # "b" has one in flight too: two callers, 3 pages each; "a" holds 4.
    busy = decide(snap(a_pages + [b_page], page_s=costs), "a", 100.0, BUDGET)
    assert (busy.code, busy.retry_after_s) == ("key_busy", 4)
    # "b" itself is under its share: sent.
    assert decide(snap(a_pages[:1] + [b_page], page_s=costs), "b", 100.0, BUDGET) is None
    # "b" refused a moment ago and waiting: "a" is held to its share as if "b" were in.
    waiting = decide(snap(a_pages, {"b": 110.0}, costs), "a", 100.0, BUDGET)
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


def test_admitted_pages_are_sent_one_at_a_time_each_deadline_from_its_admission():
    """Three threads admitted at once: their calls never overlap (Triton would run them
    together, all finishing late), they go in the order admitted, and each is given what is
    left of its deadline, which runs from its admission."""
    gate = admission.Admission(LocalLedger(), Budget(deadline_s=2.0, percent=100, parallel=1))
    gate.ledger.observe(IMAGE, 0.3)                   # 3 x 0.3 s fit in 2 s: all admitted
    calls, lock = [], threading.Lock()

    def read(name: str):
        with gate.admit(name, [IMAGE]).page(0) as call:
            with lock:
                calls.append(("start", name, call.timeout_s))
            time.sleep(0.6)
            with lock:
                calls.append(("end", name, None))

    threads = []
    for name in "abc":
        threads.append(threading.Thread(target=read, args=(name,)))
        threads[-1].start()
        time.sleep(0.05)                     # admitted in this order
    for thread in threads:
        thread.join()
    assert [(kind, name) for kind, name, _ in calls] == [
        ("start", "a"), ("end", "a"), ("start", "b"), ("end", "b"), ("start", "c"), ("end", "c")]
    left = {name: left_s for kind, name, left_s in calls if kind == "start"}
    assert 1.8 < left["a"] <= 2.0 and 0.6 < left["c"] < 0.95     # c waited 1.2 s of its 2
    assert gate.ledger.snapshot(time.time()).pages == {}


def test_a_request_whose_deadline_passes_in_line_is_never_sent():
    gate = admission.Admission(LocalLedger(), Budget(deadline_s=1.0, percent=100, parallel=1,
                                                     job_deadline_s=60.0))
    gate.ledger.observe(DOCUMENT, 0.2)
    gate.ledger.observe(IMAGE, 0.2)
    running = threading.Event()

    def job_page():
        with gate.job_page(DOCUMENT, give_up_s=0):
            running.set()
            time.sleep(1.5)                  # within a job page's deadline, past a request's

    job = threading.Thread(target=job_page)
    job.start()
    running.wait(5)
    started, sent = time.monotonic(), []
    with pytest.raises(InferenceTimeout):
        with gate.admit("a", [IMAGE]).page(0):
            sent.append(True)
    waited = time.monotonic() - started
    job.join()
    assert sent == [] and 0.9 < waited < 1.4
    assert gate.ledger.snapshot(time.time()).pages == {}


def test_a_page_whose_owner_died_holds_no_turn_and_no_backlog():
    ledger = LocalLedger()
    ledger.add("dead", Entry("a", 9.0, time.time() - LEASE_S - 1, time.time() + 60))
    ledger.add("alive", Entry("b", 4.0, time.time(), time.time() + 60))
    snapshot = ledger.snapshot(time.time())
    assert list(snapshot.pages) == ["alive"]
    assert has_turn(snapshot, "alive", parallel=1)
    assert backlog_s(snapshot, time.time(), parallel=1) == pytest.approx(4.0)


def test_a_job_page_waits_until_it_fits_in_half_the_room():
    gate = admission.Admission(LocalLedger(), BUDGET)
    gate.ledger.observe(DOCUMENT, 1.0)
    far = time.time() + 60
    for token in ("running", "queued", "queued2", "queued3"):    # ~16 s + 1 > 24 / 2
        gate.ledger.add(token, Entry("a", 4.0, time.time(), far))

    def release():                                                # ~8 s + 1 <= 12
        gate.ledger.remove("queued2")
        gate.ledger.remove("queued3")

    def answer():                                                 # then its turn comes
        gate.ledger.remove("running")
        gate.ledger.remove("queued")

    timers = [threading.Timer(0.5, release), threading.Timer(1.0, answer)]
    for timer in timers:
        timer.start()
    started = time.monotonic()
    with gate.job_page(DOCUMENT, give_up_s=30, poll_s=0.05) as call:
        waited = time.monotonic() - started
        callers = [e.caller for e in gate.ledger.snapshot(time.time()).entries]
    for timer in timers:
        timer.join()
    assert 0.9 < waited < 4
    assert callers == [admission.JOBS]                               # in the ledger meanwhile
    # A job page's deadline, from its admission: not the request's 30 s.
    assert BUDGET.job_deadline_s - 4 < call.timeout_s <= BUDGET.job_deadline_s
    # Nothing drains: it goes anyway after give_up_s.
    for token in ("queued2", "queued3"):
        gate.ledger.add(token, Entry("a", 4.0, time.time(), far))
    threading.Timer(0.5, lambda: [gate.ledger.remove(t) for t in ("queued2", "queued3")]).start()
    started = time.monotonic()
    with gate.job_page(DOCUMENT, give_up_s=0.2, poll_s=0.05):
        assert 0.2 <= time.monotonic() - started < 5
    # Nothing in flight: a page bigger than half the room goes at once.
    idle = admission.Admission(LocalLedger(), BUDGET)
    started = time.monotonic()
    with idle.job_page(DOCUMENT, give_up_s=30, poll_s=0.05):        # its 9 s, alone
        assert time.monotonic() - started < 1


def test_a_documents_page_limit_follows_what_a_page_costs_here():
    """The proxy waits 2 x 30 + 30 s, of which 30 may go waiting for a thread: 60 s for the
    pages, each counted at 1.5 times the measured average."""
    gate = admission.Admission(LocalLedger(), BUDGET)
    assert gate.sync_page_limit(4) == 4                   # not measured: 9 s, 60 / 13.5
    gate.ledger.observe(DOCUMENT, 17.0)                   # a dense page, 2-core AVX2 server
    assert gate.sync_page_limit(4) == 2                   # 60 / 25.5
    gate.ledger.observe(DOCUMENT, 200.0)
    assert gate.sync_page_limit(4) == 1                   # one page: its own deadline rules
    fast = admission.Admission(LocalLedger(), BUDGET)
    fast.ledger.observe(DOCUMENT, 0.5)
    assert fast.sync_page_limit(4) == 4                   # never past OCR_MAX_PAGES


def test_an_answer_from_the_response_cache_is_not_a_pages_cost():
    gate = admission.Admission(LocalLedger(), BUDGET)
    gate.ledger.observe(IMAGE, 4.0)
    with gate.admit("a", [IMAGE]).page(0) as call:
        call.cached = True                   # milliseconds, whatever the page
    assert gate.ledger.snapshot(time.time()).page_s[IMAGE] == 4.0
    with gate.admit("a", [IMAGE]).page(0):
        pass                                 # computed: measured
    assert gate.ledger.snapshot(time.time()).page_s[IMAGE] < 4.0


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


# -- a larger working size (issue 54, item 4) ----------------------------------------------

def test_a_larger_working_size_costs_its_pixels_and_alone_too_slow_is_refused_to_jobs():
    assert working_scale(None) == 1.0
    assert working_scale(2560) == 4.0 and working_scale(1280) == working_scale(640) == 1.0
    costs = {IMAGE: 7.0, DOCUMENT: 5.0}          # a photo on a 2-core AVX2 server; a page
    measured = snap([], page_s=costs)
    # At 1600 px (1.5625 x 7 = 10.9 s) it fits; at 2560 (28 s) it would not, even alone.
    assert too_slow(measured, BUDGET, [IMAGE], [working_scale(1600)]) is None
    assert decide(measured, "a", 100.0, BUDGET, IMAGE, working_scale(1600)) is None
    refusal = too_slow(measured, BUDGET, [IMAGE], [working_scale(2560)])
    assert (refusal.code, refusal.retry_after_s, refusal.page_s) == ("page_too_slow", 0, 28.0)
    # Any page of the request counts, not only the first: a page (5 s) then a photo, at 2560.
    assert too_slow(measured, BUDGET, [DOCUMENT, IMAGE], [4.0, 4.0]).page_s == 28.0
    # At the default size a page alone is always sent (its cost is measured only when read).
    assert too_slow(snap([], page_s={IMAGE: 28.0}), BUDGET, [IMAGE], [1.0]) is None
    assert decide(snap([], page_s={IMAGE: 28.0}), "a", 100.0, BUDGET, IMAGE) is None
    # Its scaled cost counts in the backlog check too: 10 s ahead + 10.9 s fits, + 17.5 not.
    ahead = snap([entry("b", 10.0, 100.0)], page_s={IMAGE: 7.0})
    assert decide(ahead, "a", 100.0, BUDGET, IMAGE, working_scale(1600)) is None
    assert decide(ahead, "a", 100.0, BUDGET, IMAGE, working_scale(2024)).code == "overloaded"


def test_a_page_too_slow_is_a_413_to_jobs_and_a_larger_page_is_not_the_kinds_cost():
    gate = admission.Admission(LocalLedger(), BUDGET)
    gate.ledger.observe(IMAGE, 7.0)
    with pytest.raises(errors.PageTooSlow) as refusal:
        gate.admit("a", [IMAGE], [4.0])
    assert refusal.value.status_code == 413 and refusal.value.retry_after is None
    assert refusal.value.field == "long_side"
    assert "about 28 s" in str(refusal.value.detail) and "POST /api/jobs" in str(
        refusal.value.detail)
    assert refusal.value.link == '</api/jobs>; rel="alternate"'
    assert gate.ledger.snapshot(time.time()).entries == []            # nothing written
    # Admitted at 1.5625 x: written at its scaled cost, and not measured (its decoding and
    # reading do not scale with its pixels: its time says nothing of a default-size page).
    admitted = gate.admit("a", [IMAGE], [1.5625])
    assert [e.cost_s for e in gate.ledger.snapshot(time.time()).entries] == [10.9375]
    with admitted.page(0):
        time.sleep(0.1)
    assert gate.ledger.snapshot(time.time()).page_s[IMAGE] == 7.0
    # A batch whose second page is the slow one is refused before anything is written.
    with pytest.raises(errors.PageTooSlow):
        gate.admit("a", [IMAGE, IMAGE], [1.0, 4.0])
    assert gate.ledger.snapshot(time.time()).entries == []
    # A job's page at 4 x is never refused: it waits for room, with the same costing.
    with gate.job_page(IMAGE, give_up_s=0.0, scale=4.0):
        assert [e.cost_s for e in gate.ledger.snapshot(time.time()).entries] == [28.0]
