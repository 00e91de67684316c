"""Prose columns: where a page's text runs in two or more columns side by side, so that its
lines are read down one column and then down the next, not across the gutter.

Found on the lines :func:`ocr_pipeline.reading_order.lines_of` groups (levelled boxes), the
way a reader sees a column layout: a **gutter** is a vertical band of white, at least
:data:`GUTTER` box heights wide, that no box of several consecutive lines crosses; the lines it
runs through are a **run**. A run's sides are read as columns only when both are prose
(:func:`is_prose`): at least :data:`MIN_COLUMN_LINES` lines each, as wide as
:data:`PROSE_WIDTH` box heights and covered by their boxes for :data:`PROSE_COVER` of that
width. A table's number columns are neither (a quantity or an amount is a short cell far
from the next), so a table keeps its rows, left to right; a short label beside its value is
not wide enough (a form of long labels and long values is read as two columns). This is the column test of layout analysis done on the detector's boxes alone
(a whitespace cut, as in Nagy and Seth's X-Y cut and Breuel's whitespace cover, limited to
cuts whose two sides are running text).
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np

#: Least gutter between two columns, in median box heights. A word space is about a third of a
#: box height; the gutter of a two-column page is one to three (OCRmyPDF's linn.pdf: 1.4).
GUTTER = 0.7
#: Most gap above a run's last line, beyond its column's usual line gap, in median box heights,
#: when it stands below the other column on one side only: further off, it is a heading or
#: footer below the columns.
TAIL_GAP = 0.5
#: Least ratio of a gutter's width to the median white between the boxes of a line on its
#: sides (other gutters aside), when they have several: text set with wide spaces has none.
GUTTER_SPACES = 2.0
#: Least lines on each side of a gutter for the sides to be columns.
MIN_COLUMN_LINES = 3
#: Least median width of a side's lines, in box heights, for it to be prose (a column of
#: running text holds some 20 characters or more per line; a table's cells fewer).
PROSE_WIDTH = 8.0
#: Least median share of a side's line width that its boxes cover, for it to be prose (word
#: spaces only; a row of a table's number columns is mostly white between its cells).
PROSE_COVER = 0.6

Interval = tuple[float, float]


class Run(NamedTuple):
    """Consecutive lines split into columns: ``lines[first:end]`` at ``x = cut`` pixels (the
    gutter's middle); ``crossing``: the boxes across it that are to be cut there (only with
    :func:`column_runs`' ``cuttable``), every other box wholly on one side."""
    first: int
    end: int
    cut: float
    crossing: list[int]


def column_runs(boxes: np.ndarray, lines: list[list[int]],
                cuttable: Callable[[int, float], bool] | None = None) -> list[Run]:
    """The runs of consecutive lines that a prose gutter splits into columns.

    Lines are taken from the top; a run grows while some gutter (:data:`GUTTER` median box
    heights of white inside the run's extent) stays clear through all its lines, and ends at
    the first line that closes every one. With ``cuttable``, a line whose only boxes across a
    gutter are cuttable there (two columns' lines the link refiner joined) keeps it open. The
    run's widest gutter whose sides are both prose (:func:`is_prose`) and that is at least
    :data:`GUTTER_SPACES` times as wide as the white between the boxes of their lines splits
    it; fewer than :data:`MIN_COLUMN_LINES` lines at the run's top that lie wholly right of the
    gutter are left out of it (text above the left column, such as a date set right, comes
    first), and so are lines below the columns (:func:`_tail`).

    Args:
        boxes: float32 ``[N, 4, 2]`` corners (x, y) of level text, pixels (y down).
        lines: :func:`ocr_pipeline.reading_order.lines_of`'s lines, top to bottom.
        cuttable: ``(box index, cut x)`` -> whether that box may be cut at ``x = cut``
            (:func:`crossing_boxes`); None: no box is.

    Returns:
        :class:`Run` per run, top to bottom.
    """
    boxes = np.asarray(boxes, dtype=np.float32).reshape(-1, 4, 2)
    if not lines:
        return []
    lefts, rights = boxes[:, :, 0].min(axis=1), boxes[:, :, 0].max(axis=1)
    tops, bottoms = boxes[:, :, 1].min(axis=1), boxes[:, :, 1].max(axis=1)
    extents = lefts, rights, tops, bottoms, bottoms - tops
    least = least_gutter(boxes)
    spans = [_occupied(lefts[line], rights[line]) for line in lines]
    runs, first, free, crossing = [], 0, _free(spans[0]), set()
    extent = (spans[0][0][0], spans[0][-1][1])
    for number in range(1, len(lines) + 1):
        if number < len(lines):
            extent = (min(extent[0], spans[number][0][0]), max(extent[1], spans[number][-1][1]))
            kept = _intersection(free, _free(spans[number]))
            if _gutters(kept, extent, least):
                free = kept
                continue
            joined = _joined(lines[number], free, extent, least, lefts, rights, cuttable)
            if joined is not None:
                free, across = joined
                crossing.update(across)
                continue
        kept_lines = [[i for i in line if i not in crossing] for line in lines[first:number]]
        run = _split(kept_lines, free, least, extents)
        if run is not None:
            cut = run[2]
            across = [i for i in crossing if lefts[i] < cut < rights[i]]
            start = _higher(lines, first + run[0], runs[-1].end if runs else 0, lefts, rights,
                            cut)
            runs.append(Run(start, first + run[1], cut, sorted(across)))
        if number < len(lines):
            first, free, crossing = number, _free(spans[number]), set()
            extent = (spans[number][0][0], spans[number][-1][1])
    return runs


def least_gutter(boxes: np.ndarray) -> float:
    """The narrowest gutter, pixels: :data:`GUTTER` times the median height of the level
    boxes (float ``[N, 4, 2]``, N > 0)."""
    boxes = np.asarray(boxes, dtype=np.float32).reshape(-1, 4, 2)
    return GUTTER * float(np.median(boxes[:, :, 1].max(axis=1) - boxes[:, :, 1].min(axis=1)))


def crossing_boxes(boxes: np.ndarray, lines: list[list[int]],
                   cuttable: Callable[[int, float], bool]) -> list[tuple[int, float]]:
    """Boxes that run across a prose gutter, to be cut there: the link refiner joins two
    columns' lines into one box where the gutter is only a few characters wide (linn.pdf).

    The runs are found letting such boxes through (:func:`column_runs` with ``cuttable``),
    then each run is followed up and down beyond its own lines: a line whose boxes keep clear
    of the run's cut continues it; a line with boxes across the cut continues it when each of
    them is ``cuttable`` there (a title across both columns is not), and those boxes are cut;
    any other line ends it.

    Args:
        boxes: float32 ``[N, 4, 2]`` corners (x, y) of level text, pixels.
        lines: :func:`ocr_pipeline.reading_order.lines_of`'s lines.
        cuttable: ``(box index, cut x)`` -> whether that box is white at least
            :data:`GUTTER` median box heights wide around ``x = cut`` (its characters, not
            its rectangle).

    Returns:
        ``(box index, cut x)`` per box to cut, by index, each box once.
    """
    boxes = np.asarray(boxes, dtype=np.float32).reshape(-1, 4, 2)
    lefts, rights = boxes[:, :, 0].min(axis=1), boxes[:, :, 0].max(axis=1)
    found: dict[int, float] = {}
    for run in column_runs(boxes, lines, cuttable):
        for index in run.crossing:
            if cuttable(index, run.cut):        # asked before at the gutter as it then was
                found.setdefault(index, run.cut)
        for numbers in (range(run.first - 1, -1, -1), range(run.end, len(lines))):
            for number in numbers:                                  # up, then down
                across = [i for i in lines[number] if lefts[i] < run.cut < rights[i]]
                if not all(cuttable(i, run.cut) for i in across):
                    break
                for index in across:
                    found.setdefault(index, run.cut)
    return sorted(found.items())


def is_prose(spans: list[list[Interval]], heights: np.ndarray) -> bool:
    """Whether one side of a gutter is a column of running text (the module's rule).

    Args:
        spans: per line of the side, its boxes' merged ``(left, right)`` extents, pixels.
        heights: float ``[M]`` the side's box heights, pixels.
    """
    if len(spans) < MIN_COLUMN_LINES:
        return False
    widths = np.array([line[-1][1] - line[0][0] for line in spans])
    covered = np.array([sum(right - left for left, right in line) for line in spans])
    height = max(float(np.median(heights)), 1e-6)
    return (float(np.median(widths)) >= PROSE_WIDTH * height
            and float(np.median(covered / np.maximum(widths, 1e-6))) >= PROSE_COVER)


def _split(lines, free, least, extents) -> tuple[int, int, float] | None:
    """``(first, end, cut)`` within a run's lines of its widest prose gutter, or None."""
    lefts, rights, tops, bottoms, heights = extents
    spans = [_occupied(lefts[line], rights[line]) for line in lines if line]
    extent = (min(s[0][0] for s in spans), max(s[-1][1] for s in spans))
    height = float(np.median(heights))
    gutters = _gutters(free, extent, least)
    for left, right in sorted(gutters, key=lambda g: g[0] - g[1]):
        cut = (left + right) / 2
        first, end = 0, len(lines)
        while first < end and lines[first] and lefts[lines[first]].min() >= cut:
            first += 1
        if first >= MIN_COLUMN_LINES:       # the right column starts higher: it is no aside
            first = 0
        while end - first > 1 and _tail(lines[first:end], lefts, tops, bottoms, cut, height):
            end -= 1
        sides = [[], []], [[], []]          # per side: spans per line, box heights
        for line in lines[first:end]:
            for side, members in zip(sides, _sides(line, lefts, cut)):
                if members:
                    side[0].append(_occupied(lefts[members], rights[members]))
                    side[1].extend(heights[members])
        spaces = [b[0] - a[1] for side, _ in sides for line in side
                  for a, b in zip(line, line[1:])   # not another gutter (a third column)
                  if not any(a[1] < high and low < b[0] for low, high in gutters)]
        if spaces and right - left < GUTTER_SPACES * float(np.median(spaces)):
            continue                        # as wide as the text's own spaces: no gutter
        if all(is_prose(spans, np.array(sizes)) for spans, sizes in sides):
            return first, end, cut
    return None


def _higher(lines, first, floor, lefts, rights, cut) -> int:
    """The run's first line, taken up over the lines above it (down to ``floor``) that keep
    clear of its cut, when at least :data:`MIN_COLUMN_LINES` of them lie right of it: a right
    column that starts higher than the left one (one or two lines there stay before it)."""
    start = first
    while start > floor and not any(lefts[i] < cut < rights[i] for i in lines[start - 1]):
        start -= 1
    right_only = sum(all(lefts[i] >= cut for i in line) for line in lines[start:first])
    return start if right_only >= MIN_COLUMN_LINES else first


def _tail(lines, lefts, tops, bottoms, cut, height) -> bool:
    """Whether the last of a run's ``lines`` is below its columns: wholly on one side, below
    every box of the other side, and further below the line above it on its own side than that
    side's median line gap plus :data:`TAIL_GAP` ``height`` (a column's own last line follows
    at its spacing; a heading or footer below the columns stands further off)."""
    *above, last = lines
    if not last:                            # its one box is across the gutter, to be cut
        return False
    side = lefts[last].min() < cut
    if any((lefts[i] < cut) != side for i in last):
        return False
    own = [[i for i in line if (lefts[i] < cut) == side] for line in above]
    own = [line for line in own if line]
    other = [i for line in above for i in line if (lefts[i] < cut) != side]
    top = tops[last].min()
    if other and top <= bottoms[other].max():
        return False
    if not own:
        return True
    gaps = [tops[below].min() - bottoms[upper].max() for upper, below in zip(own, own[1:])]
    usual = float(np.median(gaps)) if gaps else 0.0
    return top - bottoms[own[-1]].max() > max(usual, 0.0) + TAIL_GAP * height


def _joined(line, free, extent, least, lefts, rights, cuttable
            ) -> tuple[list[Interval], list[int]] | None:
    """``(white kept, boxes across)`` when ``line`` keeps one of the run's gutters open but for
    boxes ``cuttable`` at its middle (widest gutter first); None when none."""
    if cuttable is None:
        return None
    for gutter in sorted(_gutters(free, extent, least), key=lambda g: g[0] - g[1]):
        middle = (gutter[0] + gutter[1]) / 2
        across = [i for i in line if lefts[i] < middle < rights[i]]
        rest = [i for i in line if i not in across]
        if not across or not all(cuttable(i, middle) for i in across):
            continue
        kept = _intersection([gutter], _free(_occupied(lefts[rest], rights[rest])))
        if _gutters(kept, extent, least):
            return kept, across
    return None


def _sides(line: list[int], lefts: np.ndarray, cut: float) -> tuple[list[int], list[int]]:
    return [i for i in line if lefts[i] < cut], [i for i in line if lefts[i] >= cut]


def _occupied(lefts: np.ndarray, rights: np.ndarray) -> list[Interval]:
    """The boxes' ``[left, right]`` extents merged where they overlap, left to right."""
    merged: list[list[float]] = []
    for left, right in sorted(zip(lefts.tolist(), rights.tolist())):
        if merged and left <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], right)
        else:
            merged.append([left, right])
    return [(left, right) for left, right in merged]


def _free(spans: list[Interval]) -> list[Interval]:
    """The white of a line: between its spans and beyond them, left to right."""
    edges = [-np.inf] + [x for span in spans for x in span] + [np.inf]
    return [(edges[i], edges[i + 1]) for i in range(0, len(edges), 2)]


def _intersection(first: list[Interval], second: list[Interval]) -> list[Interval]:
    found = []
    for a_left, a_right in first:
        for b_left, b_right in second:
            left, right = max(a_left, b_left), min(a_right, b_right)
            if right > left:
                found.append((left, right))
    return found


def _gutters(free: list[Interval], extent: Interval, least: float) -> list[Interval]:
    """The white bands at least ``least`` wide strictly inside ``extent``."""
    inside = [(max(left, extent[0]), min(right, extent[1])) for left, right in free]
    return [(left, right) for left, right in inside if right - left >= least]
