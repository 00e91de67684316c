"""``python -m bench.engines`` (``make bench-engines``): the cpu flavour's engines and
precisions end to end, with their box parity and quality beside their speed.

For each engine configuration (OpenVINO ``auto`` — what ``make serve`` runs —, OpenVINO in each
precision this machine offers, onnxruntime FP32) it starts an embedded Triton with that engine
(response cache off) and a gateway (gunicorn) in front of it, then sends every test image,
one request at a time, through ``POST /api/ocr`` at each long side, boxes only
(``recognize=false``). Per row it prints p50 and mean latency, the speed-up over onnxruntime,
and at the largest long side the per-image box parity F against ``tests/data/reference/``
(worst and mean) and, at 1280, the ICDAR sample's H-mean. For the ``auto`` row it also times
the same requests with recognition on (the recognizer runs on the same engine), and reports the
time Triton spends outside the detection networks per image (preprocess, postprocess, tensor
hand-over), for the test images and for a 12 MP phone JPEG made from one of them. It writes
``bench/results/engines-<time>.{json,md}``. A row that fails (its Triton does not start, say)
is recorded as failed with the reason and the other rows are still measured; the exit status is
then 1.
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import time
import traceback
from datetime import datetime, timezone
from pathlib import Path

import tritonclient.grpc as grpcclient
from PIL import Image

from ocr_contract.tensors import CRAFT_MODEL, ENSEMBLE, REFINENET_MODEL
from ocr_embedded.stack import Stack
from ocr_pipeline import detection
from ocr_pipeline.engines import openvino_precisions
from ocr_pipeline.evaluation import DetectionScore, load_mmocr_textdet, score_image

from . import triton_stats
from .compute_floor import floor_ms
from .load import BenchImage, percentile
from .machine import describe_cpu
from .modes import HttpCaller
from .pipeline import model_repository

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"
DEFAULT_OUT = Path(__file__).resolve().parent / "results"
BASELINE = "onnxruntime"
AUTO = "openvino-auto"
#: The networks whose compute is not "around the networks".
NETWORKS = (CRAFT_MODEL, REFINENET_MODEL)
#: The shape the compute floor is counted at (scaled by area to each image's padded input).
FLOOR_SHAPE = (736, 1280)


def per_model(steps_ms: dict[str, float], engines: dict[str, str], images: list[BenchImage],
              long_side: int) -> list[dict]:
    """Per model of the ensemble (mean compute ms per image): the precision it runs in and,
    for the detection networks, the multiply-adds and the compute floor of that precision on
    this CPU (:mod:`bench.compute_floor`), at the images' mean padded input area."""
    from ocr_pipeline import imaging

    areas = [imaging.prepare_image(image.data, long_side, keep_original=False).tensor.shape[1:3]
             for image in images]
    scale = statistics.mean(h * w for h, w in areas) / (FLOOR_SHAPE[0] * FLOOR_SHAPE[1])
    shapes = {CRAFT_MODEL: {detection.IMAGE: (1, *FLOOR_SHAPE, 3)},
              REFINENET_MODEL: {
                  detection.MAPS: (1, 2, FLOOR_SHAPE[0] // 2, FLOOR_SHAPE[1] // 2),
                  detection.FEATURES: (1, 32, FLOOR_SHAPE[0] // 2, FLOOR_SHAPE[1] // 2)}}
    rows = []
    for model, ms in sorted(steps_ms.items(), key=lambda item: -item[1]):
        description = engines.get(f"{model} v1", "")
        words = description.split()
        precision = words[2].lower() if len(words) > 2 and words[0] == "openvino" else "fp32"
        row = {"model": model, "ms": ms, "runs_as": description.split(" (")[0]}
        if model in shapes:
            work, floor = floor_ms(str(model_repository() / model / "1" / "model.onnx"),
                                   shapes[model], precision)
            row.update(gmac=work * scale, floor_ms=floor * scale if floor else None)
        rows.append(row)
    return rows


def engine_rows() -> dict[str, dict[str, str]]:
    """Row name -> the environment that selects it (ocr_pipeline.engines.EngineOptions)."""
    craft = model_repository() / CRAFT_MODEL / "1" / "model.onnx"
    rows = {AUTO: {"OCR_ENGINE": "openvino", "OCR_ENGINE_PRECISION": "auto"}}
    for precision in openvino_precisions(craft):
        rows[f"openvino-{precision}"] = {"OCR_ENGINE": "openvino",
                                         "OCR_ENGINE_PRECISION": precision}
    rows[BASELINE] = {"OCR_ENGINE": "onnxruntime"}
    return rows


def phone_photo() -> BenchImage:
    """A 12 MP phone JPEG (4032 x 3024, quality 92) made from img_1.jpg."""
    picture = Image.open(DATA / "images" / "img_1.jpg").convert("RGB")
    buffer = io.BytesIO()
    picture.resize((4032, 3024), Image.Resampling.BICUBIC).save(buffer, "JPEG", quality=92)
    return BenchImage.from_bytes("phone-12mp.jpg", buffer.getvalue())


def timed(caller: HttpCaller, images: list[BenchImage], repeats: int) -> tuple[list, dict]:
    """Latencies (ms) of ``repeats`` passes over ``images``, and each image's last answer."""
    samples, answers = [], {}
    for _ in range(repeats):
        for image in images:
            started = time.perf_counter()
            sample = caller(image)
            if not sample.ok:
                raise RuntimeError(f"{image.name}: {sample.error}")
            samples.append((time.perf_counter() - started) * 1000.0)
            answers[image.name] = sample.body
    return samples, answers


def around_networks(client, caller: HttpCaller, images: list[BenchImage]) -> dict:
    """Milliseconds per image that Triton spends outside craft and refinenet's own compute:
    the ensemble's request time minus the networks' ``compute_infer``, and each Python step."""
    before = triton_stats.snapshot(client)
    timed(caller, images, 1)
    after = triton_stats.snapshot_after(client, before, ENSEMBLE, len(images))
    stats = triton_stats.per_request(before, after, len(images))
    ensemble = stats[ENSEMBLE]["success_ms"]
    networks = sum(stats[name]["compute_infer_ms"] for name in NETWORKS if name in stats)
    return {"ensemble_ms": ensemble, "networks_ms": networks,
            "outside_networks_ms": ensemble - networks,
            "steps_ms": {name: round(entry["compute_infer_ms"], 1)
                         for name, entry in stats.items() if name != ENSEMBLE}}


def quality(answers: dict, long_side: int) -> dict:
    """Box parity against the reference at ``long_side`` (worst and mean F) and, at 1280, the
    ICDAR H-mean."""
    from tests.parity import parity_f

    reference = json.loads((DATA / "reference" / f"craft_boxes_{long_side}.json").read_text())
    scores = {name: parity_f([b["points"] for b in answer["boxes"]], reference[name]["boxes"])
              for name, answer in answers.items() if name in reference}
    total = DetectionScore()
    for entry in load_mmocr_textdet(DATA / "icdar2015_gt.json"):
        if entry.image in answers:
            total.add(score_image([b["points"] for b in answers[entry.image]["boxes"]],
                                  entry.truths, entry.dont_care))
    return {"long_side": long_side, "parity_f": scores,
            "worst_f": min(scores.values()) if scores else None,
            "mean_f": statistics.mean(scores.values()) if scores else None,
            "hmean": total.hmean if total.truths and long_side == 1280 else None}


def measure(name: str, environment: dict, images: list[BenchImage], long_sides: list[int],
            repeats: int, work: Path, log=print) -> dict:
    """One row: latencies per long side (boxes only), quality at 1280, and for ``auto`` the
    same with recognition, and the time around the networks."""
    # Response cache off; the engine's compiled models are not kept (every row compiles and,
    # for auto, chooses afresh). The gateway on its own database, no proxy, no pooled metrics.
    stack = Stack(work, log_prefix=f"{name}-", repository=model_repository(), cache_bytes=0,
                  triton_env=environment, triton_start_timeout_s=900,
                  state=work / f"{name}-var", workers=1, threads=2,
                  gateway_env={"DJANGO_SETTINGS_MODULE": "gateway.settings",
                               "TRITON_TIMEOUT_S": "600"},
                  metrics=False, proxy=False)
    triton = stack.start_triton()
    client = None
    try:
        gateway = stack.start_gateway()
        headers = {"Authorization": f"Api-Key {stack.key}"}
        result = {"engines": triton_stats.engine_descriptions(triton.metrics_url),
                  "latency_ms": {}}
        log(f"{name}: {result['engines']}")

        def caller(long_side: int, recognize: bool) -> HttpCaller:
            return HttpCaller("127.0.0.1", gateway.port, "/api/ocr", long_side, headers,
                              extra={"recognize": "true" if recognize else "false"})

        largest = max(long_sides)
        for long_side in long_sides:
            boxes_only = caller(long_side, recognize=False)
            timed(boxes_only, images, 1)                       # every input shape once
            samples, answers = timed(boxes_only, images, repeats)
            result["latency_ms"][str(long_side)] = samples
            if long_side == largest:
                result["quality"] = quality(answers, long_side)
            log(f"{name} long side {long_side}: p50 {percentile(samples, 50):.0f} ms")
        if name == AUTO:
            reading = caller(largest, recognize=True)
            timed(reading, images, 1)
            result["latency_with_text_ms"], _ = timed(reading, images, repeats)
            client = grpcclient.InferenceServerClient(triton.grpc_url)
            result["around_networks"] = {
                "test images": around_networks(client, caller(largest, False), images),
                "12 MP JPEG": around_networks(client, caller(largest, False), [phone_photo()]),
                "test images, reading text": around_networks(client, reading, images)}
            result["around_long_side"] = largest
            result["per_model"] = per_model(
                result["around_networks"]["test images, reading text"]["steps_ms"],
                result["engines"], images, largest)
        return result
    finally:
        if client is not None:
            client.close()
        stack.stop()


def summarise(results: dict) -> list[dict]:
    """One row per (engine, long side): p50 and mean ms, speed-up over onnxruntime's mean."""
    rows = []
    for name, result in results.items():
        for long_side, samples in result["latency_ms"].items():
            baseline = results.get(BASELINE, {}).get("latency_ms", {}).get(long_side)
            mean = statistics.mean(samples)
            quality_row = result.get("quality", {})
            if quality_row.get("long_side") != int(long_side):
                quality_row = {}
            rows.append({"engine": name, "long_side": int(long_side),
                         "description": result["engines"].get("craft v1", ""),
                         "p50_ms": percentile(samples, 50), "mean_ms": mean,
                         "speedup_vs_onnxruntime": statistics.mean(baseline) / mean
                         if baseline else None,
                         "worst_f": quality_row.get("worst_f"),
                         "mean_f": quality_row.get("mean_f"), "hmean": quality_row.get("hmean")})
    return rows


def markdown(rows: list[dict], results: dict, machine: str,
             failed: dict[str, str] | None = None) -> str:
    """The tables: engines side by side (a row that failed says why); recognition's cost; the
    time around the networks."""
    def number(value, digits=3):
        return "–" if value is None else f"{value:.{digits}f}"

    lines = [f"Machine: {machine}", "",
             "Boxes only (`recognize=false`), one request at a time, through `POST /api/ocr`. "
             "Parity (at the largest long side): per-image F of the boxes against "
             "`tests/data/reference/craft_boxes_<long side>.json` (IoU ≥ 0.8); H-mean: the "
             "ICDAR 2015 sample at 1280.", "",
             "| engine | runs as | long side | p50 ms | mean ms | vs onnxruntime | parity F "
             "worst / mean | H-mean |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for row in rows:
        speedup = f"{row['speedup_vs_onnxruntime']:.2f}x" if row["speedup_vs_onnxruntime"] else "–"
        lines.append(f"| {row['engine']} | {row['description']} | {row['long_side']} | "
                     f"{row['p50_ms']:.0f} | {row['mean_ms']:.0f} | {speedup} | "
                     f"{number(row['worst_f'])} / {number(row['mean_f'])} | "
                     f"{number(row['hmean'])} |")
    for name, reason in (failed or {}).items():
        first_line = reason.splitlines()[0] if reason else ""
        lines.append(f"| {name} | failed: {first_line} | | | | | | |")
    auto = results.get(AUTO, {})
    side = auto.get("around_long_side")
    if "latency_with_text_ms" in auto:
        boxes = percentile(auto["latency_ms"][str(side)], 50)
        text = percentile(auto["latency_with_text_ms"], 50)
        lines += ["", f"Reading the text ({AUTO}, long side {side}, p50 over the images): "
                  f"boxes only {boxes:.0f} ms, with text {text:.0f} ms: recognition adds "
                  f"{(text / boxes - 1) * 100:.0f} %."]
    if "around_networks" in auto:
        lines += ["", f"Time inside Triton outside craft and refinenet's compute ({AUTO}, long "
                  f"side {side}, mean per image; the rest of the ensemble's request time):", "",
                  "| input | ensemble ms | craft + refinenet ms | outside the networks ms | "
                  "per step (compute) ms |", "| --- | ---: | ---: | ---: | --- |"]
        for label, entry in auto["around_networks"].items():
            steps = ", ".join(f"{k} {v}" for k, v in sorted(entry["steps_ms"].items()))
            lines.append(f"| {label} | {entry['ensemble_ms']:.0f} | {entry['networks_ms']:.0f} | "
                         f"{entry['outside_networks_ms']:.0f} | {steps} |")
    if "per_model" in auto:
        lines += ["", f"Per model, text read ({AUTO}, long side {side}, mean compute per image) "
                  "beside the compute floor of its precision on this CPU (multiply-adds over "
                  "the vector units' peak: bench/compute_floor.py):", "",
                  "| model | runs as | ms | GMAC | floor ms | ms / floor |",
                  "| --- | --- | ---: | ---: | ---: | ---: |"]
        for row in auto["per_model"]:
            floor = row.get("floor_ms")
            lines.append(f"| {row['model']} | {row['runs_as'] or '–'} | {row['ms']:.0f} | "
                         f"{number(row.get('gmac'), 0)} | {number(floor, 0)} | "
                         f"{number(row['ms'] / floor if floor else None, 1)} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    rows_available = engine_rows()
    parser = argparse.ArgumentParser(prog="python -m bench.engines", description=__doc__)
    parser.add_argument("--engines", default=",".join(rows_available),
                        help="comma-separated subset of %(default)s")
    parser.add_argument("--long-sides", default="640,1280")
    parser.add_argument("--repeats", type=int, default=1, help="timed passes over the images")
    parser.add_argument("--images", type=Path, default=DATA / "images")
    parser.add_argument("--limit", type=int, default=0, help="use only the first N images")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    unknown = set(args.engines.split(",")) - set(rows_available)
    if unknown:
        parser.error(f"not available here: {', '.join(sorted(unknown))}")

    paths = sorted(p for p in args.images.iterdir() if p.is_file())
    paths = paths[:args.limit] if args.limit else paths
    images = [BenchImage.from_bytes(p.name, p.read_bytes()) for p in paths]
    long_sides = [int(v) for v in args.long_sides.split(",")]
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    work = args.out / f"engines-{stamp}-logs"
    work.mkdir(parents=True, exist_ok=True)

    machine = describe_cpu()
    results, failed = {}, {}
    for name in args.engines.split(","):
        try:
            results[name] = measure(name, rows_available[name], images, long_sides,
                                    args.repeats, work)
        except Exception as exc:  # noqa: BLE001 - one row that fails must not lose the others
            failed[name] = f"{type(exc).__name__}: {exc}"
            traceback.print_exc()
            print(f"{name}: failed, the other rows go on (logs in {work})")
    rows = summarise(results)
    table = markdown(rows, results, machine, failed)
    print("\n" + table)
    (args.out / f"engines-{stamp}.json").write_text(json.dumps(
        {"machine": machine, "images": [p.name for p in paths], "repeats": args.repeats,
         "results": results, "failed": failed, "summary": rows}, indent=1))
    (args.out / f"engines-{stamp}.md").write_text(table)
    print(f"Wrote {args.out / f'engines-{stamp}.json'} and .md")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
