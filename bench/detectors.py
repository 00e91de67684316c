"""``python -m bench.detectors``: the two text detectors side by side, in one run, on this
machine (``make bench-detectors``).

Both pipelines through one embedded Triton of this tree (response cache off, the tests' engine
cache: each network in the precision ``auto`` serves here), at the defaults, text read:

- **Agreement on the validation set** (``tests/data/validation``, which no test uses): DB's
  answers against CRAFT's, image by image: text F (DB's words against CRAFT's, as bags of
  tokens, :mod:`ocr_pipeline.text_evaluation`) and the share of CRAFT's words DB answers with
  the same text on a box of IoU >= 0.5 (:mod:`ocr_pipeline.word_evaluation`). What
  ``detector=auto`` needs to serve DB (``ocr_api.detectors.AGREEMENT_FLOOR``); ``--record``
  writes it to ``ocr_api/detector_agreement.json`` with the fingerprint of the networks and
  the set it was measured on.
- **Quality on held-out images** (the shared images with known words,
  ``recognition/text_gt.json``; the ICDAR 2015 sample, ``icdar2015_gt.json``; the unseen ICDAR
  images, ``tests/data/unseen``): each detector's own text F and recall, and H-mean.
- **Time**: each image read once untimed, then ``--repeat`` times by each pipeline in turn;
  the median per image, and their ratio.

Prints and writes ``bench/results/detectors-<time>.md``, with the CPU's flags.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from ocr_contract.parameters import DETECTOR
from ocr_contract.tensors import CRAFT_DETECTOR, DB_DETECTOR, DETECTOR_ENSEMBLES
from ocr_inference.client import OcrResult, TritonClient
from ocr_pipeline.evaluation import DetectionScore, load_mmocr_textdet, score_image
from ocr_pipeline.text_evaluation import TextScore, load_text_truth, score_text
from ocr_pipeline.validation import DEFAULT_FOLDER
from ocr_pipeline.word_evaluation import WordScore, score_words

from .machine import describe_cpu
from .report import publish
from .words import DATA, REPOSITORY, RESULTS, serve

ROOT = Path(__file__).resolve().parent.parent
DETECTORS = tuple(DETECTOR_ENSEMBLES)
#: Where ``--record`` writes the agreement ``ocr_api.detectors`` reads.
RECORD = ROOT / "ocr_api" / "detector_agreement.json"
_IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png"}


def fingerprint() -> str:
    """What the agreement was measured on: the validation set and every network's source
    (:data:`ocr_pipeline.weights.WEIGHTS`' hashes); ``ocr_api.detectors`` serves DB only on a
    record of the networks it runs."""
    import hashlib

    from ocr_pipeline.validation import ValidationSet
    from ocr_pipeline.weights import WEIGHTS

    digest = hashlib.sha256(ValidationSet(DEFAULT_FOLDER).fingerprint().encode())
    for weight in WEIGHTS:
        digest.update(f"{weight.member}:{weight.sha256}:{','.join(weight.edits)}".encode())
    return digest.hexdigest()[:16]


def words_of(result: OcrResult) -> list[tuple[str, list]]:
    """``(text, points)`` of every word of an answer."""
    return [(text, box.tolist()) for text, box in zip(result.words.texts, result.words.boxes)]


def agreement(craft: dict[str, OcrResult], db: dict[str, OcrResult]) -> dict:
    """DB's answers against CRAFT's (see the module docstring), summed over the images, and
    per image."""
    text, words, per_image = TextScore(), WordScore(), {}
    for name, reference in craft.items():
        image_text = score_text(db[name].text, [t for t, _ in words_of(reference)])
        image_words = score_words(words_of(db[name]), words_of(reference))
        text.add(image_text)
        words.add(image_words)
        per_image[name] = {"text_f": round(image_text.f_score, 3),
                           "words": round(image_words.rate, 3)}
    return {"text_f": round(text.f_score, 3), "words": round(words.rate, 3),
            "images": per_image}


def timed_reads(clients: dict[str, TritonClient], images: dict[str, bytes],
                repeat: int) -> tuple[dict, dict]:
    """Each image by each detector: once untimed, then ``repeat`` times in turn. Returns
    ``({detector: {image: OcrResult}}, {detector: {image: median ms}})``."""
    answers = {d: {} for d in clients}
    samples = {d: {name: [] for name in images} for d in clients}
    for name, data in images.items():
        for detector, client in clients.items():
            answers[detector][name] = client.infer(data, {DETECTOR.name: detector})
    for _ in range(repeat):
        for name, data in images.items():
            for detector, client in clients.items():
                started = time.perf_counter()
                client.infer(data, {DETECTOR.name: detector})
                samples[detector][name].append((time.perf_counter() - started) * 1000.0)
    return answers, {d: {n: statistics.median(v) for n, v in s.items() if v}
                     for d, s in samples.items()}


def quality(answers: dict[str, OcrResult]) -> dict:
    """One detector's own quality on the held-out images."""
    complete, partial = TextScore(), TextScore()
    for truth in load_text_truth(DATA / "recognition" / "text_gt.json"):
        if truth.image in answers:
            (complete if truth.complete else partial).add(
                score_text(answers[truth.image].text, truth.words))
    icdar = {}
    for label, ground_truth in (("ICDAR sample", DATA / "icdar2015_gt.json"),
                                ("unseen ICDAR", DATA / "unseen" / "icdar2015_gt.json")):
        total = DetectionScore()
        for entry in load_mmocr_textdet(ground_truth):
            total.add(score_image(answers[entry.image].boxes.tolist(), entry.truths,
                                  entry.dont_care))
        icdar[label] = round(total.hmean, 3)
    return {"text_f_complete": round(complete.f_score, 3),
            "text_recall_partial": round(partial.recall, 3), "hmean": icdar}


def folder_images(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir())
            if path.suffix.lower() in _IMAGE_SUFFIXES}


