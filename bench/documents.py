"""``python -m bench.documents`` (``make bench-documents``): what documents cost beside the OCR.

- The gateway: opening a PDF (PDFium counts the pages, pikepdf cuts them) for a 200-page PDF,
  which is refused from its page count, and for documents it reads; milliseconds, median of 5.
- What opening in a parser process costs (:mod:`ocr_api.intake.isolation`: a crash or hang
  of the native parsers costs one request): per upload, in the gateway's own process
  (:func:`~ocr_api.intake.documents.open_in_process`) beside through a warm parser pool
  (:func:`~ocr_api.intake.documents.open_isolated`), median of 50; the target: a few
  milliseconds more at most. ``--opening-only`` measures only the gateway's side (no Triton).
- Triton: each page of the test documents sent as the gateway sends it (a single-page PDF),
  one at a time, response cache off, at the default working size with the text read; per page
  the time of ``preprocess`` (PDFium rendering at OCR_PDF_DPI, the resize, the hand-over)
  beside the whole ensemble's, from Triton's own statistics. The target: rendering and
  encoding at most 10 % of a page's OCR time.

Writes ``bench/results/documents-<time>.{json,md}``.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import time
from datetime import datetime, timezone
from pathlib import Path

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gateway.settings")

import django  # noqa: E402

django.setup()

import tritonclient.grpc as grpcclient  # noqa: E402
from PIL import Image  # noqa: E402

from ocr_api.intake import documents  # noqa: E402
from ocr_contract.tensors import ENSEMBLE  # noqa: E402
from ocr_embedded.launcher import EmbeddedTriton  # noqa: E402
from ocr_embedded.stack import Stack, engine_cache_dir  # noqa: E402
from ocr_inference.client import TritonClient  # noqa: E402

from . import triton_stats  # noqa: E402
from .machine import describe_cpu  # noqa: E402
from tests.helpers import blank_pdf  # noqa: E402
from .pipeline import model_repository  # noqa: E402

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"
DEFAULT_OUT = Path(__file__).resolve().parent / "results"


def sample_documents() -> dict[str, bytes]:
    """The test documents: the two-page PDF of english.png and idcard.png (96 dpi), the
    scanned linn.pdf and the born-digital text.pdf (tests/data/documents)."""
    pages = [Image.open(DATA / "images" / name).convert("RGB")
             for name in ("english.png", "idcard.png")]
    out = io.BytesIO()
    pages[0].save(out, "PDF", save_all=True, append_images=pages[1:], resolution=96)
    return {"two-page (english, idcard)": out.getvalue(),
            "linn.pdf (scan)": (DATA / "documents" / "ocrmypdf_linn.pdf").read_bytes(),
            "text.pdf (born digital)": (DATA / "documents" / "pypdfium2_text.pdf").read_bytes()}


def open_ms(data: bytes, max_pages: int = 10, runs: int = 5) -> tuple[float, str]:
    """Median milliseconds of :func:`ocr_api.intake.documents.open_document`, and its outcome."""
    times, outcome = [], ""
    for _ in range(runs):
        started = time.perf_counter()
        try:
            outcome = f"{documents.open_document(data, max_pages).page_count} pages"
        except Exception as exc:  # noqa: BLE001 - the refusal is the outcome measured
            outcome = f"refused: {getattr(exc, 'default_code', type(exc).__name__)}"
        times.append((time.perf_counter() - started) * 1000.0)
    return statistics.median(times), outcome


def isolation_samples() -> dict[str, bytes]:
    """Uploads for the isolation cost: the scanned 1-page linn.pdf (75 KB), that page ten
    times (pikepdf), a JPEG, and the same JPEG padded to the 20 MiB upload cap (its header is
    all that is read: the cost of carrying the bytes to the parser process and back)."""
    import pikepdf

    linn = (DATA / "documents" / "ocrmypdf_linn.pdf").read_bytes()
    with pikepdf.open(io.BytesIO(linn)) as source, pikepdf.new() as ten:
        for _ in range(10):
            ten.pages.append(source.pages[0])
        out = io.BytesIO()
        ten.save(out)
    jpeg = (DATA / "images" / "img_1.jpg").read_bytes()
    return {"linn.pdf, 1 page": linn, "linn.pdf x10, 10 pages": out.getvalue(),
            "img_1.jpg": jpeg,
            "img_1.jpg + padding to 20 MiB": jpeg + bytes(20 * 1024 * 1024 - len(jpeg))}


def isolation_costs(runs: int = 50) -> list[dict]:
    """Per upload: median milliseconds of opening it in this process and through a warm
    parser pool with the default settings (each run alternates the two)."""
    from django.conf import settings

    from ocr_api.intake import isolation
    from ocr_contract import limits

    pool = isolation.ParserPool(limits.PARSER_PROCESSES.default,
                                limits.PARSER_MEMORY_BYTES.default)
    pool.warm_up()
    bounds = {"max_pixels": settings.OCR_MAX_PIXELS, "min_side": settings.OCR_MIN_IMAGE_SIDE}
    rows = []
    try:
        for name, data in isolation_samples().items():
            local, isolated = [], []
            for run in range(runs + 3):              # the first 3: warming the caches
                started = time.perf_counter()
                document = documents.open_in_process(data, 10, **bounds)
                middle = time.perf_counter()
                again = documents.open_isolated(pool, data, 10, **bounds,
                                                timeout_ms=limits.PARSER_TIMEOUT_MS.default)
                ended = time.perf_counter()
                assert again == document, name
                if run >= 3:
                    local.append((middle - started) * 1000.0)
                    isolated.append((ended - middle) * 1000.0)
            rows.append({"upload": name, "bytes": len(data), "pages": document.page_count,
                         "in_process_ms": statistics.median(local),
                         "isolated_ms": statistics.median(isolated),
                         "added_ms": statistics.median(isolated) - statistics.median(local),
                         "isolated_p90_ms": sorted(isolated)[int(len(isolated) * 0.9)]})
    finally:
        pool.close()
    return rows


def isolation_markdown(rows: list[dict]) -> list[str]:
    lines = ["", "Opening in a parser process (a crash or hang costs one request) beside in the "
             "gateway's own process, warm pool, median of 50:", "",
             "| upload | bytes | pages | in process ms | parser process ms | added ms | "
             "parser p90 ms |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    lines += [f"| {r['upload']} | {r['bytes']} | {r['pages']} | {r['in_process_ms']:.2f} | "
              f"{r['isolated_ms']:.2f} | {r['added_ms']:+.2f} | {r['isolated_p90_ms']:.2f} |"
              for r in rows]
    return lines


def page_costs(triton: EmbeddedTriton, samples: dict[str, bytes]) -> list[dict]:
    """Per page of every sample: preprocess and ensemble milliseconds (Triton's statistics)."""
    stats = grpcclient.InferenceServerClient(triton.grpc_url)
    client = TritonClient(triton.grpc_url, timeout_s=600)
    rows = []
    try:
        for name, data in samples.items():
            document = documents.open_document(data, 10)
            for index in range(document.page_count):
                page, extra = documents.page_input(document, index)
                before = triton_stats.snapshot(stats)
                result = client.infer(page, extra)
                after = triton_stats.per_request(
                    before, triton_stats.snapshot_after(stats, before, ENSEMBLE, 1), 1)
                pre = after["preprocess"]
                preprocess_ms = sum(pre[f"{stage}_ms"] for stage in triton_stats.STAGES)
                rows.append({"document": name, "page": index + 1, "bytes": len(page),
                             "size": f"{result.width}x{result.height}",
                             "preprocess_ms": preprocess_ms,
                             "ensemble_ms": after[ENSEMBLE]["success_ms"],
                             "share": preprocess_ms / after[ENSEMBLE]["success_ms"]})
    finally:
        client.close()
        stats.close()
    return rows


def markdown(machine: str, opening: list[tuple], rows: list[dict],
             isolation: list[dict] = ()) -> str:
    lines = [f"Machine: {machine}", "", "Opening in the gateway (median of 5):", "",
             "| document | ms | outcome |", "| --- | ---: | --- |"]
    lines += [f"| {name} | {ms:.1f} | {outcome} |" for name, ms, outcome in opening]
    if isolation:
        lines += isolation_markdown(isolation)
    if not rows:
        return "\n".join(lines) + "\n"
    lines += ["", "Per page in Triton (default working size, text read, cache off): "
              "`preprocess` (PDFium rendering at OCR_PDF_DPI, the resize, the hand-over) "
              "beside the whole ensemble:", "",
              "| document | page | bytes sent | rendered px | preprocess ms | ensemble ms | "
              "preprocess share |", "| --- | ---: | ---: | --- | ---: | ---: | ---: |"]
    lines += [f"| {r['document']} | {r['page']} | {r['bytes']} | {r['size']} | "
              f"{r['preprocess_ms']:.0f} | {r['ensemble_ms']:.0f} | {r['share'] * 100:.1f} % |"
              for r in rows]
    if rows:
        lines += ["", f"Preprocess share over all pages: "
                  f"{sum(r['preprocess_ms'] for r in rows) / sum(r['ensemble_ms'] for r in rows) * 100:.1f} % "
                  "(target: at most 10 %)."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.documents", description=__doc__)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--opening-only", action="store_true",
                        help="measure the gateway's side only (no Triton)")
    args = parser.parse_args(argv)
    samples = sample_documents()
    opening = [("200 blank pages", *open_ms(blank_pdf(200))),
               ("10 blank pages", *open_ms(blank_pdf(10)))]
    opening += [(name, *open_ms(data)) for name, data in samples.items()]
    isolation = isolation_costs()
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    args.out.mkdir(parents=True, exist_ok=True)
    machine = describe_cpu()
    if args.opening_only:
        table = markdown(machine, opening, [], isolation)
        print("\n" + table)
        (args.out / f"documents-opening-{stamp}.json").write_text(json.dumps(
            {"machine": machine, "opening": opening, "isolation": isolation}, indent=1))
        (args.out / f"documents-opening-{stamp}.md").write_text(table)
        return 0
    with Stack(args.out, log_prefix=f"documents-{stamp}-", repository=model_repository(),
               cache_bytes=0, engine_cache=engine_cache_dir(), triton_start_timeout_s=900,
               gateway=False, proxy=False) as stack:
        rows = page_costs(stack.embedded_triton, samples)
    table = markdown(machine, opening, rows, isolation)
    print("\n" + table)
    (args.out / f"documents-{stamp}.json").write_text(json.dumps(
        {"machine": machine, "opening": opening, "isolation": isolation, "pages": rows},
        indent=1))
    (args.out / f"documents-{stamp}.md").write_text(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
