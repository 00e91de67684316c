"""``python -m bench.reading``: lines of tilted pages, intact and in reading order.

A page photographed or scanned a few degrees off level is the common case; its lines rise or
fall across the page. This prints, per tilt, the share of a drawn page's lines that come back
as one line of the answer's ``text`` each, with the same words, in the order they were
written (the longest increasing subsequence of their positions, over the lines drawn):

- **served**: the answer as served (:func:`ocr_pipeline.reading_order.layout`: lines
  grouped along the text's own direction, prose columns one after the other);
- **before**: the same answer's boxes and texts grouped again the way an earlier version did,
  so both columns come from one Triton call per page: letters and tables by their
  axis-aligned vertical extents (:func:`ocr_pipeline.reading_order.lines_of` on the boxes as
  they are, before lines were levelled); two-column pages by levelled rows across the page
  (``lines_of`` of the levelled boxes, before prose columns were found).

Pages: :func:`tests.image_factory.letter_page` with the texts of :data:`bench.words.TEXTS`
(never drawn by the tests) at :data:`SEEDS`; :func:`tests.image_factory.table_page` invoice
tables of :data:`TABLE_ITEMS` (items the tests never draw) at :data:`TABLE_SEEDS`: a row is a
line, its cells left to right, single-digit quantities included;
:func:`tests.image_factory.invoice_page` invoices of :data:`HAND_ROWS` laid out by hand
(:data:`HAND_LAYOUTS`: columns starting at fixed x, rows 2-2.3 lines apart, tilted to the
nearest pixel as Pillow's ``rotate`` does);
:func:`tests.image_factory.columns_page` pages of two columns of :data:`COLUMN_TEXTS` at
:data:`COLUMN_SEEDS`. Each tilted by :data:`TILTS`. Then OCRmyPDF's ``linn.pdf`` (a real
1985 scan with a two-column section) and ``skew.pdf`` (the same scan tilted), their lines
against the transcription ``linn.txt`` (:func:`similar_lines_in_order`: the transcription
has its own misreadings). Starts its own
embedded Triton (engine cache of the tests), default parameters. Writes
``bench/results/reading-<time>.md``.
"""

from __future__ import annotations

import argparse
import difflib
import tempfile
from datetime import datetime, timezone
from pathlib import Path

from bench.report import publish
from bench.words import DATA, RESULTS, REPOSITORY, TEXTS, serve
from ocr_inference.client import TritonClient
from ocr_pipeline import reading_order
from ocr_pipeline.orientation import to_upright
from ocr_pipeline.text_evaluation import tokens
from tests.image_factory import (LETTER_FONTS, columns_page, encode, invoice_page, letter_lines,
                                 letter_page, table_page)

#: Tilts of the drawn pages, degrees counter-clockwise (a phone photo of a page: up to ~5).
TILTS = (-5.0, -3.0, -2.0, 0.0, 2.0, 3.0, 5.0)
#: Seeds of the drawn pages (fonts and sizes; the tests draw seeds below 100): each text is
#: drawn once per seed.
SEEDS = (200, 201)
#: Items of the drawn tables (name, unit price), none of the tests' own.
TABLE_ITEMS = (("Oak shelf 80 cm", 24.50), ("Brass hinges, pair", 3.40),
               ("Wood glue 250 ml", 5.95), ("Sanding sheets, pack of 10", 4.20),
               ("Paint brush set", 11.75), ("Masking tape 50 m", 2.35),
               ("Spirit level", 18.90), ("Screws 4 x 40, box", 6.10))
#: Seeds of the drawn tables (font, size, row spacing, items, quantities).
TABLE_SEEDS = (210, 211, 212, 213)
#: A hand-laid invoice's rows (of :data:`TABLE_ITEMS`), its columns left-aligned.
HAND_ROWS = (("Description", "Qty", "Unit price", "Amount"),
             ("Oak shelf 80 cm", "2", "24.50", "49.00"), ("Wood glue 250 ml", "1", "5.95", "5.95"),
             ("Spirit level", "1", "18.90", "18.90"), ("Paint brush set", "4", "11.75", "47.00"),
             ("Masking tape 50 m", "7", "2.35", "16.45"), ("Screws 4 x 40, box", "3", "6.10",
                                                           "18.30"))
