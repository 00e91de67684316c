"""Admission under load on the real gateway (issue 38): gunicorn's threads share the ledger in
the stack's Redis (the jobs' broker), in front of the session's Triton. The deadline is sized
from what one page takes on this machine, so the tests assert behaviour, not times: a burst is
answered or refused at once (never timed out), one key's burst leaves room for another key, a
job's pages wait instead of being refused, and /api/ready tells the load. Here because this
is the stack with the broker (tests/jobs/conftest.py)."""

from __future__ import annotations

import io
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from PIL import Image

from ocr_api.admission import DOCUMENT, IMAGE
from ocr_api.admission.ledger import Entry, LocalLedger, RedisLedger
from ocr_embedded.broker import RedisServer
from ocr_inference.client import TritonClient
from tests.helpers import IMAGES, blank_pdf, ensemble_inferences

from .conftest import running_jobs_stack

pytestmark = pytest.mark.triton

ENGLISH_PNG = (IMAGES / "english.png").read_bytes()
#: Pages that fit in the admitted share of the deadline (the deadline is sized for it).
FIT = 4


@pytest.fixture(scope="module")
def loaded_stack(triton, tmp_path_factory):
    """The jobs stack with 12 gunicorn threads (more requests at once than fit), admission at
    50 % of a deadline of 2 x FIT pages, a page's time measured here first on Triton."""
    client = TritonClient(triton.grpc_url, timeout_s=180)
    client.infer(ENGLISH_PNG, {"long_side": 640})                 # shapes met once
    started = time.perf_counter()
    client.infer(ENGLISH_PNG, {"long_side": 640, "text_threshold": 0.69})
    page_s = max(time.perf_counter() - started, 0.3)
    client.close()
    deadline_s = round(2 * FIT * page_s, 2)
    with running_jobs_stack(triton, tmp_path_factory.mktemp("admission-stack"), threads=12,
                            TRITON_TIMEOUT_S=str(deadline_s),
                            OCR_ADMISSION_PERCENT="50") as stack:
        send(stack, "a", -1)              # the ledger's first measurement of an image
        yield stack


def send(stack, key: str, number: int) -> tuple[int, str, str | None, float]:
    """One /api/ocr of english.png at 640, its text threshold a hair different per ``number``
    (Triton's response cache answers nothing twice; the work is the same): status, error code,
    Retry-After, and when it finished (perf_counter). ``number`` 0 would send the default
    threshold, which other modules' requests of english.png at 640 may have cached."""
    assert number != 0
    response = stack.request("POST", f"/api/ocr?long_side=640&text_threshold="
                                     f"{0.7 + number / 1e6:.6f}", key, body=ENGLISH_PNG,
                             headers={"Content-Type": "image/png"})
    code = response.json()["error"]["code"] if response.status != 200 else ""
    return response.status, code, response.headers.get("Retry-After"), time.perf_counter()


def test_a_burst_is_answered_or_refused_at_once_never_timed_out(loaded_stack, triton):
    before = ensemble_inferences(triton)
    audited = loaded_stack.query("SELECT COALESCE(MAX(id), 0) FROM ocr_api_ocrrequest")[0][0]
    with ThreadPoolExecutor(12) as pool:
        outcomes = list(pool.map(lambda n: send(loaded_stack, "quota", n), range(1, 13)))
    statuses = sorted(status for status, *_ in outcomes)
    assert set(statuses) == {200, 503}, outcomes              # no 504, no other failure
    refused = [o for o in outcomes if o[0] == 503]
    answered = [o for o in outcomes if o[0] == 200]
    assert {code for _, code, _, _ in refused} == {"overloaded"}
    assert all(retry_after and int(retry_after) >= 1 for _, _, retry_after, _ in refused)
    # Refused at once: every refusal came back before the first answer.
    assert max(done for *_, done in refused) < min(done for *_, done in answered)
    # Nothing read for nobody: Triton read exactly the requests answered.
    assert ensemble_inferences(triton, expected=before + len(answered)) - before == len(answered)
    # Every request audited with its code; the refused ones not charged to the quota.
    rows = dict(loaded_stack.query(
        "SELECT r.error_code, COUNT(*) FROM ocr_api_ocrrequest r JOIN ocr_api_apikey k ON "
        "k.id = r.api_key_id WHERE k.name = 'quota' AND r.id > ? GROUP BY r.error_code",
        audited))
    assert rows == {"": len(answered), "overloaded": len(refused)}
    assert loaded_stack.query("SELECT images FROM ocr_api_quotausage") == [(len(answered),)]


