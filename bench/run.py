"""``python -m bench.run`` (``make bench``): benchmark the four serving modes on this machine.

One run starts an embedded Triton (response cache off) on free ports, the gateway
(gunicorn + Django, ``deploy/gunicorn.conf.py``) pointed at it (both with
:class:`ocr_embedded.stack.Stack`), and later the in-process baseline, then for each mode and
concurrency sends a bounded number of closed-loop requests with the test images and records
latency, throughput, bytes between API and Triton, Triton's per-model statistics and peak
memory. It prints a table and writes
``bench/results/bench-<time>.{json,md,png}``. See ``bench/README.md``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import shutil
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import tritonclient.grpc as grpcclient

from ocr_contract.parameters import LONG_SIDE
from ocr_contract.tensors import ENSEMBLE
from ocr_embedded.gunicorn_server import Gunicorn
from ocr_embedded.launcher import EmbeddedTriton
from ocr_embedded.stack import START_ERRORS, Stack

from . import report, triton_stats
from .load import BenchImage, make_callers, run_closed_loop
from .machine import describe_cpu
from .memory import MemorySampler, merge_reports
from .modes import MODE_DESCRIPTIONS, MODES, DirectCaller, HttpCaller, SplitCaller
from .pipeline import model_repository
from .traffic import ss_available, tcp_counters, tcp_delta

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_IMAGES = REPO_ROOT / "tests" / "data" / "images"
DEFAULT_OUT = Path(__file__).resolve().parent / "results"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Command-line options; ``--quick`` shrinks the defaults for a fast check."""
    parser = argparse.ArgumentParser(
        prog="python -m bench.run",
        description="Benchmark ensemble / direct / split / in-process serving on this machine.")
    parser.add_argument("--modes", default=",".join(MODES),
                        help="comma-separated subset of %(default)s")
    parser.add_argument("--concurrency", default=None,
                        help="comma-separated client counts (default 1,2,4,8; --quick: 1,4)")
    parser.add_argument("--requests", type=int, default=None,
                        help="requests per mode and concurrency, at least 2 x concurrency "
                             "(default 30: each of the 10 test images 3 times; --quick: 4)")
    parser.add_argument("--budget-s", type=float, default=180.0,
                        help="per mode and concurrency: no new request starts after this many "
                             "seconds (default %(default)s)")
    parser.add_argument("--images", type=Path, default=DEFAULT_IMAGES,
                        help="folder of test images (default tests/data/images)")
    parser.add_argument("--max-images", type=int, default=0,
                        help="use only the first N images, by name (0 = all)")
    parser.add_argument("--long-side", type=int, default=LONG_SIDE.default,
                        help="resize target of the long side, pixels (default %(default)s)")
    parser.add_argument("--workers", type=int, default=4,
                        help="gunicorn workers for the gateway and the in-process baseline")
    parser.add_argument("--threads", type=int, default=4, help="gunicorn threads per worker")
    parser.add_argument("--gpu-model-ms", type=float, default=20.0,
                        help="stated craft + refinenet compute per image on a GPU, ms, for the "
                             "GPU projection (default %(default)s; not measured here)")
    parser.add_argument("--network-gbps", type=float, default=10.0,
                        help="link speed for the projection across hosts, Gbit/s")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help="results folder (default bench/results)")
    parser.add_argument("--sample-interval-s", type=float, default=0.25,
                        help="memory sampling period, seconds")
    parser.add_argument("--keep-alive", action="store_true",
                        help="HTTP modes: each client reuses one connection (default: a new "
                             "connection per request, like many independent clients)")
    parser.add_argument("--quick", action="store_true",
                        help="a fast check: 4 requests per cell, concurrency 1 and 4")
    args = parser.parse_args(argv)
    args.modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = set(args.modes) - set(MODES)
    if unknown:
        parser.error(f"unknown modes: {', '.join(sorted(unknown))}")
    args.modes = [m for m in MODES if m in args.modes]
    if args.concurrency is None:
        args.concurrency = "1,4" if args.quick else "1,2,4,8"
    args.concurrency = sorted({int(c) for c in args.concurrency.split(",")})
    if args.requests is None:
        args.requests = 4 if args.quick else 30
    return args


