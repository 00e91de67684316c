"""The stack's memory and start time (``make bench-footprint``, issue 55), in one run.

``make serve``'s stack (:class:`~ocr_embedded.stack.Stack` with the broker and job workers: an
embedded Triton with its Python-backend stubs, gunicorn, nginx, redis-server, the job workers)
starts at the defaults with a fresh database; every process it starts descends from this one and
is sampled every half second (:class:`bench.memory.MemorySampler`: PSS, which splits shared
pages between the processes that map them, so the sum is what the stack occupies). Then it reads
a photo (``img_1.jpg``), a dense page (``linn.pdf``'s page at 200 dpi) and the same page turned
(``/Rotate 90``) through ``/api/ocr``, with the response cache off. Printed beside the issue's
targets, with the CPU's flags:

- the time to ready and to the first photo answered;
- the peak of the stack's PSS during the start (one sampling instant), and its PSS per process
  role and whole right after the three requests and at rest, once the networks have been idle
  ``OCR_ENGINE_RELEASE_IDLE_S`` seconds and given back their inferences' memory
  (:class:`ocr_pipeline.engines.IdleRelease`); the target is judged at rest.

The engine cache is ``make serve``'s (``var/cache/openvino``: a restart, engines compiled and
choices made); ``--cold`` gives the run an empty one (the first start: every precision timed,
every shape compiled).

    python -m bench.footprint [--cold]
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from ocr_pipeline.engines import EngineOptions

from bench.jobs import Client, linn_copies
from bench.machine import describe_cpu
from bench.memory import MemorySampler
from bench.report import publish
from ocr_embedded.stack import REPO_ROOT, Stack, engine_cache_dir

IMAGES = REPO_ROOT / "tests" / "data" / "images"
GIB = 1024 ** 3
MIB = 1024 ** 2
#: Issue 55's targets.
MAX_PSS_AFTER_GIB = 2.5
MAX_PSS_START_GIB = 5.0
MAX_WARM_FIRST_PHOTO_S = 45.0
MAX_COLD_READY_S = 300.0
#: Seconds waited past the engines' idle time before the stack is measured at rest (the idle
#: thread looks every quarter of it).
REST_MARGIN_S = 20.0


def by_role(report: dict) -> dict[str, int]:
    """PSS bytes per process role of one :meth:`MemorySampler.phase_report` group taken right
    after :meth:`~MemorySampler.start_phase` (one sample: each peak is the value then), summed
    over the processes of a role (gunicorn's workers...)."""
    roles: dict[str, int] = defaultdict(int)
    for process in report["processes"]:
        roles[process["role"]] += process["peak_pss_bytes"]
    return dict(roles)


def markdown(cold: bool, ready_s: float, photo_s: float, requests: list[tuple],
             start_peak: int, after: dict[str, int], rest: dict[str, int],
             idle_s: float) -> str:
    """The report: times, the requests, PSS per role right after them and at rest, and the
    totals, each beside its target."""
    total = sum(rest.values())
    start = "first start (empty engine cache)" if cold else "restart (engine cache kept)"
    time_target = (f"ready ≤ {MAX_COLD_READY_S:g} s" if cold
                   else f"first photo ≤ {MAX_WARM_FIRST_PHOTO_S:g} s")
    met = (ready_s <= MAX_COLD_READY_S) if cold else (photo_s <= MAX_WARM_FIRST_PHOTO_S)
    lines = [f"# bench-footprint ({time.strftime('%Y-%m-%d')}; {describe_cpu()})", "",
             f"make serve's stack at the defaults, {start}, response cache off.", "",
             (f"- Ready in **{ready_s:.1f} s**; first photo answered **{photo_s:.1f} s** "
              f"after the start ({time_target}: {'met' if met else 'NOT met'})"),
             (f"- Peak PSS during the start: **{start_peak / GIB:.2f} GiB** (≤ "
              f"{MAX_PSS_START_GIB:g} GiB: "
              f"{'met' if start_peak <= MAX_PSS_START_GIB * GIB else 'NOT met'})"),
             (f"- PSS after a photo, a dense page and a turned page: "
              f"{sum(after.values()) / GIB:.2f} GiB right after, **{total / GIB:.2f} GiB** at "
              f"rest ({idle_s:g} s idle; ≤ {MAX_PSS_AFTER_GIB:g} GiB: "
              f"{'met' if total <= MAX_PSS_AFTER_GIB * GIB else 'NOT met'})"),
             "", "| request | status | seconds |", "|---|---|---|"]
    lines += [f"| {name} | {status} | {seconds:.1f} |" for name, status, seconds in requests]
    lines += ["", "| process | PSS right after (MiB) | PSS at rest (MiB) |", "|---|---|---|"]
    lines += [f"| {role} | {after.get(role, 0) / MIB:.0f} | {rest.get(role, 0) / MIB:.0f} |"
              for role in sorted(after.keys() | rest.keys(),
                                 key=lambda role: -rest.get(role, after.get(role, 0)))]
    lines.append(f"| **whole stack** | **{sum(after.values()) / MIB:.0f}** | "
                 f"**{total / MIB:.0f}** |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The stack's memory and start time (make "
                                                 "bench-footprint).")
    parser.add_argument("--cold", action="store_true",
                        help="an empty engine cache: the first start")
    parser.add_argument("--output", type=Path,
                        default=REPO_ROOT / "bench" / "results" / "footprint.md")
    args = parser.parse_args(argv)

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    work = Path(tempfile.mkdtemp(prefix="ocr-bench-footprint-"))
    print(f"bench-footprint: state and logs in {work}", flush=True)
    os.environ.setdefault("DJANGO_SECRET_KEY", "bench-only")
    cache = work / "engine-cache" if args.cold else engine_cache_dir()
    idle_s = EngineOptions.from_mapping({}).release_idle_s
    inputs = [("photo (img_1.jpg)", (IMAGES / "img_1.jpg").read_bytes(), "image/jpeg"),
              ("dense page (linn.pdf, 200 dpi)", linn_copies(1), "application/pdf"),
              ("the page turned (/Rotate 90)", linn_copies(1, first=1, rotations=(90,)),
               "application/pdf")]
    with MemorySampler(interval_s=0.5) as sampler:
        sampler.track("stack", os.getpid(), root=False)    # the stack, not this process
        started = time.perf_counter()
        with Stack(work, cache_bytes=0, engine_cache=cache, state=work, jobs=True) as stack:
            ready_s = time.perf_counter() - started
            start_peak = sampler.phase_report()["stack"]["peak_pss_sum_bytes"]
            print(f"ready in {ready_s:.1f} s; reading", flush=True)
            requests = []
            client = Client(stack.url, stack.key)
            for name, data, content_type in inputs:
                reply = client.request("POST", "/api/ocr", data, content_type)
                requests.append((name, reply.status, reply.seconds))
                if len(requests) == 1:
                    photo_s = time.perf_counter() - started
            sampler.start_phase()                 # the peaks from now: the values now
            after = by_role(sampler.phase_report()["stack"])
            print(f"waiting {idle_s + REST_MARGIN_S:g} s for the networks to rest", flush=True)
            time.sleep(idle_s + REST_MARGIN_S)
            sampler.start_phase()
            rest = by_role(sampler.phase_report()["stack"])
    publish(markdown(args.cold, ready_s, photo_s, requests, start_peak, after, rest, idle_s),
            args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
