"""Jobs end to end on the real broker (redis-server), real worker processes, a real gunicorn
and the session's embedded Triton: the answer, its parts and formats, cancel, expiry, keys'
isolation, idempotency, webhooks, fair order, a worker SIGKILLed mid-page, and the broker and
gateway restarted mid-job."""

from __future__ import annotations

import io
import json
import os
import signal
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pikepdf
import pytest
from standardwebhooks import Webhook

from tests.image_factory import images_pdf, text_page

from .conftest import manage

pytestmark = [pytest.mark.slow, pytest.mark.triton]

WORDS = [["alpha", "beta"], ["gamma", "delta"], ["epsilon", "zeta"], ["theta", "kappa"]]


def document(pages: int) -> bytes:
    """A PDF of ``pages`` pages of a few printed words each, new every time (never an answer
    Triton's response cache already holds: the tests time pages)."""
    tag = uuid.uuid4().hex[:6]
    return images_pdf([text_page([WORDS[n % len(WORDS)], [f"page {n + 1}", tag]])
                       for n in range(pages)])


def test_a_jobs_detector_is_the_one_it_was_accepted_with(jobs_stack):
    """detector=db: every page read by the DB pipeline, as /api/ocr reads the document."""
    data = document(2)
    job = jobs_stack.submit(data, "?long_side=640&detector=db").json()
    job = jobs_stack.wait(job["id"])
    assert job["status"] == "succeeded", job
    whole = jobs_stack.request("GET", f"/api/jobs/{job['id']}/result").json()
    assert whole["model"]["name"] == "ensemble_ocr_db"           # and no page another's
    assert all("model" not in page for page in whole["pages"])
    direct = jobs_stack.request("POST", "/api/ocr?long_side=640&detector=db", body=data,
                                headers={"Content-Type": "application/pdf"}).json()
    assert whole["text"] == direct["text"] and "gamma" in whole["text"]


def test_job_end_to_end(jobs_stack):
    data = document(3)
    response = jobs_stack.submit(data, "?long_side=640")
    assert response.status == 202, response.data
    job = response.json()
    assert response.headers["Location"] == f"/api/jobs/{job['id']}"
    assert int(response.headers["Retry-After"]) >= 1
    assert job["status"] == "queued" and job["progress"] == {"done": 0, "total": 3}

    job = jobs_stack.wait(job["id"])
    assert job["status"] == "succeeded", job
    assert job["progress"] == {"done": 3, "total": 3}
    assert job["started"] and job["finished"] and job["expires_at"] > job["finished"]

    direct = jobs_stack.request("POST", "/api/ocr?long_side=640", body=data,
                                headers={"Content-Type": "application/pdf"}).json()
    whole = jobs_stack.request("GET", f"/api/jobs/{job['id']}/result?pages=1-3").json()
    assert whole["next"] is None and whole["pages_range"] == [1, 3]
    strip = lambda body, *keys: {k: v for k, v in body.items() if k not in keys}  # noqa: E731
    assert strip(whole, "request_id", "job_id", "pages_range", "next") == strip(
        direct, "request_id", "timing_ms")
    assert "gamma" in whole["text"]

    part = jobs_stack.request("GET", f"/api/jobs/{job['id']}/result?pages=1-2")
    body = part.json()
    assert [p["page"] for p in body["pages"]] == [1, 2]
    assert body["next"] == f"/api/jobs/{job['id']}/result?pages=3-3"
    assert 'rel="next"' in part.headers["Link"]
    last = jobs_stack.request("GET", body["next"]).json()
    assert [p["page"] for p in last["pages"]] == [3] and last["next"] is None

    text = jobs_stack.request("GET", f"/api/jobs/{job['id']}/result?pages=1-3&format=text")
    assert text.headers["Content-Type"].startswith("text/plain")
    assert text.data.decode() == direct["text"] + "\n"
    hocr = jobs_stack.request("GET", f"/api/jobs/{job['id']}/result?pages=2&format=hocr")
    assert b"ocr_page" in hocr.data and b"gamma" in hocr.data and b"alpha" not in hocr.data
    pdf = jobs_stack.request("GET", f"/api/jobs/{job['id']}/result?format=pdf")
    assert pdf.headers["Content-Type"] == "application/pdf"
    assert len(pikepdf.open(io.BytesIO(pdf.data)).pages) == 3

    cut = jobs_stack.request("GET", f"/api/jobs/{job['id']}/result?pages=2-50").json()
    assert cut["pages_range"] == [2, 3] and cut["next"] is None
    bad = jobs_stack.request("GET", f"/api/jobs/{job['id']}/result?pages=4-9")
    assert bad.status == 400 and bad.json()["error"] == {
        "code": "invalid_parameter", "message": "pages: the document has pages 1-3.",
        "field": "pages"}
    # One audit row, sizes only.
    [(status, pages, chars)] = jobs_stack.query(
        "SELECT http_status, page_count, char_count FROM ocr_api_ocrrequest "
        "WHERE endpoint = 'jobs' AND request_id = (SELECT request_id FROM ocr_jobs_job "
        "WHERE id = ?)", job["id"].replace("-", ""))
    assert (status, pages) == (202, 3) and chars > 0
    assert all(d == 1 for _, _, d, _ in jobs_stack.pages(job["id"])), (jobs_stack.pages(job["id"]), jobs_stack.workers_log())


