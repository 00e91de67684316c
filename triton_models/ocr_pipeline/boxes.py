"""CRAFT score maps -> text boxes.

The box extraction is the word-level post-processing of CRAFT (Baek et al., "Character Region
Awareness for Text Detection", CVPR 2019; clovaai/CRAFT-pytorch ``craft_utils.getDetBoxes``):

1. binarise the region score at ``low_text`` and the link (affinity or refined) score at
   ``link_threshold``; their union is split into 4-connected components;
2. drop components under 10 pixels and those whose peak region score is below
   ``text_threshold`` (this service keeps one from :data:`ROW_PEAK_SHARE` of it, or of
   :data:`ROW_MIN_AREA` pixels, that sits in a row of the page's text, between that row's
   boxes: a faint or small lone digit in a table's cell, :meth:`PageRows.holds`);
3. remove pure-link pixels, dilate the component by a square whose side grows with the
   component's density, and fit a minimum-area rectangle to it;
4. near-square rectangles (side ratio within 10 %) are replaced by the axis-aligned bounding
   box, and corners are ordered clockwise starting from the top-left-most one.
5. (this service's, not CRAFT's) a box across the page's text - a column of table cells the
   link refiner joined into one vertical box - or one that holds two of the page's rows (a
   table's heading and its first row's cell, linked where rows are tight) is cut into its
   cells, and a cell too tall to be read upright is widened (:func:`across_text`,
   :class:`PageRows`, :func:`cells_of`, :func:`widened_cell`);
6. (this service's) a box the link refiner joined across the gutter between two columns of
   prose is cut at the gutter (:func:`across_gutters`).

This implementation works on each component's bounding-box window instead of full-size masks,
which gives the same pixels in O(component area) instead of O(image area) per component.
"""

from __future__ import annotations

import functools
import math

import cv2
import numpy as np

from .orientation import AXIS_RATIO
from .params import SCORE_MAP_STRIDE
from .columns import crossing_boxes, least_gutter
from .reading_order import box_sides, level_turn, lines_of, turned

#: Components smaller than this many score-map pixels are noise (CRAFT-pytorch's constant).
MIN_COMPONENT_AREA = 10
#: Rectangles whose long/short side ratio is within this of 1 are treated as squares.
SQUARE_TOLERANCE = 0.1
#: A box this many times longer than wide has a direction (a word or a line, not a character).
STACK_MIN_ELONGATION = 2.0
#: Gap between characters, over their median length, from which a box across the page's
#: text is cut into cells: stacked table cells stand a row's spacing apart (at 1.3 lines: about
#: 0.5 of a digit's region blob), a vertical word's characters touch or nearly do. Set on drawn
#: tables of their own (other items and seeds than the tests' and bench.reading's).
STACK_GAP = 0.5
#: A cell is at most this many times longer along its stack than the stack is wide (a digit's
#: region blob: up to about 2.4); a turned line's pieces are words, longer.
STACK_CELL_RATIO = 3.0
#: A box this many times taller (across the page's text, levelled) than the page's median box
#: height may hold two of its rows and is looked into (:class:`PageRows`): a line's box is
#: about 1.0-1.2 of it, a heading and the cell below it linked across a tight table's rows
#: (invoice tables drawn at 1.3 lines' spacing) about 2.2.
ROWS_TALL = 1.5
#: Boxes whose centres are this many median box heights apart across the text are in two rows
#: (one row's boxes differ by their ascenders and descenders, about 0.2; rows 1.3 lines apart
#: by at least 1).
ROWS_APART = 0.5
#: A component whose peak region score is under ``text_threshold`` but at least this share of
#: it is text when it sits in one of the page's rows between that row's boxes
#: (:meth:`PageRows.holds`): hysteresis, as a row's confident boxes vouch for a faint
#: character among them. Single-digit quantity cells that CRAFT scored under 0.7 peaked at
#: 0.59-0.69 (FP32, at 1280) on drawn invoice tables tilted 3-5 degrees, seeds 300-339 (the
#: tests draw none of them tilted, bench.reading none at all); no component of those pages
#: outside a drawn word peaked between 0.4 and 0.7.
ROW_PEAK_SHARE = 0.75
#: Least score-map pixels of a component kept where a row holds it, as a faint one is: a lone
#: "1", "4" or "7" of a quantity cell comes as 8 or 9 pixels (peaking at 0.54-0.59) at the
#: default working size on invoice tables drawn in fonts of their own (24-40 px on pages
#: 1,600-2,400 px wide), as bench.reading's seed 210 at +-5 degrees does; under CRAFT's
#: :data:`MIN_COMPONENT_AREA` otherwise.
ROW_MIN_AREA = 8
#: A blob that runs across two rows is cut between them only where it narrows to this share of
#: its widest on either side (a "1" or a "2" above a "7" at 1.3 lines: 1-3 pixels against 6-7,
#: on drawn invoices of seeds the tests do not draw), unless it is one character wide
#: (:data:`STACK_NARROW`): then wherever it narrows.
STACK_NECK = 0.5
#: A column whose characters' pixels span at most this share of the page's box height along
#: the text is one character wide, a stack of cells: a digit's region blob is about half a
#: line's box high wide (the box is dilated), two characters side by side a box height or more.
#: A "1" above a "7" at 1.6 lines ran together down to 3 of 5-6 pixels, over STACK_NECK.
STACK_NARROW = 0.75


