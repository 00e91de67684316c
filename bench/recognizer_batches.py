"""``python -m bench.recognizer_batches``: how many crops ``recognize`` should send the
recognizer at once on this CPU (its ``recognizer_batch`` parameter).

The crops of every reference box of the validation set (``tests/data/validation``: images no
test reads), each read by the recognizer in OpenVINO (``--precision``, default FP32) in batches
of similar width (:func:`ocr_pipeline.recognition.plan_batches`) of at most each batch size:
the time of the first pass on a freshly compiled engine (every shape new, as on a fresh server)
and of two passes more (shapes seen), and how many strings differ from the first batch size's
(padding to a batch's widest crop changes a few near ties). Prints a Markdown table and the
CPU's flags.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from ocr_contract.tensors import RECOGNIZER_INPUT, RECOGNIZER_MODEL, RECOGNIZER_OUTPUTS
from ocr_pipeline import recognition, validation
from ocr_pipeline.versions import latest_version
from ocr_pipeline.engines import EngineOptions, OpenVinoEngine

from .machine import describe_cpu

REPOSITORY = Path(__file__).resolve().parent.parent / "triton_models" / "repository"


def run(batch: int, pieces: list[np.ndarray], precision: str, classes: list[str]
        ) -> tuple[list[float], list[str]]:
    """Milliseconds of three passes over ``pieces`` on a fresh engine, and the strings read."""
    engine = OpenVinoEngine(str(latest_version(REPOSITORY / RECOGNIZER_MODEL)),
                            EngineOptions(), precision)
    widths = [recognition.resized_width(piece) for piece in pieces]
    plan = recognition.plan_batches(widths, batch)
    tensors = [recognition.batch_tensor([pieces[i] for i in group]) for group in plan]
    texts, times = [""] * len(pieces), []
    for _ in range(3):
        started = time.perf_counter()
        for group, tensor in zip(plan, tensors):
            output = engine({RECOGNIZER_INPUT: tensor})
            for i, reading in zip(group, recognition.ctc_greedy(
                    *(output[name] for name in RECOGNIZER_OUTPUTS), classes)):
                texts[i] = reading.text
        times.append((time.perf_counter() - started) * 1000.0)
    return times, texts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.recognizer_batches",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batches", default="32,16,8,4,2,1",
                        help="batch sizes, comma-separated (default 32,16,8,4,2,1)")
    parser.add_argument("--precision", default="fp32", help="fp32, bf16 or int8")
    args = parser.parse_args(argv)
    pieces = validation.ValidationSet(validation.DEFAULT_FOLDER).crops()
    classes = recognition.load_dictionary(
        latest_version(REPOSITORY / RECOGNIZER_MODEL, "dict.txt"))
    lines = [f"{describe_cpu()}; {len(pieces)} validation crops; OpenVINO "
             f"{args.precision.upper()}", "",
             "| batch | first pass ms | warm ms | strings unlike the first row's |",
             "| ---: | ---: | ---: | ---: |"]
    first = None
    for batch in (int(b) for b in args.batches.split(",")):
        times, texts = run(batch, pieces, args.precision, classes)
        first = first or texts
        unlike = sum(a != b for a, b in zip(texts, first))
        lines.append(f"| {batch} | {times[0]:.0f} | {min(times[1:]):.0f} | {unlike} |")
        print(lines[-1], flush=True)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