def markdown(report: dict) -> str:
    agree = report["agreement"]
    lines = [f"# Text detectors, CRAFT and DB ({report['when']})", "",
             f"Machine: {report['machine']}", "", "Served: " + "; ".join(
                 f"{name}: {text}" for name, text in report["engines"].items()), "",
             f"## DB's answers against CRAFT's on the validation set "
             f"({len(agree['images'])} images)", "",
             f"Text F **{agree['text_f']:.3f}**, CRAFT's words found by DB with their text "
             f"and box **{agree['words']:.3f}** (fingerprint {report['fingerprint']}).", "",
             "| image | text F | words |", "| --- | ---: | ---: |"]
    lines += [f"| {name} | {v['text_f']:.3f} | {v['words']:.3f} |"
              for name, v in agree["images"].items()]
    lines += ["", "## Each detector's own quality, held-out images", "",
              "| detector | text F (complete images) | text recall (partial) | "
              "H-mean ICDAR sample | H-mean unseen ICDAR |", "| --- | ---: | ---: | ---: | ---: |"]
    for detector, q in report["quality"].items():
        lines.append(f"| {detector} | {q['text_f_complete']:.3f} | "
                     f"{q['text_recall_partial']:.3f} | {q['hmean']['ICDAR sample']:.3f} | "
                     f"{q['hmean']['unseen ICDAR']:.3f} |")
    lines += ["", "## Time per image at the defaults, text read (median ms)", "",
              "| image | craft | db | db / craft |", "| --- | ---: | ---: | ---: |"]
    times = report["time_ms"]
    for name in times[CRAFT_DETECTOR]:
        craft, db = times[CRAFT_DETECTOR][name], times[DB_DETECTOR][name]
        lines.append(f"| {name} | {craft:.0f} | {db:.0f} | {db / craft:.2f} |")
    craft_p50 = statistics.median(times[CRAFT_DETECTOR].values())
    db_p50 = statistics.median(times[DB_DETECTOR].values())
    lines.append(f"| **p50** | **{craft_p50:.0f}** | **{db_p50:.0f}** | "
                 f"**{db_p50 / craft_p50:.2f}** |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.detectors", description=__doc__)
    parser.add_argument("--repeat", type=int, default=3, help="timed reads per image")
    parser.add_argument("--record", action="store_true",
                        help=f"write the validation agreement to {RECORD.relative_to(ROOT)}")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)

    from ocr_inference.triton_metrics import engine_info

    work = Path(tempfile.mkdtemp(prefix="ocr-bench-detectors-"))
    server = serve(REPOSITORY, work / "triton.log")
    try:
        clients = {d: TritonClient(server.grpc_url, timeout_s=600) for d in DETECTORS}
        validation, _ = timed_reads(clients, folder_images(DEFAULT_FOLDER), 0)
        held_out = {**folder_images(DATA / "images"), **folder_images(DATA / "unseen")}
        answers, times = timed_reads(clients, held_out, args.repeat)
        engines = engine_info(server.metrics_url)
    finally:
        server.stop()
    report = {"when": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
              "machine": describe_cpu(), "fingerprint": fingerprint(),
              "engines": {name: text.split(" (")[0] for name, text in sorted(engines.items())},
              "agreement": agreement(validation[CRAFT_DETECTOR], validation[DB_DETECTOR]),
              "quality": {d: quality(answers[d]) for d in DETECTORS}, "time_ms": times}
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    publish(markdown(report), args.out / f"detectors-{stamp}.md")
    (args.out / f"detectors-{stamp}.json").write_text(json.dumps(report, indent=1))
    if args.record:
        RECORD.write_text(json.dumps({
            "text_f": report["agreement"]["text_f"], "words": report["agreement"]["words"],
            "fingerprint": report["fingerprint"], "measured": report["when"],
            "machine": report["machine"]}, indent=1) + "\n")
        print(f"recorded in {RECORD}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