def detect_boxes(region: np.ndarray, link: np.ndarray, text_threshold: float,
                 link_threshold: float, low_text: float) -> tuple[np.ndarray, np.ndarray]:
    """Extract word boxes from CRAFT score maps.

    Args:
        region: float32 ``[h, w]`` region score (CRAFT output channel 0), 0..1.
        link: float32 ``[h, w]`` link score: the affinity score (channel 1) or the link
            refiner's ``y_refined``.
        text_threshold: minimum peak region score for a component to count as text.
        link_threshold: link score above which neighbouring characters are joined.
        low_text: region score above which a pixel belongs to a character.

    Returns:
        ``(boxes, scores)``: float32 ``[N, 4, 2]`` corner points (x, y) in score-map pixels,
        clockwise from the top-left-most corner, clipped to ``[0, w] x [0, h]``; float32 ``[N]``
        peak region score of each box, at most 1. Boxes come in connected-component label order,
        a cut component's cells together in its place (in order across the text), then the
        faint or small characters a row holds (in the same order); a widened cell may reach
        past its component's pixels.
    """
    height, width = region.shape
    text_mask = region > low_text
    link_mask = link > link_threshold
    combined = (text_mask | link_mask).astype(np.uint8)
    count, labels, stats, _ = cv2.connectedComponentsWithStats(combined, connectivity=4)

    components, faint = [], []
    for label in range(1, count):
        x, y, w, h, area = (int(v) for v in stats[label])
        if area < ROW_MIN_AREA:
            continue
        window = (slice(y, y + h), slice(x, x + w))
        component = labels[window] == label
        peak = float(region[window][component].max())
        if peak >= text_threshold and area >= MIN_COMPONENT_AREA:
            components.append((x, y, component))
        elif peak >= ROW_PEAK_SHARE * text_threshold:
            faint.append((x, y, component))     # kept where a row holds it, as below
    if not components:
        return np.zeros((0, 4, 2), np.float32), np.zeros((0,), np.float32)

    def box_of(x: int, y: int, component: np.ndarray) -> tuple[np.ndarray, float]:
        """One component's (or cell's) rectangle and peak region score."""
        h, w = component.shape
        area = int(component.sum())
        window = (slice(y, y + h), slice(x, x + w))
        # Dilate within the component's window grown by the dilation radius.
        niter = int(math.sqrt(area * min(w, h) / (w * h)) * 2)
        x0, y0 = max(0, x - niter), max(0, y - niter)
        x1, y1 = min(width, x + w + niter + 1), min(height, y + h + niter + 1)
        segment = np.zeros((y1 - y0, x1 - x0), dtype=np.uint8)
        inner = (slice(y - y0, y - y0 + h), slice(x - x0, x - x0 + w))
        pure_link = link_mask[window] & ~text_mask[window]
        segment[inner][component & ~pure_link] = 255
        kernel = cv2.getStructuringElement(cv2.MORPH_RECT, (1 + niter, 1 + niter))
        segment = cv2.dilate(segment, kernel)
        ys, xs = np.nonzero(segment)
        points = np.stack([xs + x0, ys + y0], axis=1).astype(np.int32)
        peak = float(region[window][component].max())
        return min_area_box(points, width, height), min(peak, 1.0)  # BF16 can overshoot 1

    found = [box_of(*component) for component in components + faint]
    frame = np.array([box for box, _ in found], np.float32).reshape(-1, 4, 2)
    confident = np.arange(len(frame)) < len(components)     # only these tell the page's rows
    across, horizontal = across_text(frame, confident)
    rows = PageRows(frame, horizontal, across, confident)
    pieces = []                             # (x, y, mask, box, score) per box
    for index, ((x, y, component), (box, score), cross) in enumerate(
            zip(components + faint, found, across)):
        # Across the page's text: a stack of table cells is cut into them, and a tall cell (a
        # lone "1" too) is widened so that it is not read as turned text. A box that holds two
        # of the page's rows is cut between them.
        cells = cells_of(x, y, component, text_mask, rows, index, cross) \
            if cross or rows.tall[index] else []
        if len(cells) <= 1:                 # a faint component alone is a character's cell
            cells = [(x, y, component, not confident[index] or bool(cells) and cross)]
        for px, py, mask, cell in cells:
            piece, piece_score = (box, score) if mask is component else box_of(px, py, mask)
            # A faint character, or a faint stack's cell (a quantity column linked whole), is
            # kept only between the boxes of one of the page's rows.
            if confident[index] or rows.holds(piece):
                pieces.append((px, py, mask, widened_cell(piece, horizontal, width, height)
                               if cell else piece, piece_score))
    # Two columns' lines the link refiner joined across their gutter are cut apart there.
    for index, halves in reversed(across_gutters(pieces, text_mask, rows)):
        pieces[index:index + 1] = [(*half, *box_of(*half)) for half in halves]
    return (np.stack([piece[3] for piece in pieces]).astype(np.float32),
            np.array([piece[4] for piece in pieces], dtype=np.float32))


