"""Reading order: boxes grouped into lines, lines top to bottom, boxes left to right; lines
grouped into paragraphs.

Lines (for horizontal left-to-right scripts, slanted lines included): boxes are taken from
the top down by their vertical centre; a box joins the line it overlaps most vertically when
that overlap is at least half the height of the smaller of the two (line extent: the union of
its boxes' extents), else it starts a new line. Lines are ordered by the mean vertical centre
of their boxes, and the boxes of a line by their left edge. The whole text is each line's box
texts joined by one space, lines joined by newlines; boxes whose text is empty are skipped.
A line's polygon is the minimum-area rectangle of its boxes' corners.

Paragraphs (:func:`paragraphs_of`), by layout as Google's ``fullTextAnnotation`` and Azure
Read group lines: a line continues the paragraph of the line before it when the gap between
them is at most :data:`PARAGRAPH_GAP` times their mean height, their heights differ by at most
:data:`PARAGRAPH_SIZE_RATIO`, and their horizontal extents overlap by at least
:data:`PARAGRAPH_OVERLAP` of the narrower one (a column of text; a caption beside a title is
another paragraph). Heights are the median height of a line's boxes. Columns are not found:
a row of boxes across two columns is one line.
"""

from __future__ import annotations

import numpy as np

from .orientation import area, from_upright, to_upright

#: Vertical overlap, as a share of the smaller height, that puts a box on a line.
LINE_OVERLAP = 0.5
#: Most gap between two lines of a paragraph, in their mean line height.
PARAGRAPH_GAP = 0.8
#: Most ratio of the taller to the shorter line height within a paragraph.
PARAGRAPH_SIZE_RATIO = 1.5
#: Least horizontal overlap of two lines of a paragraph, as a share of the narrower line.
PARAGRAPH_OVERLAP = 0.3


def lines_of(boxes: np.ndarray) -> list[list[int]]:
    """The boxes grouped into lines in reading order.

    Args:
        boxes: float32 ``[N, 4, 2]`` corner points (x, y), any pixel frame.

    Returns:
        lines top to bottom, each a list of box indices left to right; every index once.
    """
    boxes = np.asarray(boxes, dtype=np.float32).reshape(-1, 4, 2)
    tops, bottoms = boxes[:, :, 1].min(axis=1), boxes[:, :, 1].max(axis=1)
    lefts = boxes[:, :, 0].min(axis=1)
    centres = (tops + bottoms) / 2
    lines: list[dict] = []
    for index in np.argsort(centres, kind="stable"):
        top, bottom = tops[index], bottoms[index]
        best, best_share = None, LINE_OVERLAP
        for line in lines:
            overlap = min(bottom, line["bottom"]) - max(top, line["top"])
            smaller = min(bottom - top, line["bottom"] - line["top"])
            share = overlap / smaller if smaller > 0 else 0.0
            if share >= best_share:
                best, best_share = line, share
        if best is None:
            lines.append({"top": top, "bottom": bottom, "members": [int(index)]})
        else:
            best["top"], best["bottom"] = min(top, best["top"]), max(bottom, best["bottom"])
            best["members"].append(int(index))
    lines.sort(key=lambda line: float(np.mean(centres[line["members"]])))
    return [sorted(line["members"], key=lambda i: float(lefts[i])) for line in lines]


def full_text(texts: list[str], lines: list[list[int]]) -> str:
    """The whole text: each line's non-empty texts joined by a space, lines by newlines."""
    rendered = (" ".join(texts[i] for i in line if texts[i]) for line in lines)
    return "\n".join(line for line in rendered if line)


def reading_order(lines: list[list[int]]) -> list[int]:
    """The box indices in reading order: the lines in order, each line's boxes in order."""
    return [index for line in lines for index in line]


def lines_from(order, line_of_box) -> list[list[int]]:
    """The lines again from :func:`reading_order` and :func:`line_of_box`'s outputs."""
    lines: list[list[int]] = []
    for index in (int(i) for i in order):
        number = int(line_of_box[index])
        while len(lines) <= number:
            lines.append([])
        lines[number].append(index)
    return lines


