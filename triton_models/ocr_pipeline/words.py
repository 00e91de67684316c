"""Words (and characters) of a text line, placed in the image: from the recognizer's own CTC
steps, no other network.

The recognizer emits each character at some CTC steps (:class:`ocr_pipeline.recognition.Glyph`);
a step is :data:`~ocr_pipeline.recognition.WIDTH_STEP` columns of its input, the crop resized to
height 48, so every character has a centre along the crop. Characters between spaces make a
word. A character reaches halfway to its neighbours within its word; two words part in the
middle of the widest run of inkless columns between them (Otsu's threshold on the line's crop,
the minority class being the ink); a word's box is then fitted to its ink, up to a character
pitch beyond its outer characters' centres, and its four corners are carried back to the image
by the crop's own transform (:func:`ocr_pipeline.recognition.crop_to_image`: the crop's turn
undone, then the inverse of its perspective warp). Lines Tesseract read come with Tesseract's
own word boxes (:class:`ocr_pipeline.recognition.Span` in the crop's pixels), placed back the
same way.

Chinese and Japanese: Cloud Vision answers such lines as words of a few characters with no
space between them, from its own segmenter; with no dictionary here, every Han or kana
character (and CJK punctuation) is a word of its own: the one unit that never crosses a word
boundary. Korean, which spaces its words, splits at spaces like Latin script.

Confidence of a word: the lowest of its characters' probabilities - a word is right only if
every character is, and a mean would hide one doubtful letter among sure ones (Tesseract's
word confidence is likewise led by its least certain character, so both recognizers' words
mean the same).
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

import cv2
import numpy as np

from .recognition import WIDTH_STEP, Glyph, Reading, Span, crop_to_image, resized_width

#: Unicode name prefixes of the characters that are each a word of their own.
_OWN_WORD = ("CJK ", "HIRAGANA ", "KATAKANA ", "IDEOGRAPHIC ")


@dataclass(frozen=True)
class Word:
    """A word placed in the image.

    Attributes:
        points: float32 ``[4, 2]`` corners (x, y) in the image's pixels, clockwise from the
            word's own top-left (the first two run along its text, whichever way up).
        text: its text.
        score: its confidence, 0..1 (see the module docstring).
        characters: ``(points, text, score)`` per character, the same conventions.
    """

    points: np.ndarray
    text: str
    score: float
    characters: tuple[tuple[np.ndarray, str, float], ...] = ()


def own_word(character: str) -> bool:
    """True for a character that is a word by itself (Han, kana, CJK punctuation)."""
    return unicodedata.name(character[:1], "").startswith(_OWN_WORD)


def split_words(glyphs: tuple[Glyph, ...] | list[Glyph]) -> list[list[Glyph]]:
    """The words of a reading: runs of glyphs between spaces, every :func:`own_word` glyph
    alone. Returns lists of glyphs, in order; no empty ones."""
    words: list[list[Glyph]] = [[]]
    for glyph in glyphs:
        if not glyph.text.strip():
            words.append([])
        elif own_word(glyph.text):
            words += [[glyph], []]
        else:
            words[-1].append(glyph)
    return [word for word in words if word]


def _centre(glyph: Glyph, scale: float) -> float:
    """The glyph's centre along the crop, pixels: the middle of its steps' columns."""
    return (glyph.first + glyph.last + 1) / 2 * WIDTH_STEP * scale


def _gap_middle(empty: np.ndarray, low: float, high: float) -> float:
    """The middle of the longest run of columns without ink between ``low`` and ``high``
    (``empty``: bool per column); their midpoint when every column there has ink."""
    start, end = int(np.ceil(low)), int(np.floor(high))
    best, best_length, run_start = (low + high) / 2, 0, None
    for column in range(start, end + 1):
        if column < end and empty[column]:
            run_start = column if run_start is None else run_start
            continue
        if run_start is not None and column - run_start > best_length:
            best, best_length = (run_start + column) / 2, column - run_start
        run_start = None
    return best


def glyph_spans(glyphs: tuple[Glyph, ...], crop: np.ndarray, ink: np.ndarray | None = None
                ) -> list[tuple[Span, tuple[Span, ...], tuple[float, float]]]:
    """Each word of a recognizer reading with its characters, as column spans of the crop.

    Args:
        glyphs: :attr:`Reading.glyphs` of the crop's reading.
        crop: ``[h, w, ...]`` the crop it read (:func:`recognition.crop_box`); the recognizer
            saw it resized to :func:`recognition.resized_width` columns.
        ink: :func:`ink_mask` of the crop, when known: two words then part in the middle of
            the widest run of columns without ink (in the crop's middle half of rows, where
            neighbouring lines never reach) between them, rather than halfway between their
            characters.

    Returns:
        ``(word, characters, reach)`` per word, in order: spans with ``left``/``right`` in
        crop columns (see the module docstring), the word's score its characters' lowest;
        ``reach``, the columns its ink may extend to: a whole character pitch beyond its
        first and last characters' centres, never past where it parts from the next word
        (a CTC spike need not sit in the middle of a wide letter).
    """
    crop_height, crop_width = crop.shape[:2]
    scale = crop_width / resized_width(crop)
    words = split_words(glyphs)
    # A crop narrower than the batch is padded, and a reading of sideways text can place
    # characters in that padding: they are kept at the crop's last column.
    centres = [[min(_centre(g, scale), crop_width) for g in word] for word in words]
    gaps = [b - a for row in centres for a, b in zip(row, row[1:])]
    line_pitch = float(np.median(gaps)) if gaps else crop_height / 2
    empty = None if ink is None else \
        ~ink[crop_height // 4:max(crop_height * 3 // 4, crop_height // 4 + 1)].any(axis=0)
    parts = [(a[-1] + b[0]) / 2 if empty is None else _gap_middle(empty, a[-1], b[0])
             for a, b in zip(centres, centres[1:])]
    found = []
    for index, (word, row) in enumerate(zip(words, centres)):
        pitch = float(np.median(np.diff(row))) if len(row) > 1 else line_pitch
        low = parts[index - 1] if index else 0.0
        high = parts[index] if index + 1 < len(words) else float(crop_width)
        left, right = max(low, row[0] - pitch / 2), min(high, row[-1] + pitch / 2)
        edges = [left, *((a + b) / 2 for a, b in zip(row, row[1:])), right]
        characters = tuple(Span(g.text, edges[k], edges[k + 1], g.score)
                           for k, g in enumerate(word))
        found.append((Span("".join(g.text for g in word), left, right,
                           min(g.score for g in word)), characters,
                       (max(low, row[0] - pitch), min(high, row[-1] + pitch))))
    return found


def ink_mask(crop: np.ndarray) -> np.ndarray:
    """The ink of a text-line crop: bool ``[h, w]``, True where the pixel is of the minority
    class of Otsu's threshold (1979) on its grey levels (text covers less of a line than its
    background, dark on light or light on dark)."""
    gray = cv2.cvtColor(crop, cv2.COLOR_RGB2GRAY) if crop.ndim == 3 else crop
    _, dark = cv2.threshold(gray, 0, 255, cv2.THRESH_BINARY_INV + cv2.THRESH_OTSU)
    dark = dark > 0
    return dark if dark.mean() <= 0.5 else ~dark


def tighten(span: Span, ink: np.ndarray, reach: tuple[float, float] | None = None) -> Span:
    """``span`` fitted to its ink: its rows become the first and last with ink in its columns
    (kept where it has rows already, as Tesseract's words do), its columns the first and last
    with ink in those rows within ``reach`` (default: its own columns); unchanged where its
    columns hold no ink.

    Args:
        span: a word or character span of the crop (columns, pixels).
        ink: :func:`ink_mask` of the crop.
        reach: ``(low, high)`` columns its ink may extend to.
    """
    height, width = ink.shape
    left, right = int(np.floor(max(0.0, span.left))), int(np.ceil(min(width, span.right)))
    if right <= left:
        return span
    rows = np.flatnonzero(ink[:, left:right].any(axis=1))
    if len(rows) == 0:
        return span
    top, bottom = (span.top, span.bottom) if span.top is not None else \
        (float(rows[0]), float(rows[-1] + 1))
    low, high = reach if reach is not None else (span.left, span.right)
    low, high = int(np.floor(max(0.0, low))), int(np.ceil(min(width, high)))
    band = ink[int(top):max(int(np.ceil(bottom)), int(top) + 1), low:high]
    columns = np.flatnonzero(band.any(axis=0))
    if len(columns) == 0:
        return Span(span.text, span.left, span.right, span.score, top, bottom)
    return Span(span.text, float(low + columns[0]), float(low + columns[-1] + 1), span.score,
                top, bottom)


def place(span: Span, crop_height: int, box: np.ndarray) -> np.ndarray:
    """A crop span's four corners in the image: float32 ``[4, 2]``, clockwise from its
    top-left in the crop (the text's own top-left), through
    :func:`ocr_pipeline.recognition.crop_to_image` of the ``box`` the crop was cut from."""
    top = 0.0 if span.top is None else span.top
    bottom = float(crop_height) if span.bottom is None else span.bottom
    corners = np.array([[span.left, top], [span.right, top], [span.right, bottom],
                        [span.left, bottom]], dtype=np.float32)
    return crop_to_image(corners, box)


def line_words(crop: np.ndarray, box: np.ndarray, reading: Reading,
               characters: bool = False) -> list[Word]:
    """The words of one crop's reading, placed in the image.

    Args:
        crop: uint8 ``[h, w, 3]`` RGB, the crop the reading was made from
            (:func:`ocr_pipeline.recognition.crop_box` of ``box``).
        box: float32 ``[4, 2]``, the (grown) box it was cut from, image pixels.
        reading: the recognizer's (:attr:`Reading.glyphs`) or Tesseract's
            (:attr:`Reading.words`, in the crop's pixels) reading of the crop.
        characters: place each word's characters too.

    Returns:
        :class:`Word` per word in reading order; empty for an empty reading.
    """
    height, width = crop.shape[:2]
    ink = ink_mask(crop)
    if reading.words:
        spans = [(word, letters, None) for word, letters in
                 zip(reading.words, reading.characters or [()] * len(reading.words))]
    else:
        spans = glyph_spans(reading.glyphs, crop, ink)
    words = []
    for word, letters, reach in spans:
        tight = tighten(word, ink, reach)
        placed = ()
        if characters:
            placed = tuple(
                (place(tighten(Span(c.text, c.left, c.right, c.score,
                                    c.top if c.top is not None else tight.top,
                                    c.bottom if c.bottom is not None else tight.bottom), ink),
                       height, box), c.text, c.score) for c in letters)
        words.append(Word(place(tight, height, box), word.text, word.score, placed))
    return words



#: Least overlap along the line of two neighbouring boxes' words, in characters of the second
#: (its length over its characters), for the character both end and start with to be one
#: read twice: the repeated point of drawn invoices overlapped by a quarter of a digit; two
#: letters that merely touch across a box's edge overlap by none.
REPEAT_OVERLAP = 0.15


def _overlap(first: np.ndarray, second: np.ndarray) -> float:
    """How far two sets of positions' ranges overlap (negative: the gap between them)."""
    return float(min(first.max(), second.max()) - max(first.min(), second.min()))


def without_repeats(lines: list[list[int]], texts: list[str], found: list[list[Word]]
                    ) -> tuple[list[str], list[list[Word]]]:
    """The texts and words with a character read twice where two boxes of a line overlap kept
    once: CRAFT's affinity (``refine=false``) may part a number at its decimal point into
    two boxes that both hold the point ("45." and ".00"), and each crop reads it.

    Two neighbouring boxes of a line repeat a character when the first's last word ends with
    the character the second's first word starts with, and the two words' boxes (fitted to
    their ink) overlap along the line by :data:`REPEAT_OVERLAP` of a character or more, and
    across it by half the lower one's height: two words of a line never share ink, a word
    space parts them. The second box then loses it (its text's first character, its first
    word's first character; a word of that one character goes).

    Args:
        lines: the boxes' lines in reading order (:func:`ocr_pipeline.reading_order.layout`).
        texts: each box's text.
        found: each box's :class:`Word` list (:func:`line_words`).

    Returns:
        ``(texts, found)``: new lists; boxes without a repeat keep their own.
    """
    texts, found = list(texts), [list(words) for words in found]
    for line in lines:
        for before, after in zip(line, line[1:]):
            if not found[before] or not found[after]:
                continue
            last, first = found[before][-1], found[after][0]
            if not last.text or last.text[-1] != first.text[:1] \
                    or not texts[after].startswith(first.text[0]):
                continue
            start, end = first.points[0], first.points[1]
            direction = (end - start) / max(float(np.hypot(*(end - start))), 1e-6)
            normal = np.array([-direction[1], direction[0]])
            if _overlap(first.points @ direction, last.points @ direction) \
                    < REPEAT_OVERLAP * float(np.ptp(first.points @ direction)) / len(first.text) \
                    or _overlap(first.points @ normal, last.points @ normal) \
                    < 0.5 * min(np.ptp(first.points @ normal), np.ptp(last.points @ normal)):
                continue
            texts[after] = texts[after][1:].lstrip()
            shorter = Word(first.points, first.text[1:], first.score, first.characters[1:])
            found[after] = ([shorter] if shorter.text else []) + found[after][1:]
    return texts, found
