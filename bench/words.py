"""``python -m bench.words``: how good the answer's word boxes are, and what they cost.

- Drawn letters (:func:`tests.image_factory.letter_page`: Debian's DejaVu and Liberation fonts,
  20-44 px, a few degrees of skew) turned 0, 90, 180 and 270 degrees, with other texts and
  seeds than the tests draw: the share of their words answered as a word of their own with the
  right text and IoU >= 0.5 with the word's ink box (:mod:`ocr_pipeline.word_evaluation`), at
  the default working size and at 640.
- ICDAR 2015 (``tests/data/icdar2015_gt.json`` over ``tests/data/images``): the ICDAR detection
  H-mean (IoU >= 0.5, don't-care regions) of the default pipeline's words, beside its boxes and
  the boxes of ``refine=false`` (where a box is mostly a word).
- Request time at the defaults, median of ``--repeat`` ensemble calls per image (after one
  warm-up), response cache off, each asking for the outputs the gateway asks for: this tree's
  repository beside ``--baseline`` (the same weights and ``ocr_pipeline``, with the ensemble's,
  ``recognize``'s and ``tesseract``'s model files of another commit, default HEAD: no words),
  both served at once and called in turns.

Starts its own embedded Triton(s) on free ports. Writes ``bench/results/words-<time>.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import tritonclient.grpc as grpcclient
from ocr_contract.tensors import ENSEMBLE, OUTPUTS
from ocr_embedded.launcher import EmbeddedTriton
from ocr_embedded.stack import engine_cache_dir
from ocr_inference.client import TritonClient
from ocr_inference.requests import build_inputs
from ocr_pipeline.evaluation import DetectionScore, load_mmocr_textdet, score_image
from ocr_pipeline.word_evaluation import WordScore, score_words
from tests.image_factory import encode, letter_page

ROOT = Path(__file__).resolve().parent.parent
REPOSITORY = ROOT / "triton_models" / "repository"
DATA = ROOT / "tests" / "data"
RESULTS = ROOT / "bench" / "results"
ENGINE_CACHE = engine_cache_dir()
#: A first start compiles the engines and times their precisions (as the tests wait).
START_TIMEOUT_S = 900
ANGLES = (0, 90, 180, 270)
#: Texts the tests never draw (written for this benchmark), each drawn with its own seed.
TEXTS = (
    "Hello Robert, the meeting about the bridge repairs moved to Thursday at nine. Bring the "
    "drawings of the north tower and the cost tables we checked last week. The river is high "
    "again, so park by the old mill and walk along the canal. Best wishes, Anna",
    "Order 5821 left our depot on 3 March by rail. It holds twelve boxes of glass jars, four "
    "crates of copper pipe and one spare motor. Sign the delivery note and return a copy to "
    "the depot office before Friday evening. Kind regards, Peter Walsh")
#: Skew of each drawn page, degrees (counter-clockwise before the turn).
SKEWS = (0.0, 2.5, -3.0)
#: The files of the models that answer words: the baseline takes another commit's.
WORD_MODEL_FILES = ("recognize/1/model.py", "recognize/config.pbtxt",
                    "tesseract/1/model.py", "tesseract/config.pbtxt",
                    "ensemble_ocr/config.pbtxt")


def drawn_pages():
    """``(name, image bytes, words)`` per drawn page: every text, skew and angle."""
    for number, text in enumerate(TEXTS):
        for skew in SKEWS:
            for angle in ANGLES:
                image, words = letter_page(text, angle=angle, skew=skew, seed=100 + number)
                yield f"text{number}_skew{skew:+.1f}_{angle}", angle, encode(image), words


def answered_words(result) -> list[tuple[str, list]]:
    """``(text, points)`` of every word in an :class:`~ocr_inference.client.OcrResult`."""
    return [(text, points.tolist()) for text, points in zip(result.words.texts,
                                                             result.words.boxes)]


def drawn_table(client: TritonClient, long_side: int | None) -> dict:
    """Per angle, the :class:`WordScore` of the drawn pages (and each page's)."""
    per_angle = {angle: WordScore() for angle in ANGLES}
    pages = []
    for name, angle, data, words in drawn_pages():
        result = client.infer(data, {"long_side": long_side} if long_side else {})
        score = score_words(answered_words(result), words)
        per_angle[angle].add(score)
        text_same = " ".join(result.text.split()) == " ".join(t for t, _ in words)
        pages.append({"page": name, "hits": score.hits, "words": score.truths,
                      "answered": score.answered, "text_exact": text_same,
                      "angle_found": result.angle})
    return {"angles": {a: vars(s) | {"rate": s.rate} for a, s in per_angle.items()},
            "pages": pages}


def icdar_table(client: TritonClient) -> dict:
    """ICDAR detection scores of the default words, default boxes and refine=false boxes."""
    totals = {"words (default)": DetectionScore(), "boxes (default)": DetectionScore(),
              "boxes (refine=false)": DetectionScore()}
    for entry in load_mmocr_textdet(DATA / "icdar2015_gt.json"):
        data = (DATA / "images" / entry.image).read_bytes()
        default = client.infer(data, {})
        unrefined = client.infer(data, {"refine": False})
        for key, polygons in (("words (default)", default.words.boxes),
                              ("boxes (default)", default.boxes),
                              ("boxes (refine=false)", unrefined.boxes)):
            totals[key].add(score_image([p.tolist() for p in polygons], entry.truths,
                                        entry.dont_care))
    return {key: {"precision": s.precision, "recall": s.recall, "hmean": s.hmean}
            for key, s in totals.items()}


def timing(servers: list[tuple[str, list[str]]], samples: dict[str, bytes], repeat: int
           ) -> list[dict[str, float]]:
    """Median time of the ensemble call per sample at the defaults, milliseconds, on each
    server ``(gRPC url, outputs it is asked for)``: one warm-up call each, then the servers
    take turns call by call, so that a slower minute of a shared machine falls on both."""
    clients = [(grpcclient.InferenceServerClient(url),
                [grpcclient.InferRequestedOutput(name) for name in outputs])
               for url, outputs in servers]
    times: list[dict[str, float]] = [{} for _ in servers]
    try:
        for name, data in samples.items():
            runs: list[list[float]] = [[] for _ in servers]
            for _ in range(repeat + 1):
                for (client, requested), kept in zip(clients, runs):
                    started = time.perf_counter()
                    client.infer(ENSEMBLE, build_inputs(data, {}), outputs=requested,
                                 client_timeout=600)
                    kept.append((time.perf_counter() - started) * 1000)
            for table, kept in zip(times, runs):
                table[name] = statistics.median(kept[1:])
    finally:
        for client, _ in clients:
            client.close()
    return times


def baseline_outputs(commit: str) -> list[str]:
    """The ensemble outputs ``commit``'s repository declares (``git show`` of its config)."""
    config = subprocess.run(["git", "show", f"{commit}:triton_models/repository/ensemble_ocr/"
                             "config.pbtxt"], cwd=ROOT, check=True, capture_output=True,
                            text=True).stdout
    return [tensor.name for tensor in OUTPUTS if f'name: "{tensor.name}"' in config]


def baseline_repository(commit: str, target: Path) -> Path:
    """A copy of this tree's repository (files linked, the weights included) whose
    :data:`WORD_MODEL_FILES` are ``commit``'s (``git show``)."""
    shutil.copytree(REPOSITORY, target, copy_function=os.symlink)
    for name in WORD_MODEL_FILES:
        (target / name).unlink()
        (target / name).write_bytes(subprocess.run(
            ["git", "show", f"{commit}:triton_models/repository/{name}"], cwd=ROOT,
            check=True, capture_output=True).stdout)
    return target


def serve(repository: Path, log: Path) -> EmbeddedTriton:
    """An embedded Triton of ``repository``, response cache off, the tests' engine cache; its
    first start (engines compiled, precisions timed) given :data:`START_TIMEOUT_S`."""
    return EmbeddedTriton(repository=repository, log_path=log, cache_bytes=0,
                          env={"OCR_ENGINE_CACHE_DIR": str(ENGINE_CACHE)}
                          ).start(timeout_s=START_TIMEOUT_S)


def markdown(report: dict) -> str:
    lines = ["# Word boxes", "", f"{report['when']}", "",
             "## Drawn letters: words answered as their own word, right text, IoU >= 0.5", "",
             "| long side | " + " | ".join(f"{a}°" for a in ANGLES) + " |",
             "| --- |" + " --- |" * len(ANGLES)]
    for side, table in report.get("drawn", {}).items():
        lines.append(f"| {side} | " + " | ".join(
            f"{table['angles'][a]['rate']:.3f} ({table['angles'][a]['hits']}/"
            f"{table['angles'][a]['truths']})" for a in ANGLES) + " |")
    lines += ["", "## ICDAR 2015 (IoU >= 0.5)", "", "| boxes | precision | recall | H-mean |",
              "| --- | --- | --- | --- |"]
    for key, s in report.get("icdar", {}).items():
        lines.append(f"| {key} | {s['precision']:.3f} | {s['recall']:.3f} | {s['hmean']:.3f} |")
    if report.get("time_ms"):
        lines += ["", "## Request time at the defaults, ms (median)", "",
                  "| image | baseline | words | change |", "| --- | --- | --- | --- |"]
        for name, (before, after) in report["time_ms"].items():
            lines.append(f"| {name} | {before:.0f} | {after:.0f} | {after / before - 1:+.1%} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.words", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", default="HEAD",
                        help="commit whose recognize/tesseract models answer no words, for the "
                             "time comparison (default HEAD; 'none' skips it)")
    parser.add_argument("--repeat", type=int, default=3, help="timed requests per image")
    parser.add_argument("--long-sides", default="1280,640",
                        help="working sizes of the drawn-letter table (default 1280,640)")
    parser.add_argument("--only", choices=("quality", "time"), default=None,
                        help="only the word-box tables, or only the time comparison")
    args = parser.parse_args(argv)
    quality, timed = args.only != "time", args.only != "quality" and args.baseline != "none"
    report = {"when": datetime.now(timezone.utc).isoformat(timespec="seconds"), "drawn": {}}
    samples = {"letter (drawn)": encode(letter_page(TEXTS[0], seed=100)[0]),
               **{name: (DATA / "images" / name).read_bytes()
                  for name in ("english.png", "img_1.jpg", "korean.png")}}
    with tempfile.TemporaryDirectory() as folder:
        server = serve(REPOSITORY, Path(folder) / "words.log")
        base = None
        try:
            client = TritonClient(server.grpc_url, timeout_s=600)
            if quality:
                for side in (int(s) for s in args.long_sides.split(",")):
                    report["drawn"][side] = drawn_table(client, side)
                report["icdar"] = icdar_table(client)
            if timed:
                base = serve(baseline_repository(args.baseline, Path(folder) / "baseline"),
                             Path(folder) / "baseline.log")
                before, after = timing(
                    [(base.grpc_url, baseline_outputs(args.baseline)),
                     (server.grpc_url, [tensor.name for tensor in OUTPUTS])],
                    samples, args.repeat)
                report["time_ms"] = {name: (before[name], after[name]) for name in samples}
        finally:
            server.stop()
            if base is not None:
                base.stop()
    RESULTS.mkdir(parents=True, exist_ok=True)
    stem = RESULTS / f"words-{datetime.now(timezone.utc):%Y%m%dT%H%M%SZ}"
    stem.with_suffix(".json").write_text(json.dumps(report, indent=1))
    stem.with_suffix(".md").write_text(markdown(report))
    print(markdown(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
