"""Reading order: boxes grouped into lines, lines top to bottom, boxes left to right; lines
grouped into paragraphs.

Lines (for horizontal left-to-right scripts, slanted lines included) are found along the text's
own direction: a page photographed or scanned a few degrees off level has lines that rise or
fall across it, so a long line's vertical extent covers its neighbours'. The text's tilt
(:func:`text_tilt`) is measured from the boxes themselves, and the boxes are grouped as if the
page were turned level (:func:`level`). There, boxes are taken from the top down by their
vertical centre; a box joins the line it overlaps most vertically when that overlap is at least
half the height of the smaller of the two (line extent: the union of its boxes' extents), else
it starts a new line. Lines are ordered by the mean vertical centre of their boxes, and the
boxes of a line by their left edge. The whole text is each line's box texts joined by one
space, lines joined by newlines; boxes whose text is empty are skipped. A line's polygon is the
minimum-area rectangle of its boxes' corners.

Paragraphs (:func:`paragraphs_of`, on the levelled boxes, as the lines), by layout as
Google's ``fullTextAnnotation`` and Azure Read group lines: a line continues the paragraph of
the line before it when the gap between them is at most :data:`PARAGRAPH_GAP` times their mean
height, their heights differ by at most :data:`PARAGRAPH_SIZE_RATIO`, and their horizontal
extents overlap by at least :data:`PARAGRAPH_OVERLAP` of the narrower one (a column of text; a
caption beside a title is another paragraph). Heights are the median height of a line's boxes
(a box with a direction along the text, :data:`TILT_ELONGATION`: its own short side where
that is less).

Columns of prose (:func:`column_lines`, :mod:`ocr_pipeline.columns`) are read one after the
other: the lines a gutter splits are grouped again on each side of it.
"""

from __future__ import annotations

import numpy as np

from .columns import column_runs
from .orientation import area, from_upright, to_upright

