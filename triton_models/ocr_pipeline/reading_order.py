"""Reading order: boxes grouped into lines, lines top to bottom, boxes left to right.

The rule (for horizontal left-to-right scripts, slanted lines included): boxes are taken from
the top down by their vertical centre; a box joins the line it overlaps most vertically when
that overlap is at least half the height of the smaller of the two (line extent: the union of
its boxes' extents), else it starts a new line. Lines are ordered by the mean vertical centre
of their boxes, and the boxes of a line by their left edge. The whole text is each line's box
texts joined by one space, lines joined by newlines; boxes whose text is empty are skipped.
"""

from __future__ import annotations

import numpy as np

#: Vertical overlap, as a share of the smaller height, that puts a box on a line.
LINE_OVERLAP = 0.5


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