def across_text(boxes: np.ndarray, voters: np.ndarray | None = None
                ) -> tuple[np.ndarray, bool]:
    """Which boxes run across the page's text.

    The page's text runs the way of its elongated boxes (long side at least
    :data:`STACK_MIN_ELONGATION` times the short one), horizontal or vertical by the larger
    total area. A box runs across it when its long side is nearer the other axis and at least
    :data:`~ocr_pipeline.orientation.AXIS_RATIO` times its short side (long enough to be read
    as turned text): on a horizontal page, a column of table cells linked into one box, or a
    lone upright "1"; near-square boxes never do.

    Args:
        boxes: float32 ``[N, 4, 2]`` rectangles (:func:`min_area_box`).
        voters: optional bool ``[N]``, the boxes whose areas tell the page's direction (all
            when None).

    Returns:
        ``(across, horizontal)``: bool ``[N]``, and whether the page's text runs horizontally.
        No box runs across when no voter is elongated or the two directions' areas are
        equal.
    """
    length, across, degrees = box_sides(boxes)
    ratio = length / np.maximum(across, 1e-6)
    elongated = ratio >= STACK_MIN_ELONGATION
    if voters is not None:
        elongated = elongated & voters
    horizontal = np.abs(degrees) <= 45.0
    area = length * across
    weight = float(area[elongated & horizontal].sum() - area[elongated & ~horizontal].sum())
    if weight == 0:
        return np.zeros(len(boxes), bool), True
    return (horizontal != (weight > 0)) & (ratio >= AXIS_RATIO), weight > 0