#: Vertical overlap, as a share of the smaller height, that puts a box on a line.
LINE_OVERLAP = 0.5
#: Least ratio of a box's long side to its short side for the box to tell the text's direction
#: (a single character's near-square box does not).
TILT_ELONGATION = 2.0
#: Most tilt, degrees either way, taken as a tilted horizontal line; a box steeper than that is
#: vertical text or a turned region and tells nothing about the page's tilt.
MAX_TILT_DEG = 15.0
#: Least share of the boxes' area in boxes that tell the direction for their directions to be
#: taken: a few long tilted boxes among many short level words (a sign in a street photo) do
#: not turn the page. Below it the tilt is where all the boxes' centres line up
#: (:func:`_profile_tilt`): with ``refine=false`` a narrow font's characters come as boxes of
#: their own, no longer than high (invoice tables of their own tilted 1-5 degrees: 0.0
#: before, their rows split).
MIN_TELLING_SHARE = 0.5
#: Boxes at least this many times longer than high (lines) are trusted to tell the tilt by
#: their own directions (then every telling box votes). A shorter word's rectangle is fitted
#: to a few score-map pixels dilated by a square and comes out level on a tilted page
#: (``refine=false``'s word boxes of drawn tables at +-2 degrees: a tilt of 0.0).
LINE_ELONGATION = 5.0
#: Least share of the telling boxes' length in boxes of :data:`LINE_ELONGATION` for their
#: directions to be taken; below it (a page of word boxes) the tilt is the angle at which the
#: words' centres line up (:func:`_profile_tilt`). Invoice tables drawn in six fonts of their
#: own at 28 and 36 px, level and tilted 1-2 degrees: 0.00-0.28 with ``refine=false``,
#: 0.61-0.72 with lines (the tests' and bench.reading's tables: at most 0.13 and at least 0.44).
LINE_SHARE = 0.4
#: Angles tried for a page of word boxes, degrees apart (within :data:`MAX_TILT_DEG`).
PROFILE_STEP_DEG = 0.05
#: Width of a bin of the words' centres across the text, in their median height: one line's
#: centres stand within about 0.3 of it of each other (capitals, descenders, brackets).
PROFILE_BIN = 0.25
#: Least words for their centres to tell the page's tilt.
MIN_PROFILE_WORDS = 6
#: Centres projected at once, over the angles (memory: 8 bytes each).
PROFILE_POINTS = 1_000_000
#: How much sharper than level the lines must stack at an angle for the page to be tilted by
#: it: a table of few short words per row lines up by chance at other angles. Invoice tables
#: drawn in five fonts of their own at 28 and 36 px with ``refine=false``: level, at most 1.1
#: times level's sharpness; tilted 1-2 degrees, at least 1.8 times, at that tilt.
PROFILE_GAIN = 1.25
#: How far a line may rise along its box, in the line's height, and its rectangle still come
#: out level: a rectangle is fitted to dilated score-map pixels, and a 10-pixel line rising 2
#: of them along it is one (an invoice table of its own at 1 degree: 15 of 28 boxes at 0.0,
#: the page's tilt 0.0 and its rows split in two). A page of lines' tilt, told by the lines'
#: directions, is moved by where their centres line up (:func:`_profile_tilt`) by at most
#: ``atan(PROFILE_REFINE_RISE / (length / height))`` of its lines: 1.5-2 degrees for a table's
#: short cells (6-8 heights long; the directions of the drawn tables below were up to 1.3
#: degrees off), under 0.6 for a column of prose, whose centres may stack by chance at a
#: column's baselines set lower than the next one's.
PROFILE_REFINE_RISE = 0.2
#: How much sharper than at the lines' direction their centres must stack for
#: :data:`PROFILE_REFINE_RISE` to move it. Invoice tables drawn for this (seeds of their own,
#: seven fonts at 24-40 px, 0 to +-5 degrees, served INT8 maps): where the directions were
#: more than 0.5 degrees off (15 of 80 pages), 1.66-3.15 at the true tilt; level pages, at
#: most 1.12; the shared images' photos, where the centres of a few lines of mixed sizes stack
#: by chance, up to 1.57.
PROFILE_REFINE_GAIN = 1.6
#: A page whose direction-telling boxes hold under :data:`MIN_TELLING_SHARE` of the area (its
#: characters' boxes, or a photo's scattered signs) is levelled where its boxes' centres line
#: up only with this many boxes at least, stacked this many times as sharply as level: the
#: same invoice tables read with ``refine=false`` in narrow fonts (33-63 boxes) stack 2.8-3.9
#: times as sharply at their tilt and at most 1.03 level; boxes scattered at random over a
#: 600 x 400 page stack by chance at some angle up to 2.4 times as sharply with 8 of them,
#: 1.9 with 14, 1.6-1.7 with 20-40 (100 pages each).
CHARACTERS_MIN_BOXES = 20
CHARACTERS_GAIN = 2.0
#: Least rise of the text across the boxes' width, in median box heights, worth levelling:
#: below it no line reaches into its neighbour's height, and the boxes are grouped as they are
#: (a level page stays exactly as it was; a wide 300-dpi scan is levelled at half a degree).
MIN_RISE = 0.25
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


def column_lines(boxes: np.ndarray) -> list[list[int]]:
    """:func:`lines_of`, with prose columns read one after the other: the lines a gutter splits
    (:func:`ocr_pipeline.columns.column_runs`) are grouped again on each side of it, the left
    column's lines first (recursively, so three columns are read in three).

    Args:
        boxes: float32 ``[N, 4, 2]`` corner points (x, y) of level text, pixels.

    Returns:
        :func:`lines_of`'s lines in reading order; every index once.
    """
    boxes = np.asarray(boxes, dtype=np.float32).reshape(-1, 4, 2)
    lines = lines_of(boxes)
    lefts = boxes[:, :, 0].min(axis=1)
    found, done = [], 0
    for first, end, cut, _ in column_runs(boxes, lines):
        found += lines[done:first]
        members = np.array([i for line in lines[first:end] for i in line])
        for side in (members[lefts[members] < cut], members[lefts[members] >= cut]):
            found += [[int(side[i]) for i in line] for line in column_lines(boxes[side])]
        done = end
    return found + lines[done:]


