"""Overload (``make soak SOAK_ARGS=--overload``): issue 38's load shapes and targets, with
admission off (what the gateway did before it) and on (the default), side by side.

Each setting runs on ``make serve``'s setup (:class:`~ocr_embedded.stack.Stack` with the
broker, whose Redis holds the admission ledger that gunicorn's workers share), at the defaults
(``TRITON_TIMEOUT_S`` 30, 2 gunicorn workers x 8 threads), Triton's response cache off,
``OCR_ADMISSION_PERCENT`` 0 then its default. Clients honour ``Retry-After`` as a well-behaved
client does (at most :data:`MAX_TRIES` tries). The shapes:

1. **documents**: three users each sending two 2-page scans (OCRmyPDF's ``linn.pdf`` page
   twice) at once; then **a photo** sent right after their answers, then **a turned 4-page
   document** (the page at /Rotate 0, 90, 180, 270, as OCRmyPDF's ``cardinal.pdf``): read, or
   refused at once with 413 where the sync page limit measured here is lower.
2. **photos**: 16 users sending 2 photos each (the shared images at their default size),
   against one user sending them one after another: answered per second.
3. **low load**: one user, 10 photos one after another: p50.

A photo and a dense page are sent first, once (a fresh Triton meets their shapes for the
first time: the dense page takes longer than its deadline then, printed apart). Printed per
setting: 504s, refusals (and the slowest one, and whether each had
``Retry-After``), the photo's status and seconds, the answered rate and its ratio, the p50,
and Triton's count of ensemble inferences against the requests answered 200 (nothing read for
nobody). Targets: 0 x 504; every refusal <= 2 s with ``Retry-After``; the photo 200 within
10 s; ratio >= 0.8; count equal; low-load p50 within noise of admission off.

    python -m bench.overload [--photos 2] [--users 16]

On a fast CPU the targets can hold by margin alone: run it on the slowest CPU there is, or make
one slow, e.g. ``taskset -c 0 make soak SOAK_ARGS=--overload`` (one core), or a cgroup's CPU
quota (``cpu.cfs_quota_us``) around the command. The table names the CPU and the detector the
defaults served.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import tritonclient.grpc as grpcclient

from bench import triton_stats
from bench.jobs import Client, Reply, linn_copies
from bench.load import percentile
from bench.machine import describe_cpu
from bench.report import publish
from ocr_contract.tensors import DETECTOR_ENSEMBLES
from ocr_embedded.stack import REPO_ROOT, Stack, engine_cache_dir

PHOTOS = [(REPO_ROOT / "tests" / "data" / "images" / name).read_bytes()
          for name in ("img_1.jpg", "img_2.jpg", "img_3.jpg", "img_4.jpg", "img_5.jpg")]
#: Tries a client makes when refused with Retry-After.
MAX_TRIES = 8
#: Targets of issue 38.
MAX_REFUSAL_S = 2.0
MAX_PHOTO_AFTER_S = 10.0
MIN_RATE_RATIO = 0.8


@dataclass
class Tally:
    """Every answer of one shape: the final ones, and the refusals on the way."""

    final: list[Reply] = field(default_factory=list)
    refusals: list[Reply] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def send(self, client: Client, body: bytes, content_type: str) -> Reply:
        """POST ``/api/ocr``, again after each refusal's ``Retry-After``."""
        for _ in range(MAX_TRIES):
            reply = client.request("POST", "/api/ocr", body, content_type)
            retry_after = reply.headers.get("Retry-After")
            if reply.status not in (429, 503) or not retry_after:
                break
            with self.lock:
                self.refusals.append(reply)
            time.sleep(int(retry_after))
        with self.lock:
            self.final.append(reply)
        return reply

    def count(self, status: int) -> int:
        return sum(reply.status == status for reply in self.final)


def error_code(reply: Reply) -> str:
    """`` <code>`` of an error answer, or nothing for a 200."""
    return "" if reply.status == 200 else f" {reply.json().get('error', {}).get('code', '?')}"