def load_images(folder: Path, limit: int) -> list[BenchImage]:
    """The benchmark images, sorted by name (the first ``limit`` when ``limit`` > 0)."""
    paths = sorted(p for p in Path(folder).iterdir() if p.is_file())
    if limit:
        paths = paths[:limit]
    if not paths:
        raise SystemExit(f"no images in {folder}")
    return [BenchImage.from_bytes(p.name, p.read_bytes()) for p in paths]


def log(message: str) -> None:
    """Progress on stderr, with the time."""
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


class Bench:
    """One benchmark run: the servers, the memory sampler and the collected results."""

    def __init__(self, args: argparse.Namespace, work: Path):
        self.args, self.work = args, work
        self.images = load_images(args.images, args.max_images)
        self.sampler = MemorySampler(args.sample_interval_s)
        # Triton with its response cache off, and the gateway on a database of its own: it
        # sends the file over gRPC, not same-host shared memory, since the comparison is about
        # the network between API and Triton hosts. No proxy in front, no pooled metrics.
        self.stack = Stack(work, repository=model_repository(), cache_bytes=0,
                           state=work / "var", workers=args.workers, threads=args.threads,
                           gateway_env={"DJANGO_SETTINGS_MODULE": "gateway.settings",
                                        "TRITON_SHARED_MEMORY": "false"},
                           metrics=False, proxy=False)
        self.triton: EmbeddedTriton | None = None
        self.stats_client = None
        self.probe_bytes: dict[str, tuple[int, int]] = {}
        self.results: dict = {}

    # -- modes ------------------------------------------------------------------------------

    def run_cell(self, mode: str, factory, concurrency: int, groups: list[str],
                 triton_port: int | None) -> dict:
        """One (mode, concurrency) run: its statistics and memory peaks."""
        args = self.args
        requests = max(args.requests, 2 * concurrency)
        callers = make_callers(factory, concurrency)
        self.sampler.start_phase()
        try:
            stats_before = triton_stats.snapshot(self.stats_client) \
                if self.stats_client and mode != "inprocess" else None
            tcp_before = tcp_counters(triton_port) if triton_port else None
            run = run_closed_loop(callers, self.images, requests, args.budget_s)
            tcp_after = tcp_counters(triton_port) if triton_port else None
            stats = None
            if stats_before is not None:
                stats = triton_stats.per_request(
                    stats_before, triton_stats.snapshot(self.stats_client),
                    max(1, sum(s.ok for s in run.samples)))
        finally:
            for caller in callers:
                caller.close()
        cell = report.cell_summary(mode, run, stats, tcp_delta(tcp_before, tcp_after),
                                   self.probe_bytes if mode == "ensemble" else None)
        cell["memory"] = self.sampler.phase_report(groups)
        lat = cell["latency_ms"]
        log(f"{mode:9s} c={concurrency}: {cell['ok']}/{cell['requests']} ok, "
            f"p50 {lat['p50']:.0f} ms, p95 {lat['p95']:.0f} ms, "
            f"{cell['throughput_img_s']:.2f} img/s"
            + (f", errors: {cell['errors']}" if cell["errors"] else ""))
        return cell

    def add_cell(self, mode: str, cell: dict) -> None:
        """Append ``cell`` to ``mode``'s results."""
        entry = self.results["modes"].setdefault(
            mode, {"description": MODE_DESCRIPTIONS[mode], "cells": []})
        entry["cells"].append(cell)

    def warm(self, factory, concurrency: int, passes: int = 1) -> None:
        """Send every image ``passes`` times, untimed (shape compilation, lazy imports)."""
        callers = make_callers(factory, concurrency)
        try:
            run = run_closed_loop(callers, self.images, passes * len(self.images), 600.0)
        finally:
            for caller in callers:
                caller.close()
        failed = [s for s in run.samples if not s.ok]
        if failed:
            raise RuntimeError(f"warm-up failed: {failed[0].error}")

    # -- the whole run ----------------------------------------------------------------------

    def run(self) -> dict:
        args = self.args
        results = self.results
        results.update({
            "started": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "command": "python -m bench.run " + shlex.join(sys.argv[1:]),
            "config": {
                "modes": args.modes, "concurrency": args.concurrency,
                "requests": args.requests, "budget_s": args.budget_s,
                "images": [i.name for i in self.images], "long_side": args.long_side,
                "workers": args.workers, "threads": args.threads,
                "gpu_model_ms": args.gpu_model_ms, "network_gbps": args.network_gbps,
                "triton_response_cache_bytes": 0, "http_keep_alive": args.keep_alive,
                "wire_bytes_measured": ss_available(),
            },
            "machine": describe_cpu(),
            "modes": {},
        })
        self.sampler.track("client", os.getpid(), descendants=False,
                           label="bench client (load generator; split's API work)")
        gateway = inprocess = None
        with self.sampler:
            try:
                triton_modes = [m for m in args.modes if m != "inprocess"]
                if triton_modes:
                    self.start_triton()
                factories = {}
                if "ensemble" in args.modes:
                    gateway = self.start_gateway()
                    port, key = gateway.port, self._api_key
                    factories["ensemble"] = lambda: HttpCaller(  # noqa: E731
                        "127.0.0.1", port, "/api/ocr", args.long_side,
                        {"Authorization": f"Api-Key {key}"}, keep_alive=args.keep_alive)
                    self.warm(factories["ensemble"], min(args.workers, 4))
                if triton_modes:
                    url = self.triton.grpc_url
                    factories["direct"] = lambda: DirectCaller(url, args.long_side)  # noqa: E731
                    factories["split"] = lambda: SplitCaller(url, args.long_side)  # noqa: E731
                groups = {"ensemble": ["gateway", "triton"], "direct": ["triton", "client"],
                          "split": ["triton", "client"], "inprocess": ["inprocess"]}
                # ensemble and direct alternate at each concurrency, so that drift in the
                # machine's speed hits both alike; split runs after them because the large
                # tensors it sends grow Triton's memory for good.
                for index, concurrency in enumerate(args.concurrency):
                    pair = ("ensemble", "direct") if index % 2 == 0 else ("direct", "ensemble")
                    for mode in pair:
                        if mode in args.modes:
                            self.add_cell(mode, self.run_cell(
                                mode, factories[mode], concurrency, groups[mode],
                                self.triton.grpc_port))
                if gateway is not None:
                    gateway.stop()
                    self.sampler.untrack("gateway")
                if "split" in args.modes:
                    for concurrency in args.concurrency:
                        self.add_cell("split", self.run_cell(
                            "split", factories["split"], concurrency, groups["split"],
                            self.triton.grpc_port))
                if self.triton is not None:
                    self.stop_triton()
                if "inprocess" in args.modes:
                    inprocess = self.start_inprocess()
                    port = inprocess.port
                    factory = lambda: HttpCaller(  # noqa: E731
                        "127.0.0.1", port, "/ocr", args.long_side,
                        keep_alive=args.keep_alive)
                    self.warm(factory, min(args.workers, 4))
                    for concurrency in args.concurrency:
                        self.add_cell("inprocess", self.run_cell(
                            "inprocess", factory, concurrency, groups["inprocess"], None))
            finally:
                for server in (gateway, inprocess):
                    if server is not None:
                        server.stop()
                self.stop_triton()
        for data in results["modes"].values():
            data["memory"] = merge_reports([c["memory"] for c in data["cells"]])
        results["cache_hits_total"] = sum(
            c.get("cache_hits", 0) for m in results["modes"].values() for c in m["cells"])
        results["box_agreement"] = box_agreement(results)
        return results

    def start_triton(self) -> None:
        log("starting the embedded Triton (response cache off)")
        started = time.monotonic()
        self.triton = self.stack.start_triton()
        self.sampler.track("triton", self.triton.process.pid)
        self.stats_client = grpcclient.InferenceServerClient(self.triton.grpc_url)
        config = self.stats_client.get_model_config(ENSEMBLE, as_json=True)["config"]
        self.results["triton"] = {
            "start_s": round(time.monotonic() - started, 1),
            "engines": triton_stats.engine_descriptions(self.triton.metrics_url),
            "ensemble_response_cache_in_config": bool(
                config.get("response_cache", {}).get("enable", False)),
            "server_cache_bytes": 0,
            "log": str(self.triton.log_path),
        }
        log(f"Triton ready in {self.results['triton']['start_s']} s; engines: "
            f"{self.results['triton']['engines']}")
        # Warm every input shape once, and record the serialized size of the gateway's
        # request and response for each image (the gateway's calls happen in its workers).
        log("warming Triton up: one pass over the images")
        caller = DirectCaller(self.triton.grpc_url, self.args.long_side)
        try:
            for image in self.images:
                sample = caller(image)
                self.probe_bytes[image.name] = (sample.sent_bytes, sample.received_bytes)
        finally:
            caller.close()

    def stop_triton(self) -> None:
        if self.stats_client is not None:
            self.stats_client.close()
            self.stats_client = None
        if self.triton is not None:
            self.stack.stop_triton()
            self.sampler.untrack("triton")
            self.triton = None

    def start_gateway(self) -> Gunicorn:
        log(f"starting the gateway: gunicorn {self.args.workers} workers x "
            f"{self.args.threads} threads")
        gateway = self.stack.start_gateway()
        self._api_key = self.stack.key
        self.sampler.track("gateway", gateway.pid)
        return gateway

    def start_inprocess(self) -> Gunicorn:
        log(f"starting the in-process baseline: gunicorn {self.args.workers} workers x "
            f"{self.args.threads} threads, each loading and warming its own model")
        warm_dir = self.work / "warmup-images"
        warm_dir.mkdir(exist_ok=True)
        for image in self.images:
            (warm_dir / image.name).write_bytes(image.data)
        server = Gunicorn("bench.inprocess.wsgi", 0, self.args.workers, self.args.threads,
                          env={"DJANGO_SETTINGS_MODULE": "bench.inprocess.settings",
                               "BENCH_WARMUP_DIR": str(warm_dir),
                               "BENCH_LONG_SIDE": str(self.args.long_side)},
                          log_path=self.work / "inprocess.log")
        started = time.monotonic()
        server.start("/ready", timeout_s=900, count_pids=True)
        ready = server.get_json("/ready") or {}
        self.results["inprocess_engine"] = ready.get("engine")
        self.results["inprocess_start_s"] = round(time.monotonic() - started, 1)
        log(f"in-process baseline ready in {self.results['inprocess_start_s']} s "
            f"({ready.get('engine')})")
        self.sampler.track("inprocess", server.pid)
        return server