def text_tilt(boxes: np.ndarray) -> float:
    """The text's tilt, from the lines' own directions or, on a page of short word boxes,
    from where the boxes' centres line up.

    The boxes that tell a direction are at least :data:`TILT_ELONGATION` times as long as
    they are high and within :data:`MAX_TILT_DEG` of level. When they hold at least
    :data:`MIN_TELLING_SHARE` of all boxes' area and at least :data:`LINE_SHARE` of their
    length is in boxes of :data:`LINE_ELONGATION` (lines), the tilt is the median direction of
    their long sides, each weighted by its length squared, moved to where the boxes' centres
    line up, by at most what a rectangle of the lines' length misses
    (:data:`PROFILE_REFINE_RISE`), when they stack :data:`PROFILE_REFINE_GAIN` times as
    sharply there. With fewer lines (a page of word boxes, each fitted level) it is the angle
    at which all the boxes' centres line up (:func:`_profile_tilt`; 0.0 when no angle stands
    out); with fewer telling boxes (characters, scattered signs), the same for at least
    :data:`CHARACTERS_MIN_BOXES` boxes not steeper than :data:`MAX_TILT_DEG`, stacked
    :data:`CHARACTERS_GAIN` times as sharply as level, else 0.0.

    Args:
        boxes: float32 ``[N, 4, 2]`` corner points (x, y) of the upright page, pixels (y down),
            starting at any corner.

    Returns:
        degrees in ``[-MAX_TILT_DEG, MAX_TILT_DEG]``, as ``atan2(dy, dx)`` of a line's direction
        with y down (negative: the text rises to the right); where the weight splits evenly
        between two directions, their mean.
    """
    boxes = np.asarray(boxes, dtype=np.float32).reshape(-1, 4, 2)
    return _tilt(boxes, *box_sides(boxes))


def _tilt(boxes: np.ndarray, length: np.ndarray, across: np.ndarray,
          degrees: np.ndarray) -> float:
    """:func:`text_tilt` of ``boxes`` and their :func:`box_sides`."""
    telling = _telling(length, across, degrees)
    areas = length * across
    centres, height = boxes.mean(axis=1), float(np.median(across)) if len(across) else 0.0
    if not telling.any() or areas[telling].sum() < MIN_TELLING_SHARE * areas.sum():
        # Characters or scattered boxes; vertical text's boxes tell nothing of the tilt.
        flat = telling | (length < TILT_ELONGATION * across)
        if flat.sum() < CHARACTERS_MIN_BOXES:
            return 0.0
        return _profile_tilt(centres[flat], height, gain=CHARACTERS_GAIN)
    lines = telling & (length >= LINE_ELONGATION * across)
    if length[lines].sum() < LINE_SHARE * length[telling].sum():
        return _profile_tilt(centres, height)
    # A box's direction is fitted to within about a pixel over its length: its error falls as
    # 1 / length, so its weight (the inverse of its variance) grows as length squared (drawn
    # tables at +-2..5 degrees: mean error 0.21 degrees weighted by length, 0.15 by its square).
    weights = length[telling] ** 2
    tilt = _weighted_median(degrees[telling], weights)
    heights_long = _weighted_median(length[telling] / across[telling], weights)
    reach = float(np.degrees(np.arctan(PROFILE_REFINE_RISE / heights_long)))
    return _profile_tilt(centres, height, tilt, reach, PROFILE_REFINE_GAIN)


def _telling(length: np.ndarray, across: np.ndarray, degrees: np.ndarray) -> np.ndarray:
    """bool ``[N]``: the boxes (of :func:`box_sides`) that tell the text's direction, at
    least :data:`TILT_ELONGATION` times as long as high and within :data:`MAX_TILT_DEG` of
    level."""
    return (length >= TILT_ELONGATION * across) & (across > 0) & (np.abs(degrees) <= MAX_TILT_DEG)