def at_once(jobs: list) -> float:
    """Run the callables in threads at once; the seconds until the last ended."""
    started = time.perf_counter()
    threads = [threading.Thread(target=job) for job in jobs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.perf_counter() - started


def inferences(stack: Stack) -> int:
    """Triton's count of ensemble inferences so far, both detectors' pipelines together."""
    client = grpcclient.InferenceServerClient(stack.embedded_triton.grpc_url)
    try:
        stats = triton_stats.snapshot(client)
        return sum(stats.get(name, {}).get("inference_count", 0)
                   for name in DETECTOR_ENSEMBLES.values())
    finally:
        client.close()


def run_setting(percent: int, users: int, photos: int) -> dict:
    """The three shapes on a fresh stack with ``OCR_ADMISSION_PERCENT=percent``."""
    work = Path(tempfile.mkdtemp(prefix=f"ocr-overload-{percent}-"))
    print(f"admission {percent or 'off'}: state and logs in {work}", flush=True)
    with Stack(work, cache_bytes=0, engine_cache=engine_cache_dir(), state=work, jobs=True,
               gateway_env={"OCR_ADMISSION_PERCENT": str(percent)}) as stack:
        client = Client(stack.url, stack.key)
        # Warm-up: a fresh Triton meets a photo's and a dense page's shapes for the first time
        # (the dense page then takes longer than its deadline on 2 cores: printed apart).
        client.request("POST", "/api/ocr", PHOTOS[0], "image/jpeg")
        cold = client.request("POST", "/api/ocr", linn_copies(1, first=90), "application/pdf")
        before = inferences(stack)
        documents = Tally()
        at_once([lambda n=n: documents.send(client, linn_copies(2, first=2 * n),
                                            "application/pdf") for n in range(6)])
        photo_after = Tally()
        photo_after.send(client, PHOTOS[1], "image/jpeg")
        turned = Tally()
        turned.send(client, linn_copies(4, first=40, rotations=(0, 90, 180, 270)),
                    "application/pdf")
        alone = Tally()
        alone_s = at_once([lambda: [alone.send(client, PHOTOS[n % len(PHOTOS)], "image/jpeg")
                                    for n in range(photos * 2)]])
        crowd = Tally()
        crowd_s = at_once([lambda u=u: [crowd.send(client, PHOTOS[(u + n) % len(PHOTOS)],
                                                   "image/jpeg") for n in range(photos)]
                           for u in range(users)])
        low = Tally()
        for n in range(10):
            low.send(client, PHOTOS[n % len(PHOTOS)], "image/jpeg")
        read = inferences(stack) - before
        detector = client.request("GET", "/api/models").json()["detectors"]["default"]
    tallies = (documents, photo_after, turned, alone, crowd, low)
    answered = sum(tally.count(200) for tally in tallies)
    # A document answered 200 is one ensemble inference per page.
    answered_inferences = answered + documents.count(200) + 3 * turned.count(200)
    refusals = [reply for tally in tallies for reply in tally.refusals]
    return {
        "warm-up: first dense page": f"{cold.status} in {cold.seconds:.1f} s",
        "documents": f"{documents.count(200)} x 200, {documents.count(504)} x 504",
        "detector (default)": detector,
        "photo after": f"{photo_after.final[0].status} in {photo_after.final[0].seconds:.1f} s",
        "turned 4-page document": f"{turned.final[0].status}{error_code(turned.final[0])} in "
                                  f"{turned.final[0].seconds:.1f} s",
        "504 (all shapes)": sum(tally.count(504) for tally in tallies),
        "refusals": len(refusals),
        "slowest refusal s": max((r.seconds for r in refusals), default=0.0),
        "refusals without Retry-After": sum("Retry-After" not in r.headers for r in refusals),
        "alone answered/s": alone.count(200) / alone_s,
        f"{users} users answered/s": crowd.count(200) / crowd_s,
        "low-load p50 s": percentile([r.seconds for r in low.final if r.status == 200], 50),
        "Triton inferences / answered": f"{read} / {answered_inferences}",
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Overload shapes (make soak SOAK_ARGS="
                                                 "--overload).")
    parser.add_argument("--users", type=int, default=16)
    parser.add_argument("--photos", type=int, default=2, help="photos per user")
    parser.add_argument("--output", type=Path,
                        default=REPO_ROOT / "bench" / "results" / "overload.md")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    os.environ.setdefault("DJANGO_SECRET_KEY", "bench-only")
    off = run_setting(0, args.users, args.photos)
    on = run_setting(80, args.users, args.photos)
    for result in (off, on):
        crowd = result[f"{args.users} users answered/s"]
        result["rate ratio"] = crowd / result["alone answered/s"]
    lines = [f"# Overload ({time.strftime('%Y-%m-%d')}; {describe_cpu()})", "",
             "| | admission off | admission on (80 %) | target |", "|---|---|---|---|"]
    targets = {"504 (all shapes)": "0", "slowest refusal s": f"<= {MAX_REFUSAL_S:g}",
               "refusals without Retry-After": "0",
               "photo after": f"200 within {MAX_PHOTO_AFTER_S:g} s",
               "turned 4-page document": "200, or 413 at once",
               "rate ratio": f">= {MIN_RATE_RATIO}", "Triton inferences / answered": "equal",
               "low-load p50 s": "within noise"}
    for name in on:
        cells = [f"{v:.2f}" if isinstance(v, float) else str(v)
                 for v in (off[name], on[name])]
        lines.append(f"| {name} | {cells[0]} | {cells[1]} | {targets.get(name, '')} |")
    table = "\n".join(lines)
    publish(table, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
