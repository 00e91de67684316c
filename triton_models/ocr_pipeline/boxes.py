"""CRAFT score maps -> text boxes.

The box extraction is the word-level post-processing of CRAFT (Baek et al., "Character Region
Awareness for Text Detection", CVPR 2019; clovaai/CRAFT-pytorch ``craft_utils.getDetBoxes``):

1. binarise the region score at ``low_text`` and the link (affinity or refined) score at
   ``link_threshold``; their union is split into 4-connected components;
2. drop components under 10 pixels and those whose peak region score is below
   ``text_threshold``;
3. remove pure-link pixels, dilate the component by a square whose side grows with the
   component's density, and fit a minimum-area rectangle to it;
4. near-square rectangles (side ratio within 10 %) are replaced by the axis-aligned bounding
   box, and corners are ordered clockwise starting from the top-left-most one.

This implementation works on each component's bounding-box window instead of full-size masks,
which gives the same pixels in O(component area) instead of O(image area) per component.
"""

from __future__ import annotations

import math

import cv2
import numpy as np

from .params import SCORE_MAP_STRIDE

#: Components smaller than this many score-map pixels are noise (CRAFT-pytorch's constant).
MIN_COMPONENT_AREA = 10
#: Rectangles whose long/short side ratio is within this of 1 are treated as squares.
SQUARE_TOLERANCE = 0.1


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
        peak region score of each box, at most 1. Boxes come in connected-component label order.
    """
    height, width = region.shape
    text_mask = region > low_text
    link_mask = link > link_threshold
    combined = (text_mask | link_mask).astype(np.uint8)
    count, labels, stats, _ = cv2.connectedComponentsWithStats(combined, connectivity=4)

    boxes, scores = [], []
    for label in range(1, count):
        x, y, w, h, area = (int(v) for v in stats[label])
        if area < MIN_COMPONENT_AREA:
            continue
        window = (slice(y, y + h), slice(x, x + w))
        component = labels[window] == label
        peak = float(region[window][component].max())
        if peak < text_threshold:
            continue

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
        boxes.append(min_area_box(points, width, height))
        scores.append(min(peak, 1.0))  # BF16 engines can overshoot 1 by a few ulps

    if not boxes:
        return np.zeros((0, 4, 2), np.float32), np.zeros((0,), np.float32)
    return np.stack(boxes).astype(np.float32), np.array(scores, dtype=np.float32)


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


def to_image_coordinates(boxes: np.ndarray, ratio: float, width: int, height: int) -> np.ndarray:
    """Map boxes from score-map pixels back to the original (upright) image's pixels.

    Score maps are 1/2 of the resized input (``SCORE_MAP_STRIDE``) and the input is the
    original times ``ratio``, so a score-map coordinate times ``2 / ratio`` is an original one.

    Args:
        boxes: float32 ``[N, 4, 2]`` in score-map pixels.
        ratio: resize factor used by preprocessing (resized = original * ratio).
        width, height: original image size in pixels; points are clipped to it.

    Returns:
        float32 ``[N, 4, 2]`` in original-image pixels.
    """
    scaled = boxes.astype(np.float32) * np.float32(SCORE_MAP_STRIDE / ratio)
    return np.clip(scaled, 0, np.array([width, height], np.float32)).astype(np.float32)
