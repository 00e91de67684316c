"""``python -m bench.recognizer_precision``: what the recognizer's time grows with, and where in
the network BF16 changes what it reads (issue "Speed where users run it", items 1 and 2).

1. **Width.** The recognizer (OpenVINO FP32, LATENCY) on random input 48 rows high: one crop of
   320 to 3,200 columns, and 3,200 columns as 2, 4, 8 and 10 crops of one batch. Microseconds
   per column tell whether a long line costs more than its pieces would (an attention that
   grows faster than the width would); 5 runs after one untimed, the median counts.
2. **BF16 by part.** The network cut into two ONNX graphs at a tensor (``onnx.utils
   .extract_model``), each compiled in its own precision, the first's output fed to the
   second: every reference box of the validation set (``tests/data/validation``: images no test
   reads) read as the ``recognize`` step reads it, and the strings compared with the whole
   network in FP32. The cuts: the CTC head (final MatMul, softmax, best path), the backbone's
   end (the neck's input), and three blocks inside the backbone. OpenVINO's per-node
   ``disable_fp16_compression`` mark is not used: with every node marked, the CPU plugin's BF16
   read the same strings at the same speed as without (2026.4).

Needs a CPU whose OpenVINO plugin offers BF16 for part 2 (AVX-512 BF16 or AMX); part 1 runs
anywhere. Prints Markdown tables and the CPU's flags and writes them to
``bench/results/recognizer-precision-<time>.md`` (about 2 minutes on 2 cores;
``recognizer-precision-example.md``: 2026-12-06, Intel Xeon with AMX, 2 cores).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
from ocr_contract.tensors import RECOGNIZER_INPUT, RECOGNIZER_MODEL, RECOGNIZER_OUTPUTS
from ocr_pipeline import recognition, validation
from ocr_pipeline.versions import latest_version
from ocr_pipeline.engines import EngineOptions, OpenVinoEngine, openvino_precisions

from .machine import describe_cpu

ROOT = Path(__file__).resolve().parent.parent
REPOSITORY = ROOT / "triton_models" / "repository"
RESULTS = ROOT / "bench" / "results"
#: ``(columns, crops)`` of part 1: one crop growing, then 3,200 columns in pieces.
SHAPES = ((320, 1), (640, 1), (1280, 1), (2560, 1), (3200, 1),
          (3200, 2), (3200, 4), (3200, 8), (3200, 10))
#: Part 2's cuts, ``(label, tensor)``: the graph's tensor names (PP-OCRv6 small, paddle2onnx).
CUTS = (("backbone: 2 of its blocks", "p2o.pd_op.add.10.0"),
        ("backbone: 5 of its blocks", "p2o.pd_op.add.21.0"),
        ("backbone: 10 of its blocks", "p2o.pd_op.add.41.0"),
        ("backbone | neck and head", "p2o.pd_op.add.64.0"),
        ("all but the CTC head | head", "p2o.pd_op.transpose.8.0"))
#: How the two parts of each cut run: ``(first, second)``.
SPLITS = (("bf16", "fp32"), ("fp32", "bf16"))
RUNS = 5


def median_ms(call, *args) -> float:
    """Median wall time of :data:`RUNS` calls after one untimed, milliseconds."""
    call(*args)
    times = []
    for _ in range(RUNS):
        started = time.perf_counter()
        call(*args)
        times.append((time.perf_counter() - started) * 1000.0)
    return statistics.median(times)


def width_table(onnx_path: Path) -> list[str]:
    """Part 1 as Markdown rows."""
    engine = OpenVinoEngine(str(onnx_path), EngineOptions(), "fp32")
    rng = np.random.default_rng(0)
    rows = ["| columns | crops | ms | µs per column |", "| ---: | ---: | ---: | ---: |"]
    for columns, crops in SHAPES:
        tensor = rng.standard_normal(
            (crops, 3, recognition.HEIGHT, columns // crops)).astype(np.float32)
        ms = median_ms(engine, {RECOGNIZER_INPUT: tensor})
        rows.append(f"| {columns} | {crops} | {ms:.1f} | {ms / columns * 1000:.1f} |")
        print(rows[-1], flush=True)
    return rows


def read_all(run, batches: list[np.ndarray], classes: list[str]) -> list[str]:
    """The strings ``run`` (input tensor -> ``{output: array}``) reads in every batch."""
    texts = []
    for tensor in batches:
        output = run(tensor)
        texts += [r.text for r in recognition.ctc_greedy(
            *(output[name] for name in RECOGNIZER_OUTPUTS), classes)]
    return texts


def split_table(onnx_path: Path, classes: list[str]) -> list[str]:
    """Part 2 as Markdown rows."""
    import onnx.utils

    crops = validation.ValidationSet(validation.DEFAULT_FOLDER).crops()
    widths = [recognition.resized_width(crop) for crop in crops]
    batches = [recognition.batch_tensor([crops[i] for i in group])
               for group in recognition.plan_batches(widths, 32)]
    timed = batches[len(batches) // 2]
    whole = {precision: OpenVinoEngine(str(onnx_path), EngineOptions(), precision)
             for precision in ("fp32", "bf16")}
    expected = read_all(lambda t: whole["fp32"]({RECOGNIZER_INPUT: t}), batches, classes)
    rows = [f"{len(crops)} validation crops in {len(batches)} batches; time: one batch of "
            f"{timed.shape[0]} x {timed.shape[3]} columns", "",
            "| first part | second part | cut after | strings as FP32 reads them | ms | x FP32 |",
            "| --- | --- | --- | ---: | ---: | ---: |"]

    def row(first: str, second: str, cut: str, run, fp32_ms: float | None = None) -> float:
        """One row; its time over ``fp32_ms`` (the whole network's in FP32, this row's own
        when None); returns its time, milliseconds."""
        same = sum(a == b for a, b in zip(read_all(run, batches, classes), expected))
        ms = median_ms(run, timed)
        rows.append(f"| {first} | {second} | {cut} | {same}/{len(expected)} | {ms:.0f} | "
                    f"{ms / (fp32_ms or ms):.2f} |")
        print(rows[-1], flush=True)
        return ms

    fp32_ms = row("fp32", "-", "(whole)", lambda t: whole["fp32"]({RECOGNIZER_INPUT: t}))
    row("bf16", "-", "(whole)", lambda t: whole["bf16"]({RECOGNIZER_INPUT: t}), fp32_ms)
    with tempfile.TemporaryDirectory() as folder:
        for label, tensor in CUTS:
            head, tail = Path(folder) / "head.onnx", Path(folder) / "tail.onnx"
            onnx.utils.extract_model(str(onnx_path), str(head), [RECOGNIZER_INPUT], [tensor])
            onnx.utils.extract_model(str(onnx_path), str(tail), [tensor],
                                     list(RECOGNIZER_OUTPUTS))
            for first, second in SPLITS:
                parts = (OpenVinoEngine(str(head), EngineOptions(), first),
                         OpenVinoEngine(str(tail), EngineOptions(), second))
                # The first part's one output (OpenVINO may name it otherwise) is the cut.
                row(first, second, label, lambda t, a=parts[0], b=parts[1]: b(
                    {tensor: next(iter(a({RECOGNIZER_INPUT: t}).values()))}), fp32_ms)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.recognizer_precision",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.parse_args(argv)
    onnx_path = latest_version(REPOSITORY / RECOGNIZER_MODEL)
    classes = recognition.load_dictionary(onnx_path.parent / "dict.txt")
    lines = ["# Recognizer: width and BF16 by part", "", describe_cpu(), "", "## Width (FP32)",
             "", *width_table(onnx_path)]
    if "bf16" in openvino_precisions(onnx_path):
        lines += ["", "## BF16 by part", "", *split_table(onnx_path, classes)]
    else:
        lines += ["", "BF16: not offered by OpenVINO on this CPU; part 2 skipped."]
    report = "\n".join(lines) + "\n"
    print(report)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"recognizer-precision-{datetime.now(timezone.utc):%Y%m%dT%H%M%SZ}.md"
     ).write_text(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
