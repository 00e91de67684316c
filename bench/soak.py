"""Soak (``make soak``): minutes of mixed valid and invalid uploads against the embedded setup.

The setup is ``make serve``'s (:class:`~ocr_embedded.stack.Stack`): an embedded Triton (kept
running by :class:`~ocr_embedded.supervisor.TritonSupervisor`), gunicorn with
``deploy/gunicorn.conf.py`` at 2 workers x 4 threads (the soak's) on loopback, and the
buffering proxy (nginx) in front; a fresh SQLite database. ``concurrency`` client threads (16)
send requests back to back through the proxy, each on its own keep-alive connection, for
``minutes`` after ``warmup_s`` of the same load. Half are valid uploads (test images at
``long_side=640``, text read), half invalid ones: with the API key, not an image (415), a
truncated JPEG (400), a bad parameter (400), no image (400), a declared body over the limit
(413), a ZIP of 1 MB (415, refused before its body is read), a 21 MiB body really sent (413);
and refused before authentication, a 225 KB PNG with a junk key and a 2 MB body without a key
(401, then 429 past the address's rate). The last four are the uploads that once cost a
neighbour a 502 (``gateway/unread_body.py``). Triton's response cache is off, so every valid
upload runs the whole pipeline. The inference deadline (``TRITON_TIMEOUT_S``) is
:data:`DEADLINE_S`: at this concurrency up to 8 valid uploads queue for Triton, and on a 2-core
machine (seconds per image) the default 30 s would turn that queue into 504s, which measures
the machine rather than the leaks and errors a soak looks for.

Prints the number of requests, the 5xx count, p50 / p99 latency, the resident memory (RSS) of
every gunicorn worker, tritonserver and every Python-backend stub right after the warm-up and
at the end, the audit rows written versus the requests with the key, and the counted refusals
versus the requests without a valid key (warm-up included). The targets: no 5xx, memory growth
under 10 % after warm-up, one audit row per request with the key, every refusal counted.

    python -m bench.soak [--minutes 10] [--concurrency 16] [--warmup-s 60]

With ``--overload``, overload's shapes and targets instead (:mod:`bench.overload`).
"""

from __future__ import annotations

import argparse
import http.client
import os
import sqlite3
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import psutil

from bench.load import BenchImage, percentile
from bench.memory import process_role
from bench.report import publish
from ocr_embedded.stack import REPO_ROOT, Stack, engine_cache_dir

IMAGES = REPO_ROOT / "tests" / "data" / "images"
#: Scene photos with Latin text (PP-OCR only; Tesseract's scripts cost several times more).
VALID_IMAGES = ("img_1.jpg", "img_2.jpg", "img_3.jpg", "img_4.jpg", "img_5.jpg")
VALID_QUERY = "long_side=640"
#: The inference deadline of the soak, seconds (see the module's docstring).
DEADLINE_S = 120


@dataclass(frozen=True)
class Kind:
    """One kind of request: its name, how to send it, and the status it should get."""

    name: str
    path: str
    body: bytes
    headers: dict
    expected: int
    #: sent with the API key: one audit row (else counted per address, RefusalCount)
    authenticated: bool = True


def request_kinds(key: str) -> list[Kind]:
    """The mix: every valid image once, and as many invalid requests."""
    auth = {"Authorization": f"Api-Key {key}"}
    kinds = []
    for name in VALID_IMAGES:
        image = BenchImage.from_bytes(name, (IMAGES / name).read_bytes())
        kinds.append(Kind(f"valid {name}", f"/api/ocr?{VALID_QUERY}", image.multipart,
                          {**auth, "Content-Type":
                           f"multipart/form-data; boundary={image.boundary}"}, 200))
    truncated = (REPO_ROOT / "tests" / "data" / "bad" / "truncated.jpg").read_bytes()
    kinds += [
        Kind("not an image", "/api/ocr", b"plain text, not an image" * 40,
             {**auth, "Content-Type": "image/png"}, 415),
        Kind("truncated jpeg", "/api/ocr", truncated, {**auth, "Content-Type": "image/jpeg"},
             400),
        Kind("bad parameter", "/api/ocr?long_side=9", (IMAGES / "img_1.jpg").read_bytes(),
             {**auth, "Content-Type": "image/jpeg"}, 400),
        Kind("no image", "/api/ocr", b"--b\r\nContent-Disposition: form-data; name=\"x\"\r\n\r\n1"
             b"\r\n--b--\r\n", {**auth, "Content-Type": "multipart/form-data; boundary=b"},
             400),
        Kind("over the limit", "/api/ocr", b"", {**auth, "Content-Type": "image/png",
                                                 "Content-Length": str(10**9)}, 413),
        Kind("a ZIP, 1 MB", "/api/ocr", b"PK\x03\x04" + bytes(10**6),
             {**auth, "Content-Type": "application/zip"}, 415),
        Kind("21 MiB sent", "/api/ocr", b"\x89PNG\r\n\x1a\n" + bytes(21 * 2**20),
             {**auth, "Content-Type": "image/png"}, 413),
        Kind("junk key, 225 KB", "/api/ocr", (IMAGES / "korean.png").read_bytes(),
             {"Authorization": "Api-Key junk.not-a-key", "Content-Type": "image/png"}, 401,
             authenticated=False),
        Kind("no key, 2 MB", "/api/ocr", b"\x89PNG\r\n\x1a\n" + bytes(2 * 10**6),
             {"Content-Type": "image/png"}, 401, authenticated=False),
    ]
    return kinds