def test_only_the_creating_key_sees_a_job(jobs_stack):
    job = jobs_stack.submit(document(1), "?long_side=64&recognize=false").json()
    for method, path in [("GET", ""), ("GET", "/result"), ("DELETE", "")]:
        response = jobs_stack.request(method, f"/api/jobs/{job['id']}{path}", key="b")
        assert response.status == 404, (method, path)
        assert response.json()["error"]["code"] == "not_found"
    assert jobs_stack.wait(job["id"])["status"] == "succeeded"
    unfinished = jobs_stack.request("GET", "/api/jobs/00000000-0000-0000-0000-000000000000")
    assert unfinished.status == 404


def test_idempotency_key(jobs_stack):
    data = document(1)
    headers = {"Idempotency-Key": "order-17"}
    first = jobs_stack.submit(data, "?long_side=64", headers=headers)
    again = jobs_stack.submit(data, "?long_side=64", headers=headers)
    assert first.status == again.status == 202
    assert first.json()["id"] == again.json()["id"]
    other = jobs_stack.submit(data, "?long_side=96", headers=headers)
    assert other.status == 422 and other.json()["error"]["code"] == "idempotency_key_reused"
    assert len(jobs_stack.query("SELECT id FROM ocr_jobs_job WHERE idempotency_key = ?",
                                "order-17")) == 1
    jobs_stack.wait(first.json()["id"])


def test_cancel_gives_back_the_quota_then_delete(jobs_stack):
    response = jobs_stack.submit(document(12), "?long_side=640", key="quota")
    assert response.status == 202, response.data
    job = response.json()
    [(used,)] = jobs_stack.query("SELECT images FROM ocr_api_quotausage")
    assert used == 12
    cancelled = jobs_stack.request("DELETE", f"/api/jobs/{job['id']}", key="quota")
    assert cancelled.status == 200 and cancelled.json()["status"] == "cancelled"
    assert cancelled.json()["error"]["code"] == "cancelled"
    time.sleep(3)                       # pages already in the broker drain without being read
    done = jobs_stack.job(job["id"], "quota")["progress"]["done"]
    assert done < 12
    [(used,)] = jobs_stack.query("SELECT images FROM ocr_api_quotausage")
    assert used == done
    assert jobs_stack.request("GET", f"/api/jobs/{job['id']}/result",
                              key="quota").json()["error"]["code"] == "job_not_finished"
    folder = jobs_stack.var / "jobs" / job["id"]
    assert folder.exists()
    assert jobs_stack.request("DELETE", f"/api/jobs/{job['id']}", key="quota").status == 204
    assert not folder.exists()
    assert jobs_stack.request("GET", f"/api/jobs/{job['id']}", key="quota").status == 404


def test_expired_jobs_are_purged(jobs_stack):
    job = jobs_stack.submit(document(1), "?long_side=64&recognize=false").json()
    jobs_stack.wait(job["id"])
    folder = jobs_stack.var / "jobs" / job["id"]
    assert (folder / "upload").exists()
    manage(["purge_jobs"], jobs_stack.env)
    assert jobs_stack.job(job["id"])["status"] == "succeeded"        # not expired yet
    jobs_stack.query("UPDATE ocr_jobs_job SET expires_at = '2000-01-01 00:00:00' WHERE id = ?",
                     job["id"].replace("-", ""))
    assert "Deleted 1 " in manage(["purge_jobs"], jobs_stack.env)
    assert not folder.exists()
    assert jobs_stack.pages(job["id"]) == []
    assert jobs_stack.request("GET", f"/api/jobs/{job['id']}").status == 404


