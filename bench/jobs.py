"""Jobs and the synchronous page limit (``make bench-jobs``): issue 32's targets in one run.

The setup is ``make serve``'s (:class:`~ocr_embedded.stack.Stack` with ``jobs``): an embedded
Triton, the broker (redis-server), the job workers, gunicorn and nginx, at the defaults
(``TRITON_TIMEOUT_S``, ``TRITON_CONCURRENT_PAGES``, ``OCR_MAX_PAGES``, the workers' processes
and threads), a fresh SQLite database. Triton's response cache is off: the pages are copies of
one page, and a cached answer would time nothing.

The page is OCRmyPDF's ``linn.pdf`` (a 1985 product sheet scanned at 200 dpi, 731 words; its
transcription ``linn.txt``), every copy cropped by another point so that no two are the same
bytes. What it prints, each beside its target:

1. ``/api/ocr`` at the defaults: the page 4 times (status, seconds, F against ``linn.txt`` per
   page; target 200, F >= 0.90), and "cardinal" (the page at /Rotate 0, 90, 180, 270, as
   OCRmyPDF's ``cardinal.pdf`` shows it: target the same); one page more than ``OCR_MAX_PAGES``
   (target 413 ``too_many_pages`` in < 1 s, naming ``POST /api/jobs``).
2. ``--baseline-pages`` copies sent one by one to ``/api/ocr`` (one client), and ``--pages``
   copies as one job (``POST /api/jobs``, polled every 0.5 s until it succeeds): pages per
   second of each and their ratio (target >= 0.9), every page of the job read.
3. ``GET /api/jobs/<id>`` latency: p50 over the polls during the job and ``--polls`` more
   after it (target < 10 ms).

    python -m bench.jobs [--pages 100] [--baseline-pages 10] [--polls 200]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import signal
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pikepdf

from bench.load import percentile
from bench.machine import describe_cpu
from bench.report import publish
from ocr_contract.limits import MAX_PAGES
from ocr_embedded.stack import REPO_ROOT, Stack, engine_cache_dir
from ocr_pipeline.text_evaluation import score_text

DOCUMENTS = REPO_ROOT / "tests" / "data" / "documents"
LINN = DOCUMENTS / "ocrmypdf_linn.pdf"
LINN_WORDS = (DOCUMENTS / "ocrmypdf_linn.txt").read_text().split()
#: Targets of issue 32.
MIN_F = 0.90
MAX_REFUSAL_S = 1.0
MIN_RATE_RATIO = 0.9
MAX_POLL_P50_MS = 10.0
POLL_INTERVAL_S = 0.5


def linn_copies(count: int, first: int = 0, rotations: tuple[int, ...] = (0,)) -> bytes:
    """``linn.pdf``'s page ``count`` times as one PDF, copy ``i`` cropped by ``(first + i +
    1) / 100`` points (no two the same bytes, the same page to read: 1,000 copies crop 10
    points, a fifth of the margin) and turned by ``rotations[i % len(rotations)]`` degrees
    (the page's ``/Rotate``)."""
    source = pikepdf.open(LINN)
    out = pikepdf.new()
    for index in range(count):
        out.pages.append(source.pages[0])
        page = out.pages[-1]
        x0, y0, x1, y1 = (float(v) for v in source.pages[0].MediaBox)
        shrink = (1 + first + index) / 100
        page.MediaBox = pikepdf.Array([x0, y0, x1 - shrink, y1 - shrink])
        page.Rotate = rotations[index % len(rotations)]
    buffer = io.BytesIO()
    out.save(buffer)
    return buffer.getvalue()


@dataclass
class Reply:
    """One HTTP answer: status, client-side seconds, headers and body bytes."""

    status: int
    seconds: float
    headers: dict
    body: bytes

    def json(self) -> dict:
        return json.loads(self.body)


class Client:
    """The gateway through nginx, with one API key (``Authorization: Api-Key``)."""

    def __init__(self, url: str, key: str):
        self.url, self.key = url, key

    def request(self, method: str, path: str, body: bytes | None = None,
                content_type: str | None = None) -> Reply:
        headers = {"Authorization": f"Api-Key {self.key}"}
        if content_type:
            headers["Content-Type"] = content_type
        request = urllib.request.Request(self.url + path, data=body, method=method,
                                         headers=headers)
        started = time.perf_counter()
        try:
            with urllib.request.urlopen(request, timeout=600) as response:
                data, status, got = response.read(), response.status, dict(response.headers)
        except urllib.error.HTTPError as error:
            data, status, got = error.read(), error.code, dict(error.headers)
        return Reply(status, time.perf_counter() - started, got, data)


def page_scores(answer: Reply) -> list[float]:
    """F of each page's text against ``linn.txt`` (empty unless the answer is a 200)."""
    if answer.status != 200:
        return []
    return [score_text(page["text"], LINN_WORDS).f_score for page in answer.json()["pages"]]


def sync_rows(client: Client, max_pages: int) -> list[str]:
    """The table rows of part 1: linn x4 and cardinal through ``/api/ocr``, and a document of
    ``max_pages + 1`` pages refused."""
    rows = ["| document | status | seconds | F per page (>= 0.90) | target met |",
            "|---|---|---|---|---|"]
    for name, data in (("linn x4", linn_copies(4)),
                       ("cardinal (linn at 0/90/180/270)",
                        linn_copies(4, first=10, rotations=(0, 90, 180, 270)))):
        answer = client.request("POST", "/api/ocr", data, "application/pdf")
        scores = page_scores(answer)
        met = answer.status == 200 and len(scores) == 4 and min(scores) >= MIN_F
        code = "" if answer.status == 200 else f" {answer.json()['error']['code']}"
        rows.append(f"| {name} | {answer.status}{code} | {answer.seconds:.1f} | "
                    f"{' '.join(f'{s:.3f}' for s in scores) or '-'} | {'yes' if met else 'NO'} |")
    over = client.request("POST", "/api/ocr", linn_copies(max_pages + 1, first=20),
                          "application/pdf")
    error = over.json().get("error", {})
    met = (over.status == 413 and error.get("code") == "too_many_pages"
           and "POST /api/jobs" in error.get("message", "") and over.seconds < MAX_REFUSAL_S)
    rows.append(f"| linn x{max_pages + 1} (over OCR_MAX_PAGES) | {over.status} "
                f"{error.get('code', '')} | {over.seconds:.2f} (< {MAX_REFUSAL_S:g}) | - | "
                f"{'yes' if met else 'NO'} |")
    return rows


def one_by_one(client: Client, pages: int) -> tuple[float, int]:
    """Seconds for ``pages`` one-page documents sent one after another, and how many were
    answered 200."""
    started, answered = time.perf_counter(), 0
    for index in range(pages):
        answer = client.request("POST", "/api/ocr", linn_copies(1, first=100 + index),
                                "application/pdf")
        answered += answer.status == 200
    return time.perf_counter() - started, answered


def as_job(client: Client, pages: int) -> tuple[float, dict, list[float], list[float]]:
    """Seconds from ``POST /api/jobs`` until it was seen ended, the ended job, each poll's
    milliseconds, and each result page's F."""
    started = time.perf_counter()
    created = client.request("POST", "/api/jobs", linn_copies(pages, first=300),
                             "application/pdf")
    if created.status != 202:
        raise SystemExit(f"POST /api/jobs answered {created.status}: {created.body[:300]!r}")
    job, polls = created.json(), []
    while job["status"] in ("queued", "running"):
        time.sleep(POLL_INTERVAL_S)
        answer = client.request("GET", f"/api/jobs/{job['id']}")
        polls.append(answer.seconds * 1000)
        job = answer.json()
    elapsed = time.perf_counter() - started
    scores, path = [], job["links"]["result"] + "?pages=1-50"
    while job["status"] == "succeeded" and path:
        part = client.request("GET", path).json()
        scores += [score_text(page["text"], LINN_WORDS).f_score for page in part["pages"]]
        path = part["next"]
    return elapsed, job, polls, scores


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Jobs and the sync page limit (make "
                                                 "bench-jobs).")
    parser.add_argument("--pages", type=int, default=100, help="pages of the job")
    parser.add_argument("--baseline-pages", type=int, default=10,
                        help="pages sent one by one to /api/ocr for the rate to compare with")
    parser.add_argument("--polls", type=int, default=200,
                        help="GET /api/jobs/<id> after the job, for the polling p50")
    parser.add_argument("--output", type=Path,
                        default=REPO_ROOT / "bench" / "results" / "jobs.md")
    args = parser.parse_args(argv)

    # SIGTERM stops the run as Ctrl-C does, so the stack's servers are stopped on the way out.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    work = Path(tempfile.mkdtemp(prefix="ocr-bench-jobs-"))
    print(f"bench-jobs: state and logs in {work}", flush=True)
    os.environ.setdefault("DJANGO_SECRET_KEY", "bench-only")
    with Stack(work, supervised=True, cache_bytes=0, engine_cache=engine_cache_dir(),
               state=work, jobs=True) as stack:
        client = Client(stack.url, stack.key)
        max_pages = MAX_PAGES.read()          # the gateway's: it gets this environment
        print("1/3 the synchronous path", flush=True)
        rows = sync_rows(client, max_pages)
        print(f"2/3 {args.baseline_pages} pages one by one, then a {args.pages}-page job",
              flush=True)
        single_s, single_ok = one_by_one(client, args.baseline_pages)
        job_s, job, polls, scores = as_job(client, args.pages)
        print("3/3 polling", flush=True)
        polls += [client.request("GET", f"/api/jobs/{job['id']}").seconds * 1000
                  for _ in range(args.polls)]
    single_rate, job_rate = single_ok / single_s, job["progress"]["done"] / job_s
    ratio = job_rate / single_rate if single_rate else 0.0
    p50 = percentile(polls, 50)
    read = sum(score >= MIN_F for score in scores)
    lines = [f"# bench-jobs ({time.strftime('%Y-%m-%d')}; {describe_cpu()})", "",
             "## /api/ocr at the defaults", "", *rows, "",
             "## A job against the same pages one by one", "",
             "| | pages | seconds | pages/s |", "|---|---|---|---|",
             f"| /api/ocr one by one | {single_ok}/{args.baseline_pages} | {single_s:.1f} | "
             f"{single_rate:.3f} |",
             f"| POST /api/jobs ({job['status']}) | {job['progress']['done']}/{args.pages} | "
             f"{job_s:.1f} | {job_rate:.3f} |", "",
             f"- Job pages/s over one by one: **{ratio:.2f}x** (target >= {MIN_RATE_RATIO}; "
             f"{'met' if ratio >= MIN_RATE_RATIO else 'NOT met'})",
             f"- Result pages with F >= {MIN_F}: {read}/{len(scores)}",
             f"- GET /api/jobs/<id>: p50 **{p50:.1f} ms**, p99 {percentile(polls, 99):.1f} ms "
             f"over {len(polls)} polls (target p50 < {MAX_POLL_P50_MS:g} ms; "
             f"{'met' if p50 < MAX_POLL_P50_MS else 'NOT met'})"]
    table = "\n".join(lines)
    publish(table, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