#: The hand-laid invoices' layouts (:func:`tests.image_factory.invoice_page`'s arguments:
#: fonts, sizes, row spacings and page widths none of this project's constants were set on).
HAND_LAYOUTS = (
    dict(font_path=LETTER_FONTS[1], size=36, pitch=80, width=2200, lefts=(60, 1000, 1350, 1800)),
    dict(font_path=LETTER_FONTS[2], size=32, pitch=64, width=2000, lefts=(60, 900, 1250, 1650)),
    dict(font_path=LETTER_FONTS[3], size=40, pitch=90, width=2400, lefts=(60, 1150, 1500, 2000)),
    dict(font_path=LETTER_FONTS[0], size=28, pitch=56, width=1800, lefts=(60, 820, 1080, 1450)))
#: The two columns of the drawn two-column pages (written for this benchmark; no test draws
#: them, and the column constants were set on other texts).
COLUMN_TEXTS = ("The ferry to the islands leaves the north pier at eight each morning and "
                "returns at six. Tickets are sold on board, and bicycles travel free outside "
                "the holiday weeks. In a strong westerly wind the crossing is cancelled, and "
                "the harbour office posts a notice by the gate before seven.",
                "Walkers who reach the lighthouse can climb its hundred and twelve steps on "
                "fine afternoons. The keeper's cottage beside it is now a small museum of "
                "wrecks and rescues, with a model of the lifeboat that served the coast for "
                "forty years. Entry is free; a box by the door takes gifts.")
#: Seeds of the drawn two-column pages (font, column sizes, line pitches, gutter).
COLUMN_SEEDS = (220, 221, 222, 223)
#: The real scans of linn.txt's page (``tests/data/documents``): name -> file.
SCANS = {"linn.pdf (upright)": "ocrmypdf_linn.pdf",
         "skew.pdf (tilted ~2.5°)": "ocrmypdf_skew.pdf"}
#: Least similarity (:class:`difflib.SequenceMatcher` ratio of the tokens) of an answer's line
#: to a transcription's line for it to count as that line, misreadings on either side aside.
SIMILAR_LINE = 0.8


def lines_in_order(text: str, known: list[list[str]]) -> int:
    """How many of the ``known`` lines come back intact (one answer line, the same tokens) and
    in order: the longest increasing subsequence of their positions in ``text``."""
    answered = [tokens(line) for line in text.splitlines()]
    positions = []
    for line in known:
        wanted = tokens(" ".join(line))
        positions.append(next((i for i, got in enumerate(answered) if got == wanted), None))
    return _longest_increasing([p for p in positions if p is not None])


def _longest_increasing(values: list[int]) -> int:
    """The length of the longest strictly increasing subsequence of ``values``."""
    longest = [1] * len(values)
    for i in range(len(values)):
        for j in range(i):
            if values[j] < values[i]:
                longest[i] = max(longest[i], longest[j] + 1)
    return max(longest, default=0)


def measure(client: TritonClient, pages, before) -> dict[float, tuple[int, int, int]]:
    """Per tilt: ``(lines drawn, served in order, before in order)`` over the pages
    ``pages(tilt)`` yields (``(image, words)`` of :func:`tests.image_factory.letter_page`);
    ``before(result)``: the answer's text grouped the earlier way."""
    table = {}
    for tilt in TILTS:
        drawn = served = earlier = 0
        for image, words in pages(tilt):
            known = letter_lines(words)
            result = client.infer(encode(image), {})
            drawn += len(known)
            served += lines_in_order(result.text, known)
            earlier += lines_in_order(before(result), known)
        table[tilt] = (drawn, served, earlier)
    return table


def axis_aligned(result) -> str:
    """The answer's text grouped by the boxes' axis-aligned vertical extents."""
    return reading_order.full_text(result.texts, reading_order.lines_of(result.boxes))


def rows(result) -> str:
    """The answer's text grouped into levelled rows across the page, columns not found."""
    upright = to_upright(result.boxes, result.angle, result.width, result.height)
    return reading_order.full_text(result.texts,
                                   reading_order.lines_of(reading_order.level(upright)))


def similar_lines_in_order(text: str, known: list[str]) -> int:
    """:func:`lines_in_order` where a line of ``text`` counts as a ``known`` line when their
    tokens are :data:`SIMILAR_LINE` alike (the first such line, searched from the line after
    the previous match, then from the start)."""
    answered = [" ".join(tokens(line)) for line in text.splitlines()]
    positions = []
    for line in known:
        wanted = " ".join(tokens(line))
        alike = [i for i, got in enumerate(answered)
                 if difflib.SequenceMatcher(None, got, wanted).ratio() >= SIMILAR_LINE]
        after = [i for i in alike if not positions or positions[-1] is None
                 or i > positions[-1]]
        positions.append((after or alike or [None])[0])
    return _longest_increasing([p for p in positions if p is not None])