def line_of_box(lines: list[list[int]], count: int) -> list[int]:
    """For each of ``count`` boxes, the index of its line."""
    found = [0] * count
    for number, line in enumerate(lines):
        for index in line:
            found[index] = number
    return found


def line_polygons(boxes: np.ndarray, lines: list[list[int]]) -> np.ndarray:
    """float32 ``[L, 4, 2]``: each line's minimum-area rectangle of its boxes' corners, clockwise
    from the top-left (the boxes' frame; :func:`ocr_pipeline.boxes.min_area_box`)."""
    from .boxes import min_area_box

    boxes = np.asarray(boxes, dtype=np.float32).reshape(-1, 4, 2)
    if not lines:
        return np.zeros((0, 4, 2), np.float32)
    limit = float(boxes.max()) + 1.0     # no clipping beyond the boxes themselves
    return np.stack([min_area_box(boxes[line].reshape(-1, 2), limit, limit)
                     for line in lines]).astype(np.float32)


def paragraphs_of(boxes: np.ndarray, lines: list[list[int]]) -> list[int]:
    """For each line (in reading order), the index of its paragraph (the module's rule)."""
    boxes = np.asarray(boxes, dtype=np.float32).reshape(-1, 4, 2)
    found: list[int] = []
    previous = None
    for line in lines:
        corners = boxes[line]
        top, bottom = float(corners[:, :, 1].min()), float(corners[:, :, 1].max())
        left, right = float(corners[:, :, 0].min()), float(corners[:, :, 0].max())
        height = float(np.median(corners[:, :, 1].max(axis=1) - corners[:, :, 1].min(axis=1)))
        current = (top, bottom, left, right, max(height, 1e-6))
        if previous is None or not _same_paragraph(previous, current):
            found.append(len(set(found)))
        else:
            found.append(found[-1])
        previous = current
    return found


def _same_paragraph(above: tuple, below: tuple) -> bool:
    _, bottom, left_a, right_a, height_a = above
    top, _, left_b, right_b, height_b = below
    gap = top - bottom
    overlap = min(right_a, right_b) - max(left_a, left_b)
    narrower = min(right_a - left_a, right_b - left_b)
    return (gap <= PARAGRAPH_GAP * (height_a + height_b) / 2
            and max(height_a, height_b) <= PARAGRAPH_SIZE_RATIO * min(height_a, height_b)
            and narrower > 0 and overlap >= PARAGRAPH_OVERLAP * narrower)


def layout(boxes: np.ndarray, angle: int = 0, width: int = 0, height: int = 0,
           flipped=None) -> tuple[list[list[int]], np.ndarray, list[int]]:
    """Lines, line polygons and paragraphs of a page turned by ``angle``, in its text's
    reading order: the boxes are rotated into the upright page's frame
    (:func:`ocr_pipeline.orientation.to_upright`), grouped there, and the line polygons
    rotated back.

    Args:
        boxes: float32 ``[N, 4, 2]`` corners (x, y) in the turned image's pixels.
        angle: the page's turn, clockwise degrees (0, 90, 180 or 270).
        width, height: the turned image's size, pixels (unused for angle 0).
        flipped: optional bool ``[N]``, each box upside down against the page (its angle is
            the page's + 180): a line whose boxes are mostly flipped (by area) is read right
            to left in the upright frame, and its polygon starts at its own text's top-left.

    Returns:
        ``(lines, polygons, paragraphs)``: :func:`lines_of` in the upright frame; float32
        ``[L, 4, 2]`` each line's rectangle in the turned image's pixels, clockwise from the
        text's top-left; :func:`paragraphs_of` for each line.
    """
    upright = to_upright(np.asarray(boxes, np.float32).reshape(-1, 4, 2), angle, width, height)
    lines = lines_of(upright)
    polygons = line_polygons(upright, lines)
    if flipped is not None:
        for number, line in enumerate(lines):
            weights = [area(upright[i]) * (1 if flipped[i] else -1) for i in line]
            if sum(weights) > 0:
                line.reverse()
                polygons[number] = np.roll(polygons[number], -2, axis=0)
    return lines, from_upright(polygons, angle, width, height), paragraphs_of(upright, lines)
