"""Text orientation: which way up each box's text is, and the page's angle.

Angles are clockwise degrees, one of :data:`ANGLES`: a page turned by ``angle`` is the upright
page rotated that far clockwise (``np.rot90(upright, k=-angle // 90)``); a box's angle is the
turn of its own text (an upside-down line on an upright page is 180).

CRAFT's boxes (:mod:`ocr_pipeline.boxes`) are rectangles with corners ``c0..c3`` clockwise
from the top-left-most one. A box whose text is turned by ``90 * s`` has its text's own
top-left corner at ``c_s``: :func:`oriented` rolls the corners so they start there, and the
crop warped from the rolled corners (:func:`ocr_pipeline.recognition.crop_box`) is the text
upright. The long axis tells 0/180 from 90/270 (:func:`box_axis`); the recognizer's
confidence at the two candidates of that axis tells which (the ``recognize`` step; measured
in ``triton_models/repository/recognize/config.pbtxt``). The page angle is the box-area
weighted vote of the boxes' angles (:func:`page_angle`).

The reading order is computed in the upright page's frame (:func:`to_upright`) and mapped
back (:func:`from_upright`): coordinates in the answer stay in the uploaded image's pixels.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from .recognition import crop_box, expand_box

#: The four angles, clockwise degrees.
ANGLES = (0, 90, 180, 270)
#: A box's long side must be at least this many times its short side for its axis to count
#: (the ratio PaddleOCR uses to call a crop vertical; CRAFT's two-character words are ~1.3).
AXIS_RATIO = 1.5


def side_lengths(box: np.ndarray) -> tuple[float, float]:
    """``(along, across)``: the lengths of the ``c0->c1`` and ``c1->c2`` sides, pixels.

    Args:
        box: float32 ``[4, 2]`` corners (x, y), clockwise.
    """
    box = np.asarray(box, dtype=np.float32)
    along = max(float(np.linalg.norm(box[1] - box[0])), float(np.linalg.norm(box[2] - box[3])))
    across = max(float(np.linalg.norm(box[3] - box[0])), float(np.linalg.norm(box[2] - box[1])))
    return along, across


def elongation(box: np.ndarray) -> float:
    """Long side over short side of a ``[4, 2]`` box (1 for a square; large for a line)."""
    along, across = side_lengths(box)
    return max(along, across) / max(min(along, across), 1e-6)


def box_axis(box: np.ndarray, ratio: float = AXIS_RATIO) -> int | None:
    """0 when the box's text runs along ``c0->c1`` (candidates 0 and 180), 90 when along
    ``c1->c2`` (candidates 90 and 270), None when the box is too square to say
    (:data:`AXIS_RATIO`)."""
    along, across = side_lengths(box)
    if along >= ratio * across:
        return 0
    if across >= ratio * along:
        return 90
    return None


def oriented(box: np.ndarray, angle: int) -> np.ndarray:
    """The box's corners starting from its text's own top-left, still clockwise.

    Args:
        box: float32 ``[4, 2]`` corners clockwise from the top-left-most (CRAFT's order).
        angle: the text's turn, one of :data:`ANGLES`.

    Returns:
        float32 ``[4, 2]``: ``box`` rolled so that corner ``angle // 90`` comes first.
    """
    return np.roll(np.asarray(box, dtype=np.float32), -(int(angle) // 90) % 4, axis=0)


def area(box: np.ndarray) -> float:
    """Area of a ``[4, 2]`` polygon, square pixels (shoelace formula)."""
    x, y = np.asarray(box, dtype=np.float64).T
    return float(abs(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1))) / 2)


def page_angle(angles, weights) -> int:
    """The page's angle: the angle with the largest total weight (ties go to the earlier of
    :data:`ANGLES`, so 0 wins a tie with anything); 0 for no boxes.

    Args:
        angles: each voting box's angle, one of :data:`ANGLES`.
        weights: each box's weight (its area, square pixels), >= 0.
    """
    totals = dict.fromkeys(ANGLES, 0.0)
    for angle, weight in zip(angles, weights):
        totals[int(angle)] += float(weight)
    best = max(ANGLES, key=lambda a: (totals[a], -ANGLES.index(a)))
    return best if totals[best] > 0 else 0


def to_upright(points: np.ndarray, angle: int, width: int, height: int) -> np.ndarray:
    """Points of an image turned by ``angle`` in the upright page's frame.

    Args:
        points: float ``[..., 2]`` (x, y) in the turned image's pixels.
        angle: the page's turn, one of :data:`ANGLES`.
        width, height: the turned image's size, pixels.

    Returns:
        float32 ``[..., 2]`` (x, y) in the upright page's pixels (its size is ``(height,
        width)`` for 90 and 270).
    """
    p = np.asarray(points, dtype=np.float32)
    x, y = p[..., 0], p[..., 1]
    if angle == 0:
        return p.copy()
    if angle == 90:
        out = (y, width - x)
    elif angle == 180:
        out = (width - x, height - y)
    elif angle == 270:
        out = (height - y, x)
    else:
        raise ValueError(f"angle must be one of {ANGLES}, got {angle}")
    return np.stack(out, axis=-1).astype(np.float32)


def from_upright(points: np.ndarray, angle: int, width: int, height: int) -> np.ndarray:
    """The inverse of :func:`to_upright` (same arguments: the turned image's size)."""
    p = np.asarray(points, dtype=np.float32)
    u, v = p[..., 0], p[..., 1]
    if angle == 0:
        return p.copy()
    if angle == 90:
        out = (width - v, u)
    elif angle == 180:
        out = (width - u, height - v)
    elif angle == 270:
        out = (v, height - u)
    else:
        raise ValueError(f"angle must be one of {ANGLES}, got {angle}")
    return np.stack(out, axis=-1).astype(np.float32)


def window(crop: np.ndarray, aspect: float) -> np.ndarray:
    """The middle of a horizontal text crop, at most ``aspect`` times as wide as high (the
    whole crop when narrower): enough characters to tell which way up it is, for a fraction
    of a long line's recognizer time.

    Args:
        crop: uint8 ``[h, w, 3]``.
        aspect: the widest width-to-height ratio kept.
    """
    h, w = crop.shape[:2]
    keep = max(1, int(aspect * h))
    if w <= keep:
        return crop
    start = (w - keep) // 2
    return crop[:, start:start + keep]


# -- the decision, with the recognizer's confidence --------------------------------------------

#: Boxes at least this elongated vote for the page, and may be read the other way up from it:
#: measured on the 267 reference boxes of tests/data/validation's first six images (each crop
#: read upright and turned 180), the recognizer's confidence picks the right way up for 100 % of
#: boxes longer than 3:1, 97 % from 1.5:1 to 3:1 and 89 % of squarer ones (digits such as "16" /
#: "91" read well both ways).
FLIP_RATIO = 2.0
#: A box read the page's way up with a confidence below this is read turned 180 too, and kept
#: turned when that reads with more confidence and at least this much (text the recognizer
#: cannot read either way, e.g. Hangul, stays the page's way up). Validation boxes (>= 2:1):
#: 0.8 re-reads 1.3 % of upright boxes and flips none wrongly, and corrects 91 % of
#: upside-down ones (0.9: re-reads 9.4 %, one wrong flip).
FLIP_SCORE = 0.8
#: The page vote reads this many boxes (the largest elongated ones) both ways up.
SAMPLE = 8
#: ... each cut to its middle, at most this wide for its height (the recognizer's narrowest
#: batch, 320 x 48): the vote costs about one batch of 2 x SAMPLE narrow crops.
WINDOW_ASPECT = 320 / 48


@dataclass(frozen=True)
class Decision:
    """Each box's angle, the page's, and each box's reading at its angle (full crop)."""

    angles: list[int]
    page: int
    readings: list


def _crop(image: np.ndarray, box: np.ndarray, angle: int, margin: float) -> np.ndarray:
    """The box's text upright: :func:`oriented` corners, grown, warped (recognition)."""
    height, width = image.shape[:2]
    return crop_box(image, expand_box(oriented(box, angle % 360), width, height, margin))


def vote(image: np.ndarray, boxes: np.ndarray, read: Callable[[list], list],
         margin: float) -> tuple[int, dict[int, int]]:
    """The page's angle, from the :data:`SAMPLE` largest boxes at least :data:`FLIP_RATIO`
    long (too few of them: :data:`AXIS_RATIO`), each read at both candidates of its axis
    (middle windows, :func:`window`); a box votes for the candidate read with more confidence
    when that reading reaches :data:`FLIP_SCORE` (a word the recognizer cannot read either
    way, e.g. Hangul at about 0.5 both ways, does not vote), weighted by its area.

    Args: as :func:`decide`.

    Returns:
        ``(page angle, {box index: its angle})`` for the boxes that voted.
    """
    boxes = np.asarray(boxes, np.float32).reshape(-1, 4, 2)
    axes = [box_axis(box) for box in boxes]
    long_ = [elongation(box) >= FLIP_RATIO for box in boxes]
    areas = [area(box) for box in boxes]
    voters = sorted((i for i in range(len(boxes)) if axes[i] is not None),
                    key=lambda i: (not long_[i], -areas[i]))[:SAMPLE]
    both = read([window(_crop(image, boxes[i], axes[i] + turn, margin), WINDOW_ASPECT)
                 for i in voters for turn in (0, 180)])
    own = {}
    for k, i in enumerate(voters):
        turned = both[2 * k + 1].score > both[2 * k].score
        if both[2 * k + int(turned)].score >= FLIP_SCORE:
            own[i] = axes[i] + (180 if turned else 0)
    return page_angle(list(own.values()), [areas[i] for i in own]), own


def decide(image: np.ndarray, boxes: np.ndarray, read: Callable[[list], list],
           margin: float, voted: tuple[int, dict[int, int]] | None = None) -> Decision:
    """Which way up every box is, read by the recognizer at the chosen angles.

    1. The page: :func:`vote` (or ``voted``, its result for these boxes).
    2. Every other box is read at the page angle when it is square or lies along the page's
       axis; a box across it (a vertical label on an upright page) at its axis's first
       candidate.
    3. Boxes across the page's axis, and long boxes read below :data:`FLIP_SCORE`, are read
       turned 180 too; the more confident reading wins (for a long box along the page's
       axis, only when it reaches :data:`FLIP_SCORE`).

    Args:
        image: uint8 ``[H, W, 3]`` RGB, the upright-decoded original the boxes are in.
        boxes: float32 ``[N, 4, 2]`` CRAFT corners (clockwise from the top-left-most), pixels.
        read: crops (uint8 ``[h, w, 3]`` horizontal lines) -> one
            :class:`ocr_pipeline.recognition.Reading` each.
        margin: crop margin, share of the box height (:func:`recognition.expand_box`).
        voted: :func:`vote`'s result, when already known.

    Returns:
        a :class:`Decision` (angles clockwise degrees, one per box).
    """
    boxes = np.asarray(boxes, np.float32).reshape(-1, 4, 2)
    axes = [box_axis(box) for box in boxes]
    long_ = [elongation(box) >= FLIP_RATIO for box in boxes]
    page, own = voted if voted is not None else vote(image, boxes, read, margin)

    def first(i: int) -> int:
        if i in own:
            return own[i]
        if axes[i] is None or axes[i] == page % 180:
            return page
        return axes[i]

    angles = [first(i) for i in range(len(boxes))]
    readings = list(read([_crop(image, boxes[i], angles[i], margin)
                          for i in range(len(boxes))]))
    across = [axes[i] is not None and axes[i] != page % 180 for i in range(len(boxes))]
    doubt = [i for i in range(len(boxes)) if i not in own and (
        across[i] or (long_[i] and readings[i].score < FLIP_SCORE))]
    for i, reading in zip(doubt, read([_crop(image, boxes[i], angles[i] + 180, margin)
                                       for i in doubt])):
        if reading.score > readings[i].score and (across[i] or reading.score >= FLIP_SCORE):
            angles[i], readings[i] = (angles[i] + 180) % 360, reading
    return Decision(angles, page, readings)