def scan(client: TritonClient, name: str) -> tuple[int, int, int]:
    """``(transcribed lines, served in order, levelled rows in order)`` of ``name``, a scan of
    linn.txt's page in ``tests/data/documents``."""
    known = [line for line in (DATA / "documents" / "ocrmypdf_linn.txt").read_text()
             .splitlines() if line.strip()]
    result = client.infer((DATA / "documents" / name).read_bytes(), {})
    return (len(known), similar_lines_in_order(result.text, known),
            similar_lines_in_order(rows(result), known))


def letters(tilt: float):
    """The drawn letters at ``tilt``."""
    for seed in SEEDS:
        for text in TEXTS:
            yield letter_page(text, skew=tilt, seed=seed)


def tables(tilt: float):
    """The drawn invoice tables at ``tilt``."""
    for seed in TABLE_SEEDS:
        yield table_page(TABLE_ITEMS, seed=seed, skew=tilt)


def hand_laid(tilt: float):
    """The hand-laid invoices at ``tilt``."""
    for layout in HAND_LAYOUTS:
        yield invoice_page(HAND_ROWS, skew=tilt, **layout)


def two_columns(tilt: float):
    """The drawn two-column pages at ``tilt``."""
    for seed in COLUMN_SEEDS:
        yield columns_page(COLUMN_TEXTS, title="Visiting the islands", seed=seed, skew=tilt)


def markdown(tables: dict[str, tuple[str, dict]], scans: dict[str, tuple[int, int, int]],
             when: str) -> str:
    lines = ["# Reading order of tilted pages", "", when, ""]
    for kind, (before, table) in tables.items():
        lines += section(kind, before, table)
    lines += ["## Real scans: OCRmyPDF's linn.pdf, upright and tilted (two columns mid-page)",
              "", f"Transcribed lines (linn.txt) found in order, tokens {SIMILAR_LINE:.0%} "
              "alike.", "", "| scan | served | rows (before) |", "| --- | --- | --- |"]
    for name, (known, served, earlier) in scans.items():
        lines.append(f"| {name} | {served}/{known} ({served / known:.2f}) | "
                     f"{earlier}/{known} ({earlier / known:.2f}) |")
    return "\n".join(lines + [""])


def section(kind: str, before: str, table: dict[float, tuple[int, int, int]]) -> list[str]:
    """One kind of page's table: per tilt, lines in order, served and grouped ``before``."""
    lines = [f"## {kind}", "", "Lines intact and in reading order, over the lines drawn.", "",
             f"| tilt | served | {before} (before) |", "| --- | --- | --- |"]
    totals = [0, 0, 0]
    for tilt, (drawn, served, earlier) in table.items():
        lines.append(f"| {tilt:+.0f}° | {served}/{drawn} ({served / drawn:.2f}) | "
                     f"{earlier}/{drawn} ({earlier / drawn:.2f}) |")
        totals = [t + v for t, v in zip(totals, (drawn, served, earlier))]
    drawn, served, earlier = totals
    lines.append(f"| all | {served}/{drawn} ({served / drawn:.2f}) | "
                 f"{earlier}/{drawn} ({earlier / drawn:.2f}) |")
    return lines + [""]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.reading", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.parse_args(argv)
    when = datetime.now(timezone.utc).isoformat(timespec="seconds")
    with tempfile.TemporaryDirectory() as folder:
        server = serve(REPOSITORY, Path(folder) / "reading.log")
        try:
            client = TritonClient(server.grpc_url, timeout_s=600)
            table = {"Drawn letters": ("axis-aligned", measure(client, letters, axis_aligned)),
                     "Drawn invoice tables (a row is a line)": (
                         "axis-aligned", measure(client, tables, axis_aligned)),
                     "Hand-laid invoices (left-aligned columns, tilted to the nearest pixel)": (
                         "axis-aligned", measure(client, hand_laid, axis_aligned)),
                     "Drawn two-column pages": ("rows", measure(client, two_columns, rows))}
            scans = {name: scan(client, file) for name, file in SCANS.items()}
        finally:
            server.stop()
    publish(markdown(table, scans, when),
            RESULTS / f"reading-{datetime.now(timezone.utc):%Y%m%dT%H%M%SZ}.md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