class Receiver:
    def __init__(self):
        self.requests = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                receiver.requests.append((dict(self.headers.items()), body))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook?token=t"


def test_webhook_is_delivered_signed(jobs_stack):
    refused = jobs_stack.submit(document(1), "?callback_url=https://169.254.169.254/x", key="b")
    assert refused.status == 400 and refused.json()["error"]["field"] == "callback_url"

    receiver = Receiver()
    try:
        response = jobs_stack.submit(document(1), f"?long_side=64&callback_url={receiver.url}",
                                     key="b")
        assert response.status == 202, response.data
        job = response.json()
        secret = job["webhook_secret"]
        assert secret.startswith("whsec_")
        assert jobs_stack.wait(job["id"], "b")["status"] == "succeeded"
        deadline = time.monotonic() + 30
        while not receiver.requests and time.monotonic() < deadline:
            time.sleep(0.1)
        [(headers, body)] = receiver.requests
        event = Webhook(secret).verify(body, headers)
        assert event["type"] == "job.succeeded" and event["data"]["id"] == job["id"]
        assert "text" not in json.dumps(event["data"])
        # The secret is shown once: the next job with a webhook does not show it.
        again = jobs_stack.submit(document(1), f"?long_side=64&callback_url={receiver.url}",
                                  key="b").json()
        assert "webhook_secret" not in again
        jobs_stack.wait(again["id"], "b")
    finally:
        receiver.server.shutdown()


def test_a_second_keys_short_job_is_not_stuck_behind_a_long_one(jobs_stack):
    long = jobs_stack.submit(document(16), "?long_side=320", key="a").json()
    time.sleep(1)
    short = jobs_stack.submit(document(1), "?long_side=320", key="b").json()
    short = jobs_stack.wait(short["id"], "b")
    assert jobs_stack.job(long["id"])["status"] in ("queued", "running")
    long = jobs_stack.wait(long["id"])
    assert short["finished"] < long["finished"]
    assert long["status"] == "succeeded"


def test_worker_sigkilled_mid_page_loses_nothing(jobs_stack):
    job = jobs_stack.submit(document(4), "?long_side=1280").json()
    deadline = time.monotonic() + 120
    victim = None
    while victim is None and time.monotonic() < deadline:
        running = [row for row in jobs_stack.pages(job["id"])
                   if row[1] == "queued" and row[2] == 1 and row[3]]
        if running:
            victim = running[0]
        else:
            time.sleep(0.02)
    assert victim is not None, jobs_stack.pages(job["id"])
    number, _, _, pid = victim
    restarts = jobs_stack.workers.restarts
    os.kill(pid, signal.SIGKILL)
    job = jobs_stack.wait(job["id"], timeout_s=300)
    assert job["status"] == "succeeded", job
    assert job["progress"] == {"done": 4, "total": 4}
    pages = {n: (status, deliveries) for n, status, deliveries, _ in jobs_stack.pages(job["id"])}
    assert all(status == "done" for status, _ in pages.values())
    assert pages[number][1] == 2            # read again once after the kill, never more
    assert all(d <= 2 for _, d in pages.values())
    assert jobs_stack.workers.restarts > restarts


def test_broker_and_gateway_restarted_mid_job(jobs_stack):
    job = jobs_stack.submit(document(8), "?long_side=640").json()
    deadline = time.monotonic() + 120
    while jobs_stack.job(job["id"])["progress"]["done"] < 1 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert jobs_stack.job(job["id"])["status"] == "running"
    jobs_stack.redis.kill()
    jobs_stack.stop_gateway()
    time.sleep(3)
    jobs_stack.redis.start()
    jobs_stack.start_gateway()
    job = jobs_stack.wait(job["id"], timeout_s=300)
    assert job["status"] == "succeeded", job
    assert job["progress"] == {"done": 8, "total": 8}
    assert all(status == "done" for _, status, _, _ in jobs_stack.pages(job["id"]))
