"""``python -m bench.reading``: lines of tilted pages, intact and in reading order.

A page photographed or scanned a few degrees off level is the common case; its lines rise or
fall across the page. This prints, per tilt, the share of a drawn page's lines that come back
as one line of the answer's ``text`` each, with the same words, in the order they were
written (the longest increasing subsequence of their positions, over the lines drawn):

- **levelled**: the answer as served (:func:`ocr_pipeline.reading_order.layout`, lines
  grouped along the text's own direction);
- **axis-aligned**: the same answer's boxes and texts grouped again by their axis-aligned
  vertical extents (:func:`ocr_pipeline.reading_order.lines_of` on the boxes as they are, the
  grouping before lines were levelled), so both columns come from one Triton call per page.

Pages: :func:`tests.image_factory.letter_page` with the texts of :data:`bench.words.TEXTS`
(never drawn by the tests) at :data:`SEEDS`, and :func:`tests.image_factory.table_page`
invoice tables of :data:`TABLE_ITEMS` (items the tests never draw) at :data:`TABLE_SEEDS`:
a row is a line, its cells left to right, single-digit quantities included. Each tilted by
:data:`TILTS`. Starts its own embedded Triton (engine cache of the tests), default
parameters. Writes ``bench/results/reading-<time>.md``.
"""

from __future__ import annotations

import argparse
import tempfile
from datetime import datetime, timezone
from pathlib import Path

from bench.report import publish
from bench.words import RESULTS, REPOSITORY, TEXTS, serve
from ocr_inference.client import TritonClient
from ocr_pipeline import reading_order
from ocr_pipeline.text_evaluation import tokens
from tests.image_factory import encode, letter_lines, letter_page, table_page

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


def lines_in_order(text: str, known: list[list[str]]) -> int:
    """How many of the ``known`` lines come back intact (one answer line, the same tokens) and
    in order: the longest increasing subsequence of their positions in ``text``."""
    answered = [tokens(line) for line in text.splitlines()]
    positions = []
    for line in known:
        wanted = tokens(" ".join(line))
        positions.append(next((i for i, got in enumerate(answered) if got == wanted), None))
    found = [p for p in positions if p is not None]
    longest = [1] * len(found)
    for i in range(len(found)):
        for j in range(i):
            if found[j] < found[i]:
                longest[i] = max(longest[i], longest[j] + 1)
    return max(longest, default=0)


def measure(client: TritonClient, pages) -> dict[float, tuple[int, int, int]]:
    """Per tilt: ``(lines drawn, levelled in order, axis-aligned in order)`` over the pages
    ``pages(tilt)`` yields (``(image, words)`` of :func:`tests.image_factory.letter_page`)."""
    table = {}
    for tilt in TILTS:
        drawn = levelled = axis = 0
        for image, words in pages(tilt):
            known = letter_lines(words)
            result = client.infer(encode(image), {})
            old = reading_order.full_text(result.texts, reading_order.lines_of(result.boxes))
            drawn += len(known)
            levelled += lines_in_order(result.text, known)
            axis += lines_in_order(old, known)
        table[tilt] = (drawn, levelled, axis)
    return table


def letters(tilt: float):
    """The drawn letters at ``tilt``."""
    for seed in SEEDS:
        for text in TEXTS:
            yield letter_page(text, skew=tilt, seed=seed)


def tables(tilt: float):
    """The drawn invoice tables at ``tilt``."""
    for seed in TABLE_SEEDS:
        yield table_page(TABLE_ITEMS, seed=seed, skew=tilt)


def markdown(tables: dict[str, dict[float, tuple[int, int, int]]], when: str) -> str:
    lines = ["# Reading order of tilted pages", "", when, ""]
    for kind, table in tables.items():
        lines += section(kind, table)
    return "\n".join(lines)


def section(kind: str, table: dict[float, tuple[int, int, int]]) -> list[str]:
    """One kind of page's table: per tilt, lines in order, served and axis-aligned."""
    lines = [f"## {kind}", "", "Lines intact and in reading order, over the lines drawn.", "",
             "| tilt | levelled (served) | axis-aligned (before) |", "| --- | --- | --- |"]
    totals = [0, 0, 0]
    for tilt, (drawn, levelled, axis) in table.items():
        lines.append(f"| {tilt:+.0f}° | {levelled}/{drawn} ({levelled / drawn:.2f}) | "
                     f"{axis}/{drawn} ({axis / drawn:.2f}) |")
        totals = [t + v for t, v in zip(totals, (drawn, levelled, axis))]
    drawn, levelled, axis = totals
    lines.append(f"| all | {levelled}/{drawn} ({levelled / drawn:.2f}) | "
                 f"{axis}/{drawn} ({axis / drawn:.2f}) |")
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
            table = {"Drawn letters": measure(client, letters),
                     "Drawn invoice tables (a row is a line)": measure(client, tables)}
        finally:
            server.stop()
    publish(markdown(table, when),
            RESULTS / f"reading-{datetime.now(timezone.utc):%Y%m%dT%H%M%SZ}.md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