def test_one_keys_burst_does_not_starve_another_key(loaded_stack):
    stop = threading.Event()
    busy: list[tuple] = []
    numbers = iter(range(100, 10_000))
    lock = threading.Lock()

    def burst() -> None:
        while not stop.is_set():
            with lock:
                number = next(numbers)
            outcome = send(loaded_stack, "a", number)
            busy.append(outcome)
            if outcome[2]:                                   # refused: as a client should
                stop.wait(int(outcome[2]))

    threads = [threading.Thread(target=burst) for _ in range(8)]
    for thread in threads:
        thread.start()
    tries: list[tuple] = []
    try:
        while len([o for o in busy if o[0] == 200]) < 1:     # the burst is in
            time.sleep(0.05)
        for attempt in range(8):
            status, code, retry_after, _ = send(loaded_stack, "b", 20_000 + attempt)
            tries.append((status, code))
            if status == 200:
                break
            assert status == 503 and retry_after, tries
            time.sleep(int(retry_after))
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    assert tries[-1] == (200, ""), tries
    # The busy key was held to its share while the other waited, and nothing timed out.
    assert "key_busy" in {code for _, code, _, _ in busy}, busy
    assert {status for status, *_ in busy} <= {200, 429, 503}


def test_a_jobs_pages_wait_for_room_instead_of_being_refused(loaded_stack):
    with ThreadPoolExecutor(8) as pool:
        burst = pool.map(lambda n: send(loaded_stack, "a", 30_000 + n), range(8))
        created = loaded_stack.submit(blank_pdf(3))
        statuses = {status for status, *_ in burst}
    assert created.status == 202, created.data
    job = loaded_stack.wait(created.json()["id"])
    assert (job["status"], job["progress"]["done"]) == ("succeeded", 3)
    # The synchronous requests were answered or refused, never timed out (while a job page
    # is in flight the jobs are a caller too, so key "a" may be held to its share).
    assert statuses <= {200, 429, 503}


def two_page_pdf(number: int) -> bytes:
    """english.png twice as a 2-page PDF, at 100 + ``number`` dpi (no two the same bytes)."""
    page = Image.open(IMAGES / "english.png").convert("RGB")
    out = io.BytesIO()
    page.save(out, format="PDF", save_all=True, append_images=[page],
              resolution=100.0 + number)
    return out.getvalue()


def test_documents_at_once_are_all_answered_then_a_photo_at_once(loaded_stack):
    """Three users' two 2-page documents at once: each is answered or refused with
    Retry-After (and then answered), none times out; a photo right after is answered."""
    def user(number: int) -> list[tuple]:
        tries = []
        for _ in range(10):
            response = loaded_stack.request("POST", "/api/ocr", "a", body=two_page_pdf(number),
                                            headers={"Content-Type": "application/pdf"})
            retry_after = response.headers.get("Retry-After")
            tries.append((response.status, retry_after))
            if response.status != 503:
                break
            assert retry_after, tries
            time.sleep(int(retry_after))
        return tries

    with ThreadPoolExecutor(6) as pool:
        documents = list(pool.map(user, range(6)))
    assert [tries[-1][0] for tries in documents] == [200] * 6, documents
    refusals = [status for tries in documents for status, _ in tries[:-1]]
    assert set(refusals) <= {503}
    assert send(loaded_stack, "b", 40_000)[0] == 200


def test_ready_tells_the_load(loaded_stack):
    response = loaded_stack.http.request("GET", loaded_stack.url("/api/ready"))
    load = response.json()["load"]
    assert response.status == 200
    assert (load["pages_in_flight"], load["backlog_s"], load["saturated"]) == (0, 0.0, False)
    deadline_s = float(loaded_stack.env["TRITON_TIMEOUT_S"])
    assert load["limit_s"] == pytest.approx(deadline_s / 2, abs=0.1)
    # The image cost was measured (not the default's 2 s): about a page's time here.
    assert 0 < load["page_s"][IMAGE] < deadline_s and load["page_s"][DOCUMENT] > 0


@pytest.mark.parametrize("ledger_kind", ["local", "redis"])
def test_both_ledgers_keep_the_same_books(ledger_kind, tmp_path):
    redis = RedisServer(tmp_path / "redis").start() if ledger_kind == "redis" else None
    try:
        ledger = RedisLedger(redis.url) if redis else LocalLedger()
        ledger.add("t1", Entry("a", 2.0, 100.0, 130.0))
        ledger.add("t2", Entry("b", 3.0, 101.0, 110.0))
        ledger.add("t3", Entry("c", 3.0, 101.0, 140.0))       # its owner died: no renewal
        ledger.renew(["t1", "t2"], 119.0)
        ledger.start("t1", 119.5)
        ledger.hold_share("c", 125.0)
        ledger.hold_share("c", 115.0)                  # a shorter hold keeps the longer one
        ledger.hold_share("d", 105.0)
        ledger.observe(IMAGE, 4.0)
        ledger.observe(IMAGE, 2.0)
        snapshot = ledger.snapshot(120.0)
        assert snapshot.pages == {"t1": Entry("a", 2.0, 100.0, 130.0, started_at=119.5)}
        assert snapshot.waiting == {"c": 125.0}
        assert snapshot.page_s == pytest.approx({IMAGE: 3.6})
        ledger.remove("t1")
        assert ledger.snapshot(120.0).entries == []
    finally:
        if redis:
            redis.stop()
