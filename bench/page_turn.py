"""``python -m bench.page_turn``: the figures behind ocr_pipeline.page_turn's constants.

For every image of the sets the constants were chosen on (tests/data/calibration and
tests/data/validation) and, apart, of the held-out ones (the tests' images and documents),
each upright and turned 90 and 270 degrees clockwise: the share of vertical neighbour
directions (:func:`ocr_pipeline.page_turn.vertical_share`), what the preprocess step would turn
the page by (:meth:`ocr_pipeline.page_turn.PageTurn.angle`, Tesseract's OSD included) and what
that cost. A turn is right when it undoes the turn made here; 0 means the page is left for
recognize's vote, as before. No Triton: a few seconds.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pypdfium2 as pdfium
from ocr_contract.languages import tessdata_dir
from ocr_contract.limits import PDF_DPI
from ocr_pipeline.page_turn import VERTICAL_SHARE, PageTurn, vertical_share
from PIL import Image

from .machine import describe_cpu
from .words import DATA

CHOSEN_ON = ("calibration", "validation")
HELD_OUT = ("images", "unseen")
TURNS = (0, 90, 270)


def images(folders: tuple[str, ...], documents: bool = False):
    """``(name, uint8 [H, W, 3] RGB)`` for each image of ``folders`` (and the first page of
    each test PDF at the gateway's dpi)."""
    for folder in folders:
        for path in sorted((DATA / folder).glob("*")):
            if path.suffix.lower() in (".jpg", ".png"):
                yield f"{folder}/{path.name}", np.asarray(Image.open(path).convert("RGB"))
    if documents:
        for path in sorted((DATA / "documents").glob("*.pdf")):
            try:
                page = pdfium.PdfDocument(path)[0]
            except pdfium.PdfiumError:
                continue
            yield f"documents/{path.name}", np.asarray(
                page.render(scale=PDF_DPI.default / 72).to_pil().convert("RGB"))


def table(title: str, found, turner: PageTurn) -> list[str]:
    """Markdown rows: each image's share and turn found, at each of :data:`TURNS`."""
    lines = [f"## {title}", "", "| image | " + " | ".join(
        f"turned {t}: share, turn found (OSD's angle, confidence), ms" for t in TURNS) + " |",
        "| --- |" + " --- |" * len(TURNS)]
    right = wrong = upright_turned = 0
    for name, upright in found:
        cells = []
        for turn in TURNS:
            pixels = np.ascontiguousarray(np.rot90(upright, k=-turn // 90))
            started = time.perf_counter()
            share = vertical_share(pixels)
            angle = turner.angle(pixels)
            ms = (time.perf_counter() - started) * 1000
            # OSD's own answer where it is asked (the lines run vertically), taken or not.
            osd = "" if share is None or share < VERTICAL_SHARE else \
                " (OSD {}, {:.2f})".format(*turner.osd(pixels))
            cells.append(f"{'-' if share is None else f'{share:.2f}'}, {angle}{osd}, {ms:.0f}")
            if turn == 0:
                upright_turned += angle != 0
            elif angle:
                right += angle == turn
                wrong += angle != turn
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    pages = len(lines) - 4
    lines += ["", f"Upright pages turned: {upright_turned} of {pages}. Turned pages "
              f"({pages * (len(TURNS) - 1)}): turned upright {right}, turned the wrong way "
              f"{wrong} (recognize's vote then turns them, as before), left as they were "
              f"{pages * (len(TURNS) - 1) - right - wrong}.", ""]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.page_turn", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.parse_args(argv)
    turner = PageTurn(tessdata_dir())
    try:
        report = [f"# A turned page found before detection (VERTICAL_SHARE {VERTICAL_SHARE:.2f})",
                  "", describe_cpu(), ""]
        report += table("The images the constants were chosen on", images(CHOSEN_ON), turner)
        report += table("Held out: the tests' images and documents",
                        images(HELD_OUT, documents=True), turner)
    finally:
        turner.close()
    print("\n".join(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
