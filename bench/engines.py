"""``python -m bench.engines`` (``make bench-engines``): CPU inference engines end to end.

For each engine configuration of the cpu flavour (OpenVINO with its default precision — BF16
where the CPU has AMX / AVX-512 BF16 —, OpenVINO forced to FP32, onnxruntime FP32) it starts
an embedded Triton with that engine (response cache off) and a gateway (gunicorn) in front of
it, then sends every test image ``--repeats`` times, one request at a time, through
``POST /api/ocr`` at each long side. It prints per-image latency side by side and the speed-up
over onnxruntime, and writes ``bench/results/engines-<time>.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from datetime import datetime, timezone
from pathlib import Path

from ocr_embedded.launcher import EmbeddedTriton, free_port

from .load import BenchImage, percentile
from .machine import describe_cpu, machine_info
from .modes import HttpCaller
from .pipeline import model_repository
from .servers import Gunicorn, engine_descriptions, prepare_gateway_state

DEFAULT_IMAGES = Path(__file__).resolve().parent.parent / "tests" / "data" / "images"
DEFAULT_OUT = Path(__file__).resolve().parent / "results"

#: name -> the environment that selects it (see ocr_pipeline.engines.EngineOptions).
ENGINES = {
    "openvino": {"OCR_ENGINE": "openvino", "OCR_ENGINE_PRECISION": "auto"},
    "openvino-fp32": {"OCR_ENGINE": "openvino", "OCR_ENGINE_PRECISION": "fp32"},
    "onnxruntime": {"OCR_ENGINE": "onnxruntime"},
}
BASELINE = "onnxruntime"


def measure_engine(name: str, images: list[BenchImage], long_sides: list[int], repeats: int,
                   work: Path, log=print) -> dict:
    """Latencies (ms) of ``POST /api/ocr`` for one engine: ``{long_side: [ms, ...]}`` plus
    the engine descriptions Triton reported."""
    triton = EmbeddedTriton(repository=model_repository(), log_path=work / f"{name}-triton.log",
                            cache_bytes=0, env=ENGINES[name])
    triton.start(timeout_s=600)
    gateway = None
    try:
        env, key = prepare_gateway_state(work / f"{name}-var")
        gateway = Gunicorn("gateway.wsgi", free_port(), workers=1, threads=2,
                           env={**env, "DJANGO_SETTINGS_MODULE": "gateway.settings",
                                "TRITON_GRPC_URL": triton.grpc_url},
                           log_path=work / f"{name}-gateway.log")
        gateway.start("/api/health")
        headers = {"Authorization": f"Api-Key {key}"}
        result = {"engines": engine_descriptions(triton.metrics_url), "latency_ms": {}}
        log(f"{name}: {result['engines']}")
        for long_side in long_sides:
            caller = HttpCaller("127.0.0.1", gateway.port, "/api/ocr", long_side, headers)
            for image in images:                      # warm every input shape once
                caller(image)
            samples = []
            for _ in range(repeats):
                for image in images:
                    started = time.perf_counter()
                    sample = caller(image)
                    if not sample.ok:
                        raise RuntimeError(f"{name} {image.name}: {sample.error}")
                    samples.append((time.perf_counter() - started) * 1000.0)
            result["latency_ms"][str(long_side)] = samples
            log(f"{name} long side {long_side}: mean {statistics.mean(samples):.0f} ms")
        return result
    finally:
        if gateway is not None:
            gateway.stop()
        triton.stop()


def summarise(results: dict) -> list[dict]:
    """One row per (engine, long side): p50 and mean ms, speed-up over the baseline."""
    rows = []
    for name, result in results.items():
        for long_side, samples in result["latency_ms"].items():
            baseline = results.get(BASELINE, {}).get("latency_ms", {}).get(long_side)
            mean = statistics.mean(samples)
            rows.append({"engine": name, "long_side": int(long_side),
                         "description": result["engines"].get("craft", ""),
                         "p50_ms": percentile(samples, 50), "mean_ms": mean,
                         "speedup_vs_onnxruntime": statistics.mean(baseline) / mean
                         if baseline else None})
    return rows


def markdown(rows: list[dict], machine: str) -> str:
    lines = [f"Machine: {machine}", "",
             "| engine | runs as | long side | p50 ms | mean ms | speed-up vs onnxruntime |",
             "| --- | --- | ---: | ---: | ---: | ---: |"]
    for row in rows:
        speedup = f"{row['speedup_vs_onnxruntime']:.2f}x" if row["speedup_vs_onnxruntime"] else "-"
        lines.append(f"| {row['engine']} | {row['description']} | {row['long_side']} | "
                     f"{row['p50_ms']:.0f} | {row['mean_ms']:.0f} | {speedup} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.engines", description=__doc__)
    parser.add_argument("--engines", default=",".join(ENGINES),
                        help="comma-separated subset of %(default)s")
    parser.add_argument("--long-sides", default="640,1280")
    parser.add_argument("--repeats", type=int, default=2, help="passes over the images")
    parser.add_argument("--images", type=Path, default=DEFAULT_IMAGES)
    parser.add_argument("--limit", type=int, default=0, help="use only the first N images")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)

    paths = sorted(p for p in args.images.iterdir() if p.is_file())
    paths = paths[:args.limit] if args.limit else paths
    images = [BenchImage.from_bytes(p.name, p.read_bytes()) for p in paths]
    long_sides = [int(v) for v in args.long_sides.split(",")]
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    work = args.out / f"engines-{stamp}-logs"
    work.mkdir(parents=True, exist_ok=True)

    info = machine_info()
    results = {name: measure_engine(name, images, long_sides, args.repeats, work)
               for name in args.engines.split(",")}
    rows = summarise(results)
    table = markdown(rows, describe_cpu(info))
    print("\n" + table)
    (args.out / f"engines-{stamp}.json").write_text(json.dumps(
        {"machine": info, "images": [p.name for p in paths], "repeats": args.repeats,
         "results": results, "summary": rows}, indent=1))
    (args.out / f"engines-{stamp}.md").write_text(table)
    print(f"Wrote {args.out / f'engines-{stamp}.json'} and .md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