@dataclass
class Outcome:
    kind: str
    status: int
    latency_ms: float
    error: str = ""
    authenticated: bool = True


def _send(conn: http.client.HTTPConnection, kind: Kind) -> int:
    headers = dict(kind.headers)
    if "Content-Length" in headers:   # declared, never sent: refused from the header
        conn.putrequest("POST", kind.path)
        for name, value in headers.items():
            conn.putheader(name, value)
        conn.endheaders()
    else:
        conn.request("POST", kind.path, body=kind.body, headers=headers)
    response = conn.getresponse()
    response.read()
    if response.getheader("Connection", "").lower() == "close":
        conn.close()
    return response.status


def drive(base_port: int, kinds: list[Kind], concurrency: int, seconds: float,
          offset: int = 0) -> list[Outcome]:
    """``concurrency`` threads send ``kinds`` round-robin for ``seconds``; every outcome."""
    outcomes: list[Outcome] = []
    lock = threading.Lock()
    deadline = time.monotonic() + seconds
    counter = iter(range(offset, 10**9))

    def worker() -> None:
        conn = http.client.HTTPConnection("127.0.0.1", base_port, timeout=3 * DEADLINE_S)
        while time.monotonic() < deadline:
            with lock:
                index = next(counter)
            # Valid and invalid alternate: every second request is a valid upload.
            valid = [k for k in kinds if k.expected == 200]
            invalid = [k for k in kinds if k.expected != 200]
            kind = valid[(index // 2) % len(valid)] if index % 2 == 0 else \
                invalid[(index // 2) % len(invalid)]
            started = time.perf_counter()
            try:
                status, error = _send(conn, kind), ""
            except (OSError, http.client.HTTPException) as exc:
                status, error = 0, f"{type(exc).__name__}: {exc}"
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", base_port,
                                                  timeout=3 * DEADLINE_S)
            outcome = Outcome(kind.name, status, (time.perf_counter() - started) * 1e3, error,
                              kind.authenticated)
            with lock:
                outcomes.append(outcome)
        conn.close()

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(concurrency)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return outcomes


def memory(roots: dict[str, int]) -> dict[tuple[str, int], int]:
    """``{(role, pid): RSS bytes}`` of every process under the given root pids."""
    found = {}
    for root in roots.values():
        try:
            parent = psutil.Process(root)
            processes = [parent, *parent.children(recursive=True)]
        except psutil.Error:
            continue
        for proc in processes:
            try:
                found[(process_role(proc), proc.pid)] = proc.memory_info().rss
            except psutil.Error:
                continue
    return found


def recorded(database: Path) -> tuple[int, int]:
    """``(audit rows, refusals counted before authentication)`` in the gateway's database."""
    with sqlite3.connect(database) as db:
        rows = db.execute("SELECT COUNT(*) FROM ocr_api_ocrrequest").fetchone()[0]
        counted = db.execute("SELECT COALESCE(SUM(count), 0) FROM ocr_api_refusalcount")
        return rows, counted.fetchone()[0]


def settled_records(database: Path, quiet_s: float = 3.0,
                    timeout_s: float = 120.0) -> tuple[int, int]:
    """:func:`recorded` once it has not changed for ``quiet_s`` (a row is written after its
    answer; a request a client gave up on may still be in a worker)."""
    deadline = time.monotonic() + timeout_s
    last, since = recorded(database), time.monotonic()
    while time.monotonic() < deadline and time.monotonic() - since < quiet_s:
        time.sleep(0.5)
        counts = recorded(database)
        if counts != last:
            last, since = counts, time.monotonic()
    return last


def report(outcomes: list[Outcome], sent: tuple[int, int], records: tuple[int, int],
           before: dict, after: dict, minutes: float, concurrency: int) -> str:
    """The soak's table, as Markdown.

    Args:
        sent: requests sent with the key and without a valid one, warm-up included.
        records: :func:`settled_records`: audit rows and counted refusals.
    """
    statuses = Counter(o.status for o in outcomes)
    latencies = [o.latency_ms for o in outcomes]
    valid = [o.latency_ms for o in outcomes if o.kind.startswith("valid")]
    unexpected = Counter((o.kind, o.status) for o in outcomes
                         if (o.kind.startswith("valid") and o.status != 200)
                         or o.status >= 500 or o.status == 0)
    lines = [
        f"Soak: {minutes:g} min at concurrency {concurrency} (after the warm-up), "
        f"half valid uploads ({VALID_QUERY}, text read), half invalid.",
        "",
        "| requests | 5xx | no answer | p50 ms | p99 ms | valid p50 ms | valid p99 ms |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        f"| {len(outcomes)} | {sum(n for s, n in statuses.items() if s >= 500)} | "
        f"{statuses.get(0, 0)} | {percentile(latencies, 50):.0f} | "
        f"{percentile(latencies, 99):.0f} | {percentile(valid, 50):.0f} | "
        f"{percentile(valid, 99):.0f} |",
        "",
        "Statuses: " + ", ".join(f"{s}: {n}" for s, n in sorted(statuses.items())),
    ]
    if unexpected:
        lines.append("Unexpected: " + ", ".join(f"{k} -> {s}: {n}"
                                                 for (k, s), n in unexpected.most_common()))
    failures = Counter(o.error for o in outcomes if o.status == 0)
    if failures:
        lines.append("No answer: " + "; ".join(f"{e} ({n})" for e, n in failures.most_common(3)))
    lines += ["", "| process | pid | RSS after warm-up MiB | RSS at the end MiB | growth |",
              "| --- | ---: | ---: | ---: | ---: |"]
    for (role, pid), start in sorted(before.items()):
        end = after.get((role, pid))
        if end is None:
            lines.append(f"| {role} | {pid} | {start / 2**20:.1f} | (exited) | |")
            continue
        lines.append(f"| {role} | {pid} | {start / 2**20:.1f} | {end / 2**20:.1f} | "
                     f"{(end - start) / start * 100:+.1f} % |")
    for (role, pid), end in sorted(after.items()):
        if (role, pid) not in before:
            lines.append(f"| {role} (new) | {pid} | | {end / 2**20:.1f} | |")
    lines += ["", f"Audit rows: {records[0]}; requests sent with the key (warm-up included): "
                  f"{sent[0]} ({'equal' if records[0] == sent[0] else 'DIFFERENT'}). Refusals "
                  f"counted before authentication: {records[1]}; requests sent without a "
                  f"valid key: {sent[1]} ({'equal' if records[1] == sent[1] else 'DIFFERENT'})."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--overload" in argv:                 # issue 38's shapes: bench/overload.py
        from bench import overload
        return overload.main([arg for arg in argv if arg != "--overload"])
    parser = argparse.ArgumentParser(description="Soak the embedded setup (make soak).")
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--warmup-s", type=float, default=60.0)
    parser.add_argument("--output", type=Path, default=REPO_ROOT / "bench" / "results" /
                        "soak.md", help="where the table is written as well")
    args = parser.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="ocr-soak-"))
    print(f"Soak: state and logs in {work}", flush=True)
    os.environ.setdefault("DJANGO_SECRET_KEY", "soak-only")
    # As make serve: compiled OpenVINO models are cached in var/ (no compile in the soak); the
    # response cache is off, the inference deadline the soak's (the proxy reads it too).
    with Stack(work, supervised=True, cache_bytes=0, engine_cache=engine_cache_dir(),
               state=work, workers=2, threads=4,
               gateway_env={"TRITON_TIMEOUT_S": str(DEADLINE_S),
                            "GUNICORN_ACCESS_LOG": str(work / "access.log")}) as stack:
        triton, supervisor = stack.embedded_triton, stack.supervisor
        kinds = request_kinds(stack.key)
        print(f"Warm-up: {args.warmup_s:.0f} s at concurrency {args.concurrency}", flush=True)
        warmup = drive(stack.port, kinds, args.concurrency, args.warmup_s)
        roots = {"gunicorn": stack.gunicorn.pid, "triton": triton.process.pid}
        before = memory(roots)
        print(f"Soak: {args.minutes:g} min", flush=True)
        outcomes = drive(stack.port, kinds, args.concurrency, args.minutes * 60,
                         offset=len(warmup))
        roots["triton"] = triton.process.pid
        after = memory(roots)
        everything = warmup + outcomes
        without_key = sum(1 for o in everything if not o.authenticated)
        table = report(outcomes, (len(everything) - without_key, without_key),
                       settled_records(stack.database), before, after,
                       args.minutes, args.concurrency)
        if supervisor.restarts:
            table += f"\nTriton was restarted {supervisor.restarts} time(s) during the soak."
    publish(table, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
