"""Slow clients against the gateway, with and without the buffering proxy in front.

``connections`` slowloris clients (500) each send a request line and then one header line
every ``interval_s`` (5 s), never finishing; one whose connection is closed (nginx's header
timeout) connects again at once, so that many stay open. They come from 20 loopback addresses
(127.0.0.2...). Meanwhile ``GET /api/health`` is sent from 127.0.0.1 ``samples`` times (each
on a new connection, 10 s client timeout) and one OCR request (``img_1.jpg``, long_side 640)
is timed (Triton's response cache off). Each health series stops after 60 s. Run once behind
the proxy (``make serve``'s setup) and once on gunicorn directly
(the setup before it), each with a quiet baseline first.

    python -m bench.slow_clients [--connections 500] [--samples 200]
"""

from __future__ import annotations

import argparse
import selectors
import socket
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

from bench.load import percentile
from ocr_embedded.stack import REPO_ROOT, Stack, engine_cache_dir

IMAGE = (REPO_ROOT / "tests" / "data" / "images" / "img_1.jpg").read_bytes()


class Slowloris:
    """Keeps ``count`` slow connections open to ``port`` until stopped (one thread)."""

    def __init__(self, port: int, count: int, interval_s: float, addresses: int = 20):
        self.port, self.count, self.interval_s = port, count, interval_s
        self.sources = [f"127.0.0.{2 + n % addresses}" for n in range(count)]
        self.reconnects = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _open(self, source: str) -> socket.socket | None:
        try:
            sock = socket.create_connection(("127.0.0.1", self.port), timeout=5,
                                            source_address=(source, 0))
            sock.sendall(b"GET /api/health HTTP/1.1\r\nHost: localhost\r\n")
            sock.setblocking(False)
            return sock
        except OSError:
            return None

    def open_now(self) -> int:
        return sum(1 for sock in self._socks if sock is not None)

    def _run(self) -> None:
        selector = selectors.DefaultSelector()
        self._socks = [self._open(source) for source in self.sources]
        for index, sock in enumerate(self._socks):
            if sock is not None:
                selector.register(sock, selectors.EVENT_READ, index)
        next_header = time.monotonic() + self.interval_s
        line = 0
        while not self._stop.is_set():
            for key, _ in selector.select(timeout=0.2):     # closed by the server
                index = key.data
                selector.unregister(key.fileobj)
                key.fileobj.close()
                self.reconnects += 1
                sock = self._socks[index] = self._open(self.sources[index])
                if sock is not None:
                    selector.register(sock, selectors.EVENT_READ, index)
            if time.monotonic() >= next_header:
                line += 1
                for sock in self._socks:
                    if sock is not None:
                        try:
                            sock.send(f"X-Slow-{line}: a\r\n".encode())
                        except OSError:
                            pass
                next_header += self.interval_s
        for sock in self._socks:
            if sock is not None:
                sock.close()

    def __enter__(self):
        self._thread.start()
        time.sleep(self.interval_s + 1)          # all connected, one header line sent
        return self

    def __exit__(self, *exc_info):
        self._stop.set()
        self._thread.join(timeout=30)


def health_latencies(base: str, samples: int, budget_s: float = 60.0) -> tuple[list[float], int,
                                                                           int]:
    """Latencies (ms) of the answered health checks, how many got no answer in 10 s, and how
    many were sent (fewer than ``samples`` when ``budget_s`` ran out)."""
    latencies, failed, sent = [], 0, 0
    deadline = time.monotonic() + budget_s
    for _ in range(samples):
        if time.monotonic() > deadline:
            break
        sent += 1
        started = time.perf_counter()
        try:
            with urllib.request.urlopen(f"{base}/api/health", timeout=10) as response:
                response.read()
            latencies.append((time.perf_counter() - started) * 1e3)
        except (OSError, urllib.error.URLError):
            failed += 1
        time.sleep(0.02)
    return latencies, failed, sent


def ocr_latency(base: str, key: str) -> str:
    request = urllib.request.Request(f"{base}/api/ocr?long_side=640", data=IMAGE, headers={
        "Authorization": f"Api-Key {key}", "Content-Type": "image/jpeg"})
    started = time.perf_counter()
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            response.read()
            status = response.status
    except urllib.error.HTTPError as error:
        status = error.code
    except OSError as error:
        return f"no answer in 60 s ({type(error).__name__})"
    return f"{status} in {(time.perf_counter() - started) * 1e3:.0f} ms"


def measure(name: str, base: str, port: int, key: str, args) -> list[str]:
    rows = []
    for label, slow in (("quiet", 0), (f"{args.connections} slow connections", args.connections)):
        if slow:
            loris = Slowloris(port, slow, args.interval_s).__enter__()
        try:
            latencies, failed, sent = health_latencies(base, args.samples)
            ocr = ocr_latency(base, key)
            open_now = loris.open_now() if slow else 0
        finally:
            if slow:
                loris.__exit__()
        p50 = f"{percentile(latencies, 50):.1f}" if latencies else "-"
        p99 = f"{percentile(latencies, 99):.1f}" if latencies else "-"
        rows.append(f"| {name} | {label} | {open_now} | {p50} | {p99} | {failed} / {sent}"
                    f" | {ocr} |")
        print(rows[-1], flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Slow clients with and without the proxy.")
    parser.add_argument("--connections", type=int, default=500)
    parser.add_argument("--interval-s", type=float, default=5.0)
    parser.add_argument("--samples", type=int, default=200)
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="ocr-slow-"))
    table = ["| setup | load | slow connections open | health p50 ms | health p99 ms | "
             "health unanswered | OCR request |", "| --- | --- | ---: | ---: | ---: | ---: | --- |"]
    # make serve's setup; the response cache off: the OCR request is computed, not answered
    # from the cache.
    with Stack(work, cache_bytes=0, engine_cache=engine_cache_dir(), state=work, workers=2,
               threads=4, gateway_env={"GUNICORN_ACCESS_LOG": str(work / "access.log")}) as stack:
        key = stack.key
        ocr_latency(stack.url, key)                      # warm
        table += measure("nginx + gunicorn (make serve)", stack.url, stack.port, key, args)
        gunicorn = stack.gunicorn
        table += measure("gunicorn alone (before)", gunicorn.url, gunicorn.port, key, args)
    print("\n".join(table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
