"""OCRmyPDF with this service's plugin beside OCRmyPDF with its own Tesseract (``make
bench-ocrmypdf``, issue 57): the same 10-page scan, the same machine, one run.

The scan is OCRmyPDF's ``linn.pdf`` page 10 times (a 1985 product sheet at 200 dpi, 731 words,
its transcription ``linn.txt``), each copy cropped by another hundredth of a point
(:func:`bench.jobs.linn_copies`) so that no two pages are the same image. The service is
``make serve``'s stack (:class:`~ocr_embedded.stack.Stack`: embedded Triton, gunicorn, nginx, a
fresh database and key) at the defaults, its response cache off (a cached answer would time
nothing); OCRmyPDF runs at its defaults (``--jobs`` as many as the cores, PDF/A output) with
``--sidecar``, once with ``--plugin ocrmypdf_ocr_gateway`` and once with Tesseract (``-l eng``).
Printed: the CPU's flags, which detector the service's defaults chose here, each run's seconds
and pages per second, and text F against ``linn.txt`` per page (mean and least; the scoring
of :func:`ocr_pipeline.text_evaluation.score_text`), with the ratios side by side.

    python -m bench.ocrmypdf [--pages 10]
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ocr_pipeline.text_evaluation import score_text

from bench.jobs import LINN_WORDS, Client, linn_copies
from bench.machine import describe_cpu
from bench.report import publish
from ocr_embedded.stack import REPO_ROOT, Stack, engine_cache_dir

PLUGIN = "ocrmypdf_ocr_gateway"


def run_ocrmypdf(work: Path, name: str, args: list[str], env: dict) -> tuple[float, list[str]]:
    """``ocrmypdf <args> in.pdf <name>.pdf --sidecar <name>.txt`` in ``work``: its seconds and
    the sidecar's pages.

    Raises:
        RuntimeError: OCRmyPDF failed (its last output in the message).
    """
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "ocrmypdf", *args, "in.pdf", f"{name}.pdf",
                           "--sidecar", f"{name}.txt"], cwd=work, env={**os.environ, **env},
                          capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"ocrmypdf ({name}) exited {done.returncode}:\n{done.stderr[-3000:]}")
    return seconds, (work / f"{name}.txt").read_text().split("\f")


def detector_served(url: str, key: str) -> str:
    """The detector the service's defaults serve here and why (``/api/models``)."""
    detectors = Client(url, key).request("GET", "/api/models").json()["detectors"]
    return f"{detectors['default']} ({detectors['reason']})"


def markdown(pages: int, detector: str, runs: dict[str, tuple[float, list[float]]]) -> str:
    """The report: one row per run, then the ratios plugin / Tesseract."""
    setup = (f"OCRmyPDF {_ocrmypdf_version()} on linn.pdf's page x{pages} (200 dpi, each copy "
             f"cropped apart), at its defaults with --sidecar; the service at make serve's "
             f"defaults (response cache off), detector {detector}.")
    lines = [f"# bench-ocrmypdf ({time.strftime('%Y-%m-%d')}; {describe_cpu()})", "", setup, "",
             "| engine | seconds | pages/s | text F mean | text F least |", "|---|---|---|---|---|"]
    for name, (seconds, scores) in runs.items():
        lines.append(f"| {name} | {seconds:.1f} | {pages / seconds:.3f} | "
                     f"{sum(scores) / len(scores):.3f} | {min(scores):.3f} |")
    (ours_s, ours), (theirs_s, theirs) = runs["plugin (this service)"], runs["Tesseract"]
    gap = sum(ours) / len(ours) - sum(theirs) / len(theirs)
    lines += ["", f"- Time, plugin ÷ Tesseract: **{ours_s / theirs_s:.2f}×**",
              f"- Text F mean, plugin − Tesseract: **{gap:+.3f}**"]
    return "\n".join(lines)


def _ocrmypdf_version() -> str:
    from importlib.metadata import version

    return version("ocrmypdf")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="OCRmyPDF with the plugin vs with Tesseract "
                                                 "(make bench-ocrmypdf).")
    parser.add_argument("--pages", type=int, default=10, help="pages of the scan")
    parser.add_argument("--output", type=Path,
                        default=REPO_ROOT / "bench" / "results" / "ocrmypdf.md")
    args = parser.parse_args(argv)

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    work = Path(tempfile.mkdtemp(prefix="ocr-bench-ocrmypdf-"))
    print(f"bench-ocrmypdf: files and logs in {work}", flush=True)
    (work / "in.pdf").write_bytes(linn_copies(args.pages))
    os.environ.setdefault("DJANGO_SECRET_KEY", "bench-only")
    runs = {}
    with Stack(work, supervised=True, cache_bytes=0, engine_cache=engine_cache_dir(),
               state=work) as stack:
        detector = detector_served(stack.url, stack.key)
        print(f"1/2 OCRmyPDF with the plugin (detector {detector})", flush=True)
        seconds, pages = run_ocrmypdf(work, "plugin", ["--plugin", PLUGIN], {
            "OCR_GATEWAY_URL": stack.url, "OCR_GATEWAY_KEY": stack.key})
        runs["plugin (this service)"] = (seconds, [score_text(p, LINN_WORDS).f_score
                                                   for p in pages[:args.pages]])
    print("2/2 OCRmyPDF with Tesseract (the service stopped)", flush=True)
    seconds, pages = run_ocrmypdf(work, "tesseract", ["-l", "eng"], {})
    runs["Tesseract"] = (seconds, [score_text(p, LINN_WORDS).f_score for p in pages[:args.pages]])
    publish(markdown(args.pages, detector, runs), args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
