"""The gateway's answer for one image or page as Cloud Vision's ``AnnotateImageResponse``.

Cloud Vision's ``fullTextAnnotation`` is pages -> blocks -> paragraphs -> words -> symbols, each
with ``boundingBox.vertices`` (integer pixels, clockwise from the top-left of the text) and
``confidence`` (0-1); ``textAnnotations`` is the whole text with its polygon, then every word.
Here a block is one of the answer's paragraphs (Cloud Vision's blocks hold one or more
paragraphs; the gateway's reading order has no larger unit), its words are the words of the
paragraph's lines (``lines[].words``, asked with ``detail=characters``), and a word's symbols
are its characters. A word that came without characters (none is expected) gets its box
divided evenly along its baseline. ``detectedBreak``: ``SPACE`` after a word inside a line,
``EOL_SURE_SPACE`` after a line's last word, as Cloud Vision marks them; the text is built from
the same words and breaks (a space, or a newline), so text and symbols agree.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

#: TextAnnotation.DetectedBreak.BreakType names.
SPACE, EOL_SURE_SPACE = "SPACE", "EOL_SURE_SPACE"

Point = Sequence[float]


def bounding_poly(points: Iterable[Point]) -> dict:
    """``{"vertices": [{"x", "y"}, ...]}`` of ``points`` (pixels), rounded to whole pixels as
    Cloud Vision's are."""
    return {"vertices": [{"x": round(x), "y": round(y)} for x, y in points]}


def enclosing(points: Iterable[Point]) -> list[list[float]]:
    """The axis-aligned rectangle around ``points``: 4 corners clockwise from the top-left."""
    xs, ys = zip(*((x, y) for x, y in points))
    left, top, right, bottom = min(xs), min(ys), max(xs), max(ys)
    return [[left, top], [right, top], [right, bottom], [left, bottom]]


def _lerp(a: Point, b: Point, t: float) -> list[float]:
    return [a[0] + (b[0] - a[0]) * t, a[1] + (b[1] - a[1]) * t]


def even_characters(word: dict) -> list[dict]:
    """A word's characters with its box divided evenly along its length (top and bottom edges
    cut at the same fractions), each with the word's confidence."""
    text = word["text"]
    p0, p1, p2, p3 = word["points"]
    count = max(len(text), 1)
    characters = []
    for index, char in enumerate(text):
        a, b = index / count, (index + 1) / count
        characters.append({"text": char, "confidence": word["confidence"], "points": [
            _lerp(p0, p1, a), _lerp(p0, p1, b), _lerp(p3, p2, b), _lerp(p3, p2, a)]})
    return characters


def _symbols(word: dict, last_break: str) -> list[dict]:
    characters = word.get("characters") or even_characters(word)
    symbols = [{"text": char["text"], "confidence": char["confidence"],
                "boundingBox": bounding_poly(char["points"])} for char in characters]
    if symbols:
        symbols[-1]["property"] = {"detectedBreak": {"type": last_break}}
    return symbols


def annotate(page: dict, languages: Sequence[str] = ()) -> dict:
    """One ``AnnotateImageResponse`` (without ``context``) for an image or page answer.

    Args:
        page: the gateway's answer for one image or document page (``ocr_api.answer``):
            ``width``/``height`` (or ``image.width``/``image.height``), ``lines`` with their
            ``words`` (``points``, ``text``, ``confidence``, ``characters`` with
            ``detail=characters``) and ``paragraphs`` (``lines``: indices, ``confidence``).
        languages: ISO 639-1 codes asked (``imageContext.languageHints`` the gateway reads):
            the page's ``detectedLanguages`` and the first annotation's ``locale``.

    Returns:
        ``{}`` for a page without a word (as Cloud Vision answers an image without text), else
        ``{"textAnnotations": [...], "fullTextAnnotation": {"text", "pages": [...]}}``.
    """
    width = page.get("width") or page["image"]["width"]
    height = page.get("height") or page["image"]["height"]
    lines = page.get("lines", [])
    language = [{"languageCode": code} for code in languages]
    blocks, words_seen, text = [], [], []
    for paragraph in page.get("paragraphs", []):
        words = []
        for index in paragraph["lines"]:
            line_words = [w for w in lines[index].get("words", []) if w["text"]]
            for number, word in enumerate(line_words):
                last = number == len(line_words) - 1
                words.append({"boundingBox": bounding_poly(word["points"]),
                              "confidence": word["confidence"],
                              "symbols": _symbols(word, EOL_SURE_SPACE if last else SPACE)})
                words_seen.append(word)
            if line_words:
                text.append(" ".join(word["text"] for word in line_words) + "\n")
        if not words:
            continue
        corners = enclosing(point for word in words for point in
                            ((v["x"], v["y"]) for v in word["boundingBox"]["vertices"]))
        box = bounding_poly(corners)
        blocks.append({"blockType": "TEXT", "boundingBox": box,
                       "confidence": paragraph["confidence"],
                       "paragraphs": [{"boundingBox": box, "confidence": paragraph["confidence"],
                                       "words": words}]})
    if not words_seen:
        return {}
    whole = "".join(text)
    first = {"description": whole,
             "boundingPoly": bounding_poly(enclosing(p for w in words_seen for p in w["points"]))}
    if languages:
        first["locale"] = languages[0]
    page_annotation = {"width": width, "height": height, "blocks": blocks,
                       "confidence": sum(b["confidence"] for b in blocks) / len(blocks)}
    if language:
        page_annotation["property"] = {"detectedLanguages": language}
    return {"textAnnotations": [first] + [{"description": w["text"],
                                           "boundingPoly": bounding_poly(w["points"])}
                                          for w in words_seen],
            "fullTextAnnotation": {"text": whole, "pages": [page_annotation]}}