def box_agreement(results: dict) -> dict:
    """Whether every mode found the same number of boxes on each image."""
    counts: dict[str, dict[str, int]] = {}
    for mode, data in results["modes"].items():
        for cell in data["cells"]:
            for image, n in cell["boxes_by_image"].items():
                counts.setdefault(image, {}).setdefault(mode, n)
    differing = {image: by_mode for image, by_mode in counts.items()
                 if len(set(by_mode.values())) > 1}
    if differing:
        summary = "Box counts differ between modes: " + "; ".join(
            f"{image}: {by_mode}" for image, by_mode in sorted(differing.items()))
    else:
        summary = (f"Every mode found the same number of boxes on each of the "
                   f"{len(counts)} images.")
    return {"counts": counts, "differing": differing, "summary": summary}


def print_table(results: dict, summary: dict) -> None:
    """The main figures on stdout."""
    print(f"\nMachine: {results['machine']}")
    print(f"Engines: Triton {results.get('triton', {}).get('engines')}, "
          f"in-process {results.get('inprocess_engine')}")
    header = (f"{'mode':10s}{'c':>3s}{'ok':>7s}{'p50 ms':>9s}{'p95 ms':>9s}{'p99 ms':>9s}"
              f"{'img/s':>7s}{'sent/img':>12s}{'recv/img':>12s}{'wire/img':>12s}"
              f"{'non-comp ms':>12s}")
    print(header)
    print("-" * len(header))
    for mode, data in results["modes"].items():
        for cell in data["cells"]:
            lat, b = cell["latency_ms"], cell.get("bytes_per_image") or {}
            wire = (cell.get("wire_bytes_per_image") or {}).get("total")
            print(f"{mode:10s}{cell['concurrency']:>3d}{cell['ok']:>4d}/{cell['requests']:<2d}"
                  f"{lat['p50']:>9.1f}{lat['p95']:>9.1f}{lat['p99']:>9.1f}"
                  f"{cell['throughput_img_s']:>7.2f}{_num(b.get('sent')):>12s}"
                  f"{_num(b.get('received')):>12s}{_num(wire):>12s}"
                  f"{cell['non_compute_ms']:>12.1f}")
    print("\nRatios by concurrency:")
    for row in summary["per_concurrency"]:
        print(f"  c={row['concurrency']}: latency p50 ensemble/split "
              f"{_r(row['latency_p50_ratio_ensemble_split'])}, bytes ensemble/split "
              f"{_r(row['bytes_ratio_ensemble_split'], 5)}, gateway overhead p50 "
              f"{_r(row['gateway_overhead_p50_ms'], 1)} ms ({_r(row['gateway_overhead_p50_pct'], 1)} %), "
              f"throughput ensemble vs direct {_r(row['throughput_pct_ensemble_vs_direct'], 1)} %, "
              f"throughput ensemble/in-process {_r(row['throughput_ratio_ensemble_inprocess'])}, "
              f"non-compute ensemble/split {_r(row['non_compute_ratio_ensemble_split'])}")
    gpu = summary["gpu_projection"]
    print(f"Latency ensemble/split at c=1: measured "
          f"{_r(gpu['latency_ratio_ensemble_split_measured'])}, with craft+refinenet at "
          f"{gpu['gpu_model_ms']:g} ms (GPU) {_r(gpu['latency_ratio_ensemble_split_projected'])}, "
          f"plus a {gpu['network_gbps']:g} Gbit/s network "
          f"{_r(gpu['latency_ratio_ensemble_split_projected_with_network'])}")
    print(f"Memory ensemble/in-process: RSS {_r(summary['memory_ratio_rss'])}, "
          f"PSS {_r(summary['memory_ratio_pss'])}")
    for row in summary["ensemble_steps"]:
        print(f"Ensemble c={row['concurrency']} slowest step: {row['slowest_step']} ("
              + ", ".join(f"{s['model']} {s['total_ms']:.0f} ms" for s in row["steps"]) + ")")
    print("\nTargets:")
    for t in summary["targets"]:
        met = "n/a" if t["met"] is None else "met" if t["met"] else "MISSED"
        print(f"  {t['target']}: {_r(t['measured'], 4)} (goal {t['goal']}) {met}")
    print(results["box_agreement"]["summary"])


