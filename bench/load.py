"""Closed-loop load: ``concurrency`` client threads send a bounded number of requests.

Each thread has its own caller (its own HTTP connection or gRPC channel) and sends its next
request as soon as the previous one is answered. Request ``i`` uses image ``i mod n``, so
every mode sees the same images in the same order. A run stops after ``requests`` requests,
or when ``budget_s`` seconds have passed (requests in flight then still complete).
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Protocol


@dataclass(frozen=True)
class BenchImage:
    """One test image, with its multipart body built once.

    Attributes:
        name: file name.
        data: the encoded file.
        multipart: ``multipart/form-data`` body with the file as field ``image``.
        boundary: the body's boundary string.
    """

    name: str
    data: bytes
    multipart: bytes
    boundary: str

    @classmethod
    def from_bytes(cls, name: str, data: bytes) -> "BenchImage":
        boundary = "benchboundary7d1a0c2e9f"
        body = b"".join([
            f"--{boundary}\r\n".encode(),
            f'Content-Disposition: form-data; name="image"; filename="{name}"\r\n'.encode(),
            b"Content-Type: application/octet-stream\r\n\r\n",
            data,
            f"\r\n--{boundary}--\r\n".encode(),
        ])
        return cls(name, data, body, boundary)


@dataclass
class Sample:
    """One request's outcome.

    Attributes:
        image: image name.
        latency_ms: client-side wall time of the request, ms.
        ok: answered with boxes.
        error: what went wrong when not ok.
        boxes: number of boxes found.
        sent_bytes, received_bytes: serialized inference messages between the API process
            and Triton for this request (None where the mode does not measure it).
        client_compute_ms: computation done in the client/API process (split mode's
            preprocessing and box extraction), ms.
        server_timing_ms: timing the server reported, if any.
        started_s: start time relative to the run's start, s.
        body: the HTTP answer's JSON (HTTP modes).
    """

    image: str
    latency_ms: float = 0.0
    ok: bool = True
    error: str = ""
    boxes: int = 0
    sent_bytes: int | None = None
    received_bytes: int | None = None
    client_compute_ms: float = 0.0
    server_timing_ms: dict | None = None
    started_s: float = 0.0
    body: dict | None = None


class Caller(Protocol):
    """Sends one request for one image; one caller per client thread."""

    def __call__(self, image: BenchImage) -> Sample: ...

    def close(self) -> None: ...


@dataclass
class RunResult:
    """All samples of one (mode, concurrency) run and its wall time (s)."""

    concurrency: int
    requested: int
    samples: list[Sample] = field(default_factory=list)
    wall_s: float = 0.0
    budget_hit: bool = False


def run_closed_loop(callers: list[Caller], images: list[BenchImage], requests: int,
                    budget_s: float, offset: int = 0) -> RunResult:
    """Drive ``len(callers)`` threads until ``requests`` are done or ``budget_s`` elapse.

    Args:
        callers: one per client thread, already connected.
        images: request ``i`` sends ``images[(offset + i) % len(images)]``.
        requests: how many requests to send in total.
        budget_s: no new request starts after this many seconds.
        offset: first image index.
    """
    result = RunResult(concurrency=len(callers), requested=requests)
    lock = threading.Lock()
    counter = iter(range(requests))
    started = time.perf_counter()
    deadline = started + budget_s

    def worker(caller: Caller) -> None:
        while True:
            with lock:
                if time.perf_counter() > deadline:
                    result.budget_hit = True
                    return
                index = next(counter, None)
            if index is None:
                return
            image = images[(offset + index) % len(images)]
            t0 = time.perf_counter()
            try:
                sample = caller(image)
            except Exception as exc:  # noqa: BLE001 - a failed request is a result too
                sample = Sample(image=image.name, ok=False, error=f"{type(exc).__name__}: {exc}")
            t1 = time.perf_counter()
            sample.latency_ms = (t1 - t0) * 1e3
            sample.started_s = t0 - started
            with lock:
                result.samples.append(sample)

    threads = [threading.Thread(target=worker, args=(c,), daemon=True) for c in callers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    result.wall_s = time.perf_counter() - started
    return result


def percentile(values: list[float], q: float) -> float:
    """The ``q``-th percentile (0..100) with linear interpolation (numpy's default)."""
    if not values:
        return math.nan
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100.0
    low, high = math.floor(position), math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def make_callers(factory: Callable[[], Caller], count: int) -> list[Caller]:
    """``count`` callers from ``factory`` (each connects before the timed run starts)."""
    return [factory() for _ in range(count)]