def _profile_tilt(centres: np.ndarray, height: float, around: float = 0.0,
                  reach: float = MAX_TILT_DEG, gain: float = PROFILE_GAIN) -> float:
    """The angle, degrees, at which words' centres line up: projection-profile skew estimation
    (Baird, "The skew angle of printed documents", 1987). For each angle within ``reach`` of
    ``around`` (and within :data:`MAX_TILT_DEG`), :data:`PROFILE_STEP_DEG` apart, the centres
    are projected across the text into bins :data:`PROFILE_BIN` of ``height`` wide (twice,
    the second grid offset by half a bin); the angle whose bins' squared counts sum highest
    stacks the lines sharpest (the middle one where several do). ``around`` with fewer than
    :data:`MIN_PROFILE_WORDS` words, or when that angle's sum is under ``gain`` times
    ``around``'s.

    A word's centre sits higher or lower on its line with its capitals, descenders and
    brackets; the direction from one word to the next carries that (a capitalised first word
    drawn level told 0.7 degrees), where a whole page's lines do not.

    Args:
        centres: float ``[N, 2]`` the words' centres (x, y; y down), pixels.
        height: the words' median height, pixels.
        around: the angle searched about, degrees (within :data:`MAX_TILT_DEG`).
        reach: how far either side of it, degrees.
        gain: how many times ``around``'s sum the best must reach.

    Returns:
        degrees, ``atan2(dy, dx)`` of the lines' direction as :func:`text_tilt`'s.
    """
    if len(centres) < MIN_PROFILE_WORDS or height <= 0:
        return around
    steps = int(round(reach / PROFILE_STEP_DEG))
    offsets = np.arange(-steps, steps + 1)
    offsets = offsets[np.abs(around + offsets * PROFILE_STEP_DEG) <= MAX_TILT_DEG + 1e-9]
    angles = around + offsets * PROFILE_STEP_DEG
    base = int(np.flatnonzero(offsets == 0)[0])          # ``around`` itself
    radians = np.radians(angles)[:, None]
    energy = np.zeros(len(angles))
    chunk = max(1, PROFILE_POINTS // len(centres))      # memory: angles projected at once
    for start in range(0, len(angles), chunk):
        turn = radians[start:start + chunk]
        across = centres[None, :, 1] * np.cos(turn) - centres[None, :, 0] * np.sin(turn)
        across = (across - across.min(axis=1, keepdims=True)) / (PROFILE_BIN * height)
        energy[start:start + chunk] = [
            sum(np.square(np.bincount(np.floor(row + offset).astype(np.int64))).sum()
                for offset in (0.0, 0.5)) for row in across]
    best = np.flatnonzero(energy == energy.max())
    if energy[best[0]] < gain * energy[base]:
        return around
    return float(angles[best[len(best) // 2]])


def _weighted_median(values: np.ndarray, weights: np.ndarray) -> float:
    """The weighted median of ``values`` (the mean of the two middle ones on an even split)."""
    order = np.argsort(values)
    values, cumulative = values[order], np.cumsum(weights[order])
    index = int(np.searchsorted(cumulative, cumulative[-1] / 2))
    if index + 1 < len(values) and np.isclose(cumulative[index], cumulative[-1] / 2):
        return float((values[index] + values[index + 1]) / 2)
    return float(values[index])


def box_sides(boxes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per box of float ``[N, 4, 2]``: its long side's length, its short side's length (pixels)
    and the long side's direction in degrees, ``[-90, 90)`` (y down)."""
    boxes = np.asarray(boxes, dtype=np.float64).reshape(-1, 4, 2)
    first, second = boxes[:, 1] - boxes[:, 0], boxes[:, 2] - boxes[:, 1]
    first_length, second_length = np.hypot(*first.T), np.hypot(*second.T)
    along = np.where((first_length >= second_length)[:, None], first, second)
    degrees = np.degrees(np.arctan2(along[:, 1], along[:, 0]))
    return (np.maximum(first_length, second_length), np.minimum(first_length, second_length),
            (degrees + 90.0) % 180.0 - 90.0)             # a side's two directions are one line


def level(boxes: np.ndarray) -> np.ndarray:
    """The boxes turned about the origin by :func:`level_turn`, so the text runs level.

    Args:
        boxes: float32 ``[N, 4, 2]`` corner points (x, y) of the upright page, pixels.

    Returns:
        float32 ``[N, 4, 2]``: for grouping only (the frame is no longer the image's).
    """
    boxes = np.asarray(boxes, dtype=np.float32).reshape(-1, 4, 2)
    return turned(boxes, level_turn(boxes))


def level_turn(boxes: np.ndarray) -> float:
    """Radians to turn the boxes by (:func:`turned`) so that their text runs level: minus
    :func:`text_tilt`, or 0.0 when the tilt raises the text across the boxes' width by less
    than :data:`MIN_RISE` of their median height.

    Args:
        boxes: float ``[N, 4, 2]`` corner points (x, y) of the upright page, pixels.
    """
    boxes = np.asarray(boxes, dtype=np.float32).reshape(-1, 4, 2)
    sides = box_sides(boxes)
    tilt = np.radians(_tilt(boxes, *sides))
    if tilt == 0.0:
        return 0.0
    width = float(boxes[..., 0].max() - boxes[..., 0].min())
    if width * abs(np.tan(tilt)) < MIN_RISE * float(np.median(sides[1])):
        return 0.0
    return float(-tilt)


def turned(points: np.ndarray, radians: float) -> np.ndarray:
    """float32 points ``[..., 2]`` (x, y; y down) turned about the origin by ``radians``
    (negative: clockwise on the page; :func:`level_turn`'s angle levels text)."""
    points = np.asarray(points, dtype=np.float32)
    if radians == 0.0:
        return points
    cos, sin = np.cos(radians), np.sin(radians)
    x, y = points[..., 0], points[..., 1]
    return np.stack([x * cos - y * sin, y * cos + x * sin], axis=-1).astype(np.float32)


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
    # A box's own height where it has a direction: a box a fraction of a degree off the
    # page's level stands taller than its line by its length times that angle.
    length, short, degrees = box_sides(boxes)
    extents = boxes[:, :, 1].max(axis=1) - boxes[:, :, 1].min(axis=1)
    heights = np.where(_telling(length, short, degrees), np.minimum(short, extents), extents)
    found: list[int] = []
    previous = None
    for line in lines:
        corners = boxes[line]
        top, bottom = float(corners[:, :, 1].min()), float(corners[:, :, 1].max())
        left, right = float(corners[:, :, 0].min()), float(corners[:, :, 0].max())
        height = float(np.median(heights[line]))
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
    (:func:`ocr_pipeline.orientation.to_upright`), levelled (:func:`level`) and grouped
    there, and the line polygons rotated back.

    Args:
        boxes: float32 ``[N, 4, 2]`` corners (x, y) in the turned image's pixels.
        angle: the page's turn, clockwise degrees (0, 90, 180 or 270).
        width, height: the turned image's size, pixels (unused for angle 0).
        flipped: optional bool ``[N]``, each box upside down against the page (its angle is
            the page's + 180): a line whose boxes are mostly flipped (by area) is read right
            to left in the upright frame, and its polygon starts at its own text's top-left.

    Returns:
        ``(lines, polygons, paragraphs)``: :func:`column_lines` of the levelled boxes; float32
        ``[L, 4, 2]`` each line's rectangle in the turned image's pixels, clockwise from the
        text's top-left; :func:`paragraphs_of` of the levelled boxes for each line.
    """
    upright = to_upright(np.asarray(boxes, np.float32).reshape(-1, 4, 2), angle, width, height)
    levelled = level(upright)
    lines = column_lines(levelled)
    polygons = line_polygons(upright, lines)
    if flipped is not None:
        for number, line in enumerate(lines):
            weights = [area(upright[i]) * (1 if flipped[i] else -1) for i in line]
            if sum(weights) > 0:
                line.reverse()
                polygons[number] = np.roll(polygons[number], -2, axis=0)
    # Paragraphs are found level too: a tilted line's upright extent is taller than the line,
    # and every line of a page tilted 2 degrees reached into the next (one paragraph).
    return lines, from_upright(polygons, angle, width, height), paragraphs_of(levelled, lines)