def across_gutters(pieces: list, text_mask: np.ndarray, rows: PageRows
                   ) -> list[tuple[int, list[tuple[int, int, np.ndarray]]]]:
    """The boxes that run across a gutter between two columns of prose, and their halves.

    The boxes are levelled as the page's rows are (:class:`PageRows`) and grouped into lines
    as reading order does (:func:`~ocr_pipeline.reading_order.lines_of`), and the columns'
    gutters found on them (:func:`ocr_pipeline.columns.crossing_boxes`). A box across a
    gutter is cut there only when its characters (region score above ``low_text``) leave the
    gutter's width (:func:`~ocr_pipeline.columns.least_gutter`) white about the cut: two lines
    joined by their link score, not a title across both columns.

    Args:
        pieces: ``(x, y, mask, box, score)`` per box: its pixels (bool ``mask`` in the window
            at ``x, y``), float32 ``[4, 2]`` rectangle and score, score-map pixels.
        text_mask: bool ``[H, W]`` region score above ``low_text``.
        rows: the page's rows, whose levelling this takes.

    Returns:
        ``(index, [(x, y, mask), (x, y, mask)])`` per box to cut, by index: its pixels before
        and after the cut along the text.
    """
    levelled = rows.level(np.array([piece[3] for piece in pieces],
                                   np.float32).reshape(-1, 4, 2))
    least = least_gutter(levelled)

    @functools.cache                        # asked again per gutter and at the run's cut
    def along(index: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """A box's pixels: rows, columns, levelled position along the text, character or not."""
        x, y, mask = pieces[index][:3]
        ys, xs = np.nonzero(mask)
        position = rows.levelled(ys + y, xs + x)[:, 0]
        return ys + y, xs + x, position, text_mask[ys + y, xs + x]

    def cuttable(index: int, cut: float) -> bool:
        _, _, position, text = along(index)
        before, after = position[text & (position < cut)], position[text & (position > cut)]
        return before.size > 0 and after.size > 0 and after.min() - before.max() >= least

    cuts = []
    for index, cut in crossing_boxes(levelled, lines_of(levelled), cuttable):
        ys, xs, position, _ = along(index)
        cuts.append((index, [_window(ys[side], xs[side])
                             for side in (position < cut, position >= cut)]))
    return cuts


def _window(rows: np.ndarray, cols: np.ndarray) -> tuple[int, int, np.ndarray]:
    """``(x, y, mask)``: pixels at ``rows, cols`` as a bool mask in their bounding window."""
    top, left = int(rows.min()), int(cols.min())
    mask = np.zeros((int(rows.max()) - top + 1, int(cols.max()) - left + 1), bool)
    mask[rows - top, cols - left] = True
    return left, top, mask


class PageRows:
    """The page's rows, for cutting a box that holds more than one of them, keeping a faint
    character between a row's boxes, and levelling the page for :func:`across_gutters`.

    Positions are levelled (:func:`~ocr_pipeline.reading_order.level_turn` of the boxes that
    tell the rows, a vertical page's turned a quarter first): ``x`` along the page's text,
    ``y`` across it, score-map pixels.

    Args:
        frame: float32 ``[N, 4, 2]`` the page's boxes (:func:`min_area_box`), score-map pixels.
        horizontal: the page's text runs horizontally (:func:`across_text`).
        across: bool ``[N]`` the boxes that run across the text (:func:`across_text`).
        told: bool ``[N]`` the boxes that tell the rows, the tilt and the box height (the
            confident ones; a faint character is asked about, never vouches).

    Attributes:
        tall: bool ``[N]`` boxes at least :data:`ROWS_TALL` times the median box height
            across the text.
    """

    def __init__(self, frame: np.ndarray, horizontal: bool, across: np.ndarray,
                 told: np.ndarray):
        self.horizontal = horizontal
        self.turn = level_turn(frame[told] if horizontal else frame[told][..., ::-1])
        levelled = self.level(frame)
        tops, bottoms = levelled[..., 1].min(axis=1), levelled[..., 1].max(axis=1)
        self.lefts, self.rights = levelled[..., 0].min(axis=1), levelled[..., 0].max(axis=1)
        length, short, _ = box_sides(frame if horizontal else frame[..., ::-1])
        along = told & ~across & (length >= STACK_MIN_ELONGATION * short)
        # The page's box height: that of the telling boxes along the text (an upright digit's
        # short side is its width), or of all telling boxes when none is.
        self.height = float(np.median(short[along] if along.any() else short[told]))
        self.tall = bottoms - tops >= ROWS_TALL * self.height
        # Rows are told by every telling box neither across the text nor tall: with
        # refine=false a row's numbers come as short pieces ("4." and "50"), no word's length.
        lines = told & ~across & ~self.tall
        self.centres = (tops + bottoms) / 2
        self.lines = np.flatnonzero(lines)[np.argsort(self.centres[lines], kind="stable")]

    def level(self, boxes: np.ndarray) -> np.ndarray:
        """float32 ``[..., 2]`` points (x, y in score-map pixels) levelled: ``x`` along the
        page's text, ``y`` across it (a vertical page's turned a quarter first)."""
        return turned(boxes if self.horizontal else boxes[..., ::-1], self.turn)

    def levelled(self, ys: np.ndarray, xs: np.ndarray) -> np.ndarray:
        """float32 ``[K, 2]`` levelled positions (along, across the text) of the map pixels
        at rows ``ys``, columns ``xs``."""
        return self.level(np.stack([xs, ys], axis=1).astype(np.float32))

    def _flanks(self, row: np.ndarray, left: float, right: float) -> bool:
        """Whether a row's boxes stand both before ``left`` and after ``right`` along the text
        (levelled): a table's cell sits between its row's other cells, where a word turned
        down a margin (example.png's "image" and "result") or handwriting set down one beside
        print has the rows on one side."""
        return bool((self.rights[row] < left).any() and (self.lefts[row] > right).any())

    def _rows(self, start: float, end: float, left: float, right: float, own: int = -1
              ) -> list[tuple[float, bool]]:
        """The page's rows whose median centre across the text lies in ``[start, end]``
        (levelled), in order: ``(median centre, flanking)`` each, flanking when the row's
        boxes stand before ``left`` and after ``right`` (:meth:`_flanks`). A row is a run of
        the telling boxes neither across the text nor tall (box ``own`` aside) whose centres are
        less than
        :data:`ROWS_APART` box heights from the one before, taken whole: a row's box
        centred a little past the span (a word with descenders beside a digit) is in it."""
        lines = self.lines[self.lines != own]
        reach = ROWS_APART * self.height
        near = lines[(self.centres[lines] > start - reach) & (self.centres[lines] < end + reach)]
        runs = np.split(near, np.flatnonzero(np.diff(self.centres[near]) >= reach) + 1)
        rows = [(float(np.median(self.centres[run])), self._flanks(run, left, right))
                for run in runs if run.size]
        return [(centre, flanking) for centre, flanking in rows if start <= centre <= end]

    def _rows_of(self, span: tuple[float, float], own: int) -> list[tuple[float, bool]]:
        """:meth:`_rows` of a span across box ``own``, flanking that box."""
        return self._rows(*span, self.lefts[own], self.rights[own], own)

    def row_in(self, span: tuple[float, float], own: int) -> bool:
        """Whether a span across the text (levelled ``(start, end)``) of box ``own`` holds
        the median centre of one of the page's rows that flanks the box (:meth:`_rows`)."""
        return any(flanking for _, flanking in self._rows_of(span, own))

    def between(self, span: tuple[float, float], own: int) -> list[tuple[float, float]]:
        """The neighbouring rows of the page centred in a span across the text (levelled
        ``(start, end)``) of box ``own``, each flanking it (:meth:`_rows`): ``(upper,
        lower)`` median centres of each two."""
        rows = self._rows_of(span, own)
        return [(upper, lower) for (upper, flanks_upper), (lower, flanks_lower)
                in zip(rows, rows[1:]) if flanks_upper and flanks_lower]

    def holds(self, box: np.ndarray) -> bool:
        """Whether a box (float32 ``[4, 2]``, none of the rows' own) stands in one of the
        page's rows, between its boxes: no taller across the text than :data:`ROWS_TALL` box
        heights, and the median centre of a row (:meth:`_rows`) whose boxes stand before and
        after it lies within its extent across the text."""
        levelled = self.level(box)
        (left, top), (right, bottom) = levelled.min(axis=0), levelled.max(axis=0)
        return bottom - top < ROWS_TALL * self.height and any(
            flanking for _, flanking in self._rows(top, bottom, left, right))


def cells_of(x: int, y: int, component: np.ndarray, text_mask: np.ndarray, rows: PageRows,
             index: int, across: bool) -> list[tuple[int, int, np.ndarray, bool]]:
    """A component's pieces, when it is a stack of table cells linked across the page's
    text, a box that holds two of the page's rows, or a lone character.

    The component's characters are its region-score blobs (``text_mask``'s 8-connected
    pieces of at least :data:`MIN_COMPONENT_AREA` pixels), projected across the page's text
    (levelled, :class:`PageRows`) as spans (overlapping ones merged: a cell is one row, so all
    its characters overlap there); in a box across the text, a span that holds two of the
    page's rows is cut between them where it narrows (:meth:`PageRows.between`,
    :func:`_necks`). Neighbouring spans are cut apart at the middle of their gap when, in a box
    across the text, it is at least :data:`STACK_GAP` times their median length; and between
    each two spans that hold one of the page's rows (:meth:`PageRows.row_in`: rows a tight
    table's spacing apart, whose cells' blobs nearly touch), at the widest gap from the one to
    the other (:func:`_row_gaps`). A piece is a cell when its spans reach no further than
    :data:`STACK_CELL_RATIO` times the component's width along the text, and are one span or
    hold one of the page's rows; a turned word's letters are spans of their own, and a turned
    line's pieces are words. The cut is kept when at least half the pieces are cells.

    Args:
        x, y: the component window's top-left in score-map pixels.
        component: bool ``[h, w]`` the component's pixels in its window.
        text_mask: bool ``[H, W]`` region score above ``low_text``, the whole map.
        rows: the page's rows.
        index: the component's box among ``rows``' boxes.
        across: the box runs across the page's text (:func:`across_text`).

    Returns:
        ``(x, y, mask, cell)`` per piece, each mask in its own window, in order across the
        text (one piece, the component itself, when it is a lone cell); empty when the
        component is not cut and is not a cell.
    """
    chars = text_mask[y:y + component.shape[0], x:x + component.shape[1]] & component
    count, blobs, stats, _ = cv2.connectedComponentsWithStats(chars.astype(np.uint8),
                                                              connectivity=8)
    ys, xs = np.nonzero(component)
    offset, position = rows.levelled(ys + y, xs + x).T
    owner = blobs[ys, xs]
    low, high = np.full(count, np.inf), np.full(count, -np.inf)
    np.minimum.at(low, owner, position)
    np.maximum.at(high, owner, position)
    # Blobs under MIN_COMPONENT_AREA are noise here as in CRAFT's own rule (a speck of region
    # score between two cells would bridge their gap), unless a row that flanks the box is
    # centred in one: a thin character of small print (a "7" of 9 pixels).
    kept = stats[:, cv2.CC_STAT_AREA] >= MIN_COMPONENT_AREA
    kept[0] = False
    for blob in np.flatnonzero(~kept[1:]) + 1:
        kept[blob] = rows.row_in((low[blob], high[blob]), index)
    if not kept.any():
        return []
    inked = kept[owner]
    spans: list[list[float]] = []
    for start, end in sorted(zip(low[kept], high[kept])):
        if spans and start <= spans[-1][1]:
            spans[-1][1] = max(spans[-1][1], end)
        else:
            spans.append([start, end])
    # A column one character wide is a stack of cells: cut between two rows wherever it
    # narrows (a "1" over a "7" whose scores run into each other down to 3 of 5-6 pixels).
    narrow = np.ptp(offset[inked]) + 1 <= STACK_NARROW * rows.height
    necks = [neck for span in spans
             for neck in _necks(span, rows.between(span, index), position[inked],
                                1.0 if narrow else STACK_NECK)] \
        if across else []
    for neck in necks:                      # the span cut in two at its neck
        spans = [part for start, end in spans
                 for part in ([[start, neck - 0.5], [neck + 0.5, end]]
                              if start < neck < end else [[start, end]])]
    # The gap is the empty pixels between two spans; a span's length, its pixels.
    lengths = [end - start + 1 for start, end in spans]
    least = STACK_GAP * float(np.median(lengths))
    gaps = [(before[1] + after[0]) / 2 for before, after in zip(spans, spans[1:])
            if across and after[0] - before[1] - 1 >= least]
    gaps += _row_gaps(spans, [rows.row_in(span, index) for span in spans])
    # A gap that a neck made is cut at that neck already.
    gaps = [gap for gap in gaps if not any(
        before[1] < neck < after[0] and before[1] < gap < after[0]
        for before, after in zip(spans, spans[1:]) for neck in necks)]
    cuts = sorted(set(necks) | set(gaps))
    longest_cell = STACK_CELL_RATIO * (np.ptp(offset[inked]) + 1)
    piece_of = np.searchsorted(np.array(cuts), position)
    span_piece = np.searchsorted(np.array(cuts), [start for start, _ in spans])
    pieces = []
    for number in range(len(cuts) + 1):
        mine = piece_of == number
        own = [span for span, piece in zip(spans, span_piece) if piece == number]
        pieces.append((*_window(ys[mine] + y, xs[mine] + x),
                       bool(own) and own[-1][1] - own[0][0] + 1 <= longest_cell
                       and (len(own) == 1 or rows.row_in((own[0][0], own[-1][1]), index))))
    return pieces if 2 * sum(cell for *_, cell in pieces) >= len(pieces) else []


def _row_gaps(spans: list[list[float]], holding: list[bool]) -> list[float]:
    """Where to cut ``spans`` (levelled ``[start, end]`` across the text, in order) between
    each two that hold one of the page's rows (``holding``, :meth:`PageRows.row_in`): the
    middle of the widest gap from the one to the other. A character of a row whose region
    score parts at ``low_text`` (a "7"'s bar above its stem) is spans of its own, only one of
    them holding the row; a cut at the first gap after each row would leave the rest of the
    character with the row below, or, asked only of neighbouring spans, not cut at all."""
    found = []
    marks = [number for number, holds in enumerate(holding) if holds]
    for first, last in zip(marks, marks[1:]):
        middles = [((before[1] + after[0]) / 2, after[0] - before[1])
                   for before, after in zip(spans[first:last], spans[first + 1:last + 1])]
        found.append(max(middles, key=lambda middle: middle[1])[0])
    return found


def _necks(span: list[float], rows: list[tuple[float, float]], inked: np.ndarray,
           share: float = STACK_NECK) -> list[float]:
    """Where ``span`` is cut between each two rows' centres (``rows``, :meth:`PageRows.
    between`): just after the pixel (across the text) where its characters' pixels
    (``inked``: their positions across the text) are fewest (of several, the nearest the
    middle of the two rows), when that is at most ``share`` of the most on either side, and
    fewer: two rows' cells whose region score runs together (a "1" above a "7"), not one
    turned word of even width beside two rows."""
    start, end = span
    counts = np.bincount((inked[(inked >= start) & (inked <= end)] - start).astype(int))
    necks = []
    for upper, lower in rows:
        first, last = max(int(upper - start) + 1, 0), min(int(lower - start), len(counts))
        if first >= last:
            continue
        fewest = first + np.flatnonzero(counts[first:last] == counts[first:last].min())
        neck = int(fewest[np.argmin(np.abs(fewest + start + 0.5 - (upper + lower) / 2))])
        widest = min(counts[:neck].max(initial=0), counts[neck + 1:].max(initial=0))
        if counts[neck] <= share * widest and counts[neck] < widest \
                and start + neck + 0.5 < end:
            necks.append(start + neck + 0.5)
    return necks


def widened_cell(box: np.ndarray, horizontal: bool, width: float, height: float) -> np.ndarray:
    """A cell's rectangle ``[4, 2]`` grown along the page's text to its length across it, when
    it is :data:`~ocr_pipeline.orientation.AXIS_RATIO` times longer across the text than along
    it: such a box is read as turned text (``orientation=auto`` takes its axis from that ratio;
    the recognizer turns a crop from a higher one, its grown crop's
    :data:`~ocr_pipeline.recognition.TALL_RATIO`), and an upright character cut from a stack,
    or standing alone (a "1"), is not. Grown about its centre, then as :func:`min_area_box`
    gives it (clipped, clockwise, a square axis-aligned); otherwise unchanged.
    ``horizontal``: the page's text runs horizontally."""
    first, second = box[1] - box[0], box[2] - box[1]
    if (abs(first[0]) >= abs(first[1])) != horizontal:
        first, second = second, first                # first: the side along the text
    along, across = float(np.hypot(*first)), float(np.hypot(*second))
    if across < AXIS_RATIO * along:
        return box
    centre = box.mean(axis=0)
    half_along = first / max(along, 1e-6) * across / 2
    corners = np.array([centre - half_along - second / 2, centre + half_along - second / 2,
                        centre + half_along + second / 2, centre - half_along + second / 2])
    return min_area_box(corners.astype(np.float32), width, height)


def min_area_box(points: np.ndarray, width: float, height: float) -> np.ndarray:
    """Minimum-area rectangle of ``points`` ``[K, 2]`` (int32 or float32) as 4 clockwise
    corners float32 ``[4, 2]``, clipped to ``[0, width] x [0, height]``, starting from the
    top-left-most corner; a near-square one (sides within :data:`SQUARE_TOLERANCE`) is the
    axis-aligned bounding box instead."""
    box = cv2.boxPoints(cv2.minAreaRect(points))
    box = np.clip(box, 0, [width, height])
    side_a = np.linalg.norm(box[0] - box[1])
    side_b = np.linalg.norm(box[1] - box[2])
    if abs(1 - max(side_a, side_b) / (min(side_a, side_b) + 1e-5)) <= SQUARE_TOLERANCE:
        left, top = points.min(axis=0)
        right, bottom = points.max(axis=0)
        box = np.array([[left, top], [right, top], [right, bottom], [left, bottom]], np.float32)
    start = int(box.sum(axis=1).argmin())
    return np.roll(box, -start, axis=0)


def to_image_coordinates(boxes: np.ndarray, ratio: float, width: int, height: int,
                         stride: int = SCORE_MAP_STRIDE) -> np.ndarray:
    """Map boxes from score-map pixels back to the original (upright) image's pixels.

    CRAFT's score maps are 1/2 of the resized input (``SCORE_MAP_STRIDE``; DB's probability
    map is at the input's resolution: ``stride`` 1) and the input is the original times
    ``ratio``, so a score-map coordinate times ``stride / ratio`` is an original one.

    Args:
        boxes: float32 ``[N, 4, 2]`` in score-map pixels.
        ratio: resize factor used by preprocessing (resized = original * ratio).
        width, height: original image size in pixels; points are clipped to it.
        stride: input pixels per score-map pixel.

    Returns:
        float32 ``[N, 4, 2]`` in original-image pixels.
    """
    scaled = boxes.astype(np.float32) * np.float32(stride / ratio)
    return np.clip(scaled, 0, np.array([width, height], np.float32)).astype(np.float32)
