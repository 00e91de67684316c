"""Text boxes -> recognizer input batches -> text: crops, batching and greedy CTC decoding.

The recognizer is PP-OCRv6 small rec (PaddleOCR, Apache-2.0), an SVTR-style CTC model; the
preprocessing below is PaddleOCR's for its recognition models (``RecResizeImg`` /
``resize_norm_img``, ``get_rotate_crop_image``): each box is cut out of the upright original
image with a perspective warp, turned upright when it is much taller than wide, resized to
height 48 keeping its aspect ratio, converted to BGR, normalised to ``(p/255 - 0.5) / 0.5``,
and right-padded with zeros (after normalisation) to the batch's width.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

#: Input height of the recognizer, pixels.
HEIGHT = 48
#: The recognizer emits one CTC step per 8 input columns: widths are multiples of it.
WIDTH_STEP = 8
#: Narrowest batch PaddleOCR feeds (its ``rec_image_shape`` 3x48x320): short words are padded
#: up to it, the width the model was trained around.
MIN_BATCH_WIDTH = 320
#: A batch's widest crop is at most this many times its narrowest (both padded to at least
#: MIN_BATCH_WIDTH): on the shared images' 112 CRAFT boxes, batches split this way ran the
#: recognizer in about 20 % less time than one batch per image padded to its widest line.
BATCH_WIDTH_SPREAD = 1.5
#: Widest crop, pixels at height 48 (a 66:1 line); wider ones are squeezed to it.
MAX_WIDTH = 3200
#: A crop this many times taller than wide is vertical text: rotated 90 degrees
#: counter-clockwise (PaddleOCR's ``get_rotate_crop_image`` rule).
TALL_RATIO = 1.5
#: Margin added on every side of a box before cropping, as a share of the box's height.
#: CRAFT's boxes hug the characters; PaddleOCR's own detector unclips its boxes by 1.5x. Measured
#: on the shared images with CRAFT's boxes: 0.1 reads best (ICDAR + ID-card word recall 0.818,
#: against 0.764 without a margin and 0.782 with 0.05 or 0.15).
CROP_MARGIN = 0.1


def expand_box(box: np.ndarray, width: int, height: int,
               margin: float = CROP_MARGIN) -> np.ndarray:
    """A box grown by ``margin`` times its height on every side, clipped to the image.

    Args:
        box: float32 ``[4, 2]`` corners clockwise from the top-left, pixels.
        width, height: the image's size, pixels.

    Returns:
        float32 ``[4, 2]``, the same corner order.
    """
    box = np.asarray(box, dtype=np.float32)
    along = box[1] - box[0]
    across = box[3] - box[0]
    along /= max(float(np.linalg.norm(along)), 1e-6)
    across /= max(float(np.linalg.norm(across)), 1e-6)
    grow = margin * max(float(np.linalg.norm(box[0] - box[3])),
                        float(np.linalg.norm(box[1] - box[2])))
    signs = np.array([[-1, -1], [1, -1], [1, 1], [-1, 1]], dtype=np.float32)
    grown = box + grow * (signs[:, :1] * along + signs[:, 1:] * across)
    return np.clip(grown, 0, [width, height]).astype(np.float32)


def crop_geometry(box: np.ndarray) -> tuple[np.ndarray, int, int, bool]:
    """How :func:`crop_box` cuts a box: the perspective warp and whether it turns the crop.

    Args:
        box: float32 ``[4, 2]`` corners (x, y) in the image's pixels, clockwise from the
            top-left.

    Returns:
        ``(matrix, width, height, turned)``: float64 ``[3, 3]`` homography from the image's
        pixels to the warped rectangle's (``cv2.getPerspectiveTransform``), the rectangle's
        size in pixels (the box's longer opposite sides, at least 1), and True when the
        rectangle is turned 90 degrees counter-clockwise (``height >= TALL_RATIO * width``).
    """
    box = np.asarray(box, dtype=np.float32)
    width = max(1, int(round(max(np.linalg.norm(box[0] - box[1]),
                                 np.linalg.norm(box[3] - box[2])))))
    height = max(1, int(round(max(np.linalg.norm(box[0] - box[3]),
                                  np.linalg.norm(box[1] - box[2])))))
    target = np.array([[0, 0], [width, 0], [width, height], [0, height]], dtype=np.float32)
    return cv2.getPerspectiveTransform(box, target), width, height, height >= TALL_RATIO * width


def crop_box(image: np.ndarray, box: np.ndarray) -> np.ndarray:
    """Cut one box out of an image and make it a horizontal text line.

    Args:
        image: uint8 ``[H, W, 3]`` RGB, the upright original at full resolution.
        box: float32 ``[4, 2]`` corners (x, y) in that image's pixels, clockwise from the
            top-left.

    Returns:
        uint8 ``[h, w, 3]`` RGB: the quadrilateral warped to a rectangle whose sides are the
        box's longer opposite sides (at least 1 pixel), rotated 90 degrees counter-clockwise
        when ``h >= TALL_RATIO * w`` (:func:`crop_geometry`; :func:`crop_to_image` maps the
        crop's pixels back).
    """
    matrix, width, height, turned = crop_geometry(box)
    crop = cv2.warpPerspective(image, matrix, (width, height), flags=cv2.INTER_CUBIC,
                               borderMode=cv2.BORDER_REPLICATE)
    if turned:
        crop = np.ascontiguousarray(np.rot90(crop))
    return crop


def crop_to_image(points: np.ndarray, box: np.ndarray) -> np.ndarray:
    """Points of :func:`crop_box`'s crop of ``box`` in the image's pixels: the crop's turn
    undone, then the inverse of its perspective warp (``cv2.perspectiveTransform``).

    Args:
        points: float ``[N, 2]`` (x, y) in the crop's pixels (as :func:`crop_box` returns it).
        box: the float32 ``[4, 2]`` box the crop was cut from.

    Returns:
        float32 ``[N, 2]`` (x, y) in the image's pixels.
    """
    matrix, width, _, turned = crop_geometry(box)
    p = np.asarray(points, dtype=np.float64).reshape(-1, 2)
    if turned:  # np.rot90 (counter-clockwise): crop (x, y) = warped (y, width - x)
        p = np.stack([width - p[:, 1], p[:, 0]], axis=1)
    back = cv2.perspectiveTransform(p.reshape(-1, 1, 2), np.linalg.inv(matrix))
    return back.reshape(-1, 2).astype(np.float32)


def resized_width(crop: np.ndarray, height: int = HEIGHT) -> int:
    """Width of ``crop`` resized to ``height`` keeping its aspect ratio, pixels (1 to
    :data:`MAX_WIDTH`)."""
    h, w = crop.shape[:2]
    return min(MAX_WIDTH, max(1, math.ceil(height * w / h)))


def plan_batches(widths: list[int], max_batch: int) -> list[list[int]]:
    """Group crops into batches of similar width, so that little of a batch is padding.

    Crops are taken narrowest first; a batch closes at ``max_batch`` crops, or before a crop
    whose padded width (at least :data:`MIN_BATCH_WIDTH`) would be more than
    :data:`BATCH_WIDTH_SPREAD` times the batch's first one.

    Args:
        widths: each crop's resized width, pixels.
        max_batch: most crops per batch (the recognizer model's ``max_batch_size``).

    Returns:
        lists of crop indices, narrowest first; every index once; empty for no crops.
    """
    order = sorted(range(len(widths)), key=lambda i: widths[i])
    batches: list[list[int]] = []
    for index in order:
        padded = max(widths[index], MIN_BATCH_WIDTH)
        if not batches or len(batches[-1]) == max_batch or \
                padded > BATCH_WIDTH_SPREAD * max(widths[batches[-1][0]], MIN_BATCH_WIDTH):
            batches.append([])
        batches[-1].append(index)
    return batches


def batch_tensor(crops: list[np.ndarray]) -> np.ndarray:
    """The recognizer input for some crops.

    Args:
        crops: uint8 ``[h, w, 3]`` RGB crops (from :func:`crop_box`).

    Returns:
        float32 ``[N, 3, 48, W]``: BGR, ``(p/255 - 0.5) / 0.5``, each crop resized to height
        48 and right-padded with 0; ``W`` is the widest crop's width rounded up to a multiple
        of 8, at least :data:`MIN_BATCH_WIDTH`.
    """
    widths = [resized_width(crop) for crop in crops]
    batch_width = max(MIN_BATCH_WIDTH, -(-max(widths) // WIDTH_STEP) * WIDTH_STEP)
    tensor = np.zeros((len(crops), 3, HEIGHT, batch_width), dtype=np.float32)
    for row, (crop, width) in enumerate(zip(crops, widths)):
        resized = cv2.resize(crop, (width, HEIGHT), interpolation=cv2.INTER_LINEAR)
        bgr = resized[:, :, ::-1].astype(np.float32)
        tensor[row, :, :, :width] = (bgr * np.float32(2 / 255) - 1).transpose(2, 0, 1)
    return tensor


def load_dictionary(path: str | Path) -> list[str]:
    """The recognizer's classes: ``[blank] + one per dictionary line + [" "]``.

    PaddleOCR dictionaries have one character per line with CRLF endings; only the line
    ending is stripped (a line may itself be a space-like character, e.g. U+3000).

    Raises:
        OSError: the file cannot be read.
    """
    lines = Path(path).read_bytes().decode("utf-8").split("\r\n")
    if lines and lines[-1] == "":
        lines.pop()
    return ["", *lines, " "]


@dataclass(frozen=True)
class Glyph:
    """One character as the recognizer emitted it.

    Attributes:
        text: the character (a dictionary class; ``" "`` for the space class).
        first, last: the first and last CTC step of its run (inclusive); step ``t`` covers
            the recognizer input's columns ``[WIDTH_STEP * t, WIDTH_STEP * (t + 1))``.
        score: its probability, 0..1: the highest softmax of its class over its run.
    """

    text: str
    first: int
    last: int
    score: float


@dataclass(frozen=True)
class Span:
    """A piece of text at a place in a crop (a word or a character), in the crop's pixels.

    Attributes:
        text: the text.
        left, right: its columns, pixels from the crop's left edge (``left <= right``).
        top, bottom: its rows, pixels from the crop's top (None: the crop's full height).
        score: confidence, 0..1.
    """

    text: str
    left: float
    right: float
    score: float
    top: float | None = None
    bottom: float | None = None


@dataclass(frozen=True)
class Reading:
    """One crop's text and its confidence (mean probability of the kept CTC steps, 0..1;
    0 for an empty text).

    Attributes:
        glyphs: the CTC characters (:class:`Glyph`, spaces included) of the recognizer's
            reading, in order, those that :attr:`text` strips at either end left out; empty
            for Tesseract's readings.
        words: Tesseract's own words (:class:`Span`, in the pixels of the line image or
            crop it read); empty for the recognizer's.
        characters: per word of :attr:`words` (same index), Tesseract's symbols in it.
    """

    text: str
    score: float
    glyphs: tuple[Glyph, ...] = ()
    words: tuple[Span, ...] = ()
    characters: tuple[tuple[Span, ...], ...] = ()


def ctc_greedy(best: np.ndarray, confidence: np.ndarray, classes: list[str]) -> list[Reading]:
    """Greedy CTC decoding (Graves et al., ICML 2006) of the recognizer's best path: per
    step the most likely class; repeats merged, blanks (class 0) dropped.

    Args:
        best: int ``[N, T]`` each step's most likely class (the recognizer's
            ``RECOGNIZER_CLASSES``, the ArgMax of its softmax).
        confidence: float32 ``[N, T]`` that class's probability (``RECOGNIZER_SCORES``).
        classes: the dictionary's strings (:func:`load_dictionary`).

    Returns:
        one :class:`Reading` per row, spaces at either end stripped, with its
        :attr:`Reading.glyphs` (where along the input each character was emitted).

    Raises:
        ValueError: a class beyond the dictionary (the recognizer has more classes than it).
    """
    if best.size and int(best.max()) >= len(classes):
        raise ValueError(f"the recognizer answered class {int(best.max())}, the dictionary "
                         f"has {len(classes)}")
    readings = []
    for row, conf in zip(best, confidence):
        keep = np.ones(len(row), dtype=bool)
        keep[1:] = row[1:] != row[:-1]
        keep &= row != 0
        text = "".join(classes[i] for i in row[keep])
        score = float(conf[keep].mean()) if keep.any() else 0.0
        glyphs = []
        for first in np.flatnonzero(keep):
            last = first
            while last + 1 < len(row) and row[last + 1] == row[first]:
                last += 1
            glyphs.append(Glyph(classes[row[first]], int(first), int(last),
                                float(conf[first:last + 1].max())))
        while glyphs and not glyphs[0].text.strip():
            glyphs.pop(0)
        while glyphs and not glyphs[-1].text.strip():
            glyphs.pop()
        readings.append(Reading(text.strip(), score if text.strip() else 0.0, tuple(glyphs)))
    return readings