def _num(value) -> str:
    return "-" if value is None else f"{value:,.0f}"


def _r(value, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.{digits}f}"


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; returns the process exit code."""
    args = parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    work = Path(tempfile.mkdtemp(prefix="ocr-bench-"))
    bench = Bench(args, work)
    log(f"{len(bench.images)} images, modes {args.modes}, concurrency {args.concurrency}, "
        f"{args.requests} requests per cell; logs in {work}")
    try:
        results = bench.run()
    except (*START_ERRORS, RuntimeError) as exc:
        log(f"benchmark failed: {exc}")
        log(f"logs kept in {work}")
        return 1
    summary = report.summarize(results, args.gpu_model_ms, args.network_gbps)
    results["summary"] = summary
    base = args.out / f"bench-{stamp}"
    base.with_suffix(".md").write_text(report.markdown(results, summary))
    base.with_suffix(".json").write_text(
        json.dumps(_finite(results), indent=1, default=_json_default))
    logs = args.out / f"bench-{stamp}-logs"
    shutil.copytree(work, logs, ignore=shutil.ignore_patterns("var", "warmup-images"))
    shutil.rmtree(work, ignore_errors=True)
    print_table(results, summary)
    print(f"\nWrote {base}.json, {base}.md"
          + f"; server logs in {logs}")
    return 0


def _finite(value):
    """``value`` with NaN and infinities replaced by None (JSON has no NaN)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def _json_default(value):
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


if __name__ == "__main__":
    sys.exit(main())
