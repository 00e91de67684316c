"""The answer to one upload, built once from what Triton read on its pages: the JSON body that
``POST /api/ocr`` and each batch item answer, and the pages every output format
(:mod:`ocr_api.formats`) is made from. Every API shape builds its answer here.

An :class:`Answer` keeps the pages as :func:`page_body` made them (never flattened), so a
format reads :attr:`Answer.pages` and never has to undo :meth:`Answer.body`'s flattening of an
image's one page to the top level.
"""

from __future__ import annotations

from dataclasses import dataclass

from ocr_inference.client import OcrResult

from .intake.documents import Document

#: Keys of a page's body that an image's answer moves out of its top level (``page``,
#: ``model``) or under ``image`` (the rest).
_IMAGE_KEYS = ("page", "model", "width", "height", "angle")


def _points(corners) -> list:
    return [[round(float(x), 1), round(float(y), 1)] for x, y in corners]


def _confidence(words: list[dict]) -> float:
    """A line's or paragraph's confidence: the mean of its words' (0 without words)."""
    return round(sum(w["confidence"] for w in words) / len(words), 4) if words else 0.0


def _words(result: OcrResult) -> list[list[dict]]:
    """Each box's words as the answer shows them: ``{"points", "text", "confidence", "box"}``
    and, when asked for, ``"characters"`` (``{"points", "text", "confidence"}`` each)."""
    per_box: list[list[dict]] = [[] for _ in result.boxes]
    if result.words is None:
        return per_box
    found = []
    for corners, text, score, box in zip(result.words.boxes, result.words.texts,
                                         result.words.scores, result.words.owner):
        word = {"points": _points(corners), "text": text,
                "confidence": round(float(score), 4), "box": int(box)}
        if result.characters is not None:
            word["characters"] = []
        per_box[int(box)].append(word)
        found.append(word)
    if result.characters is not None:
        for corners, text, score, word in zip(result.characters.boxes, result.characters.texts,
                                              result.characters.scores, result.characters.owner):
            found[int(word)]["characters"].append(
                {"points": _points(corners), "text": text, "confidence": round(float(score), 4)})
    return per_box


def page_body(result: OcrResult, index: int, recognized: bool) -> dict:
    """One page of the answer.

    Args:
        result: what Triton read on the page (points in the page's upright pixels).
        index: the page's position in the document, from 0.
        recognized: the text was read (``recognize``); without it no ``text`` keys.

    Returns:
        ``{"page": index + 1, "model": {"name", "version"}, "width", "height" (pixels),
        "angle" (degrees clockwise), "text"?, "boxes", "lines", "paragraphs"}``: boxes with
        ``points`` (4 ``[x, y]``, rounded to 0.1 px), ``score`` and ``text``/``text_score``
        (scores rounded to 4 decimals); lines with their ``points``, the indices of their
        ``boxes`` in reading order, ``text``, ``confidence`` (the mean of their words') and
        ``words`` (``points`` clockwise from the word's own top-left, ``text``,
        ``confidence`` - the lowest of its characters' -, the ``box`` it was read in, and its
        ``characters`` when asked for); paragraphs with the rectangle around their lines, the
        indices of their ``lines``, ``text`` and ``confidence`` (the mean of their words').
        Without ``recognized``, no ``text``, ``confidence`` or ``words``.
    """
    boxes = [{"points": _points(box), "score": round(float(score), 4)}
             for box, score in zip(result.boxes, result.scores)]
    if recognized:
        for box, text, score in zip(boxes, result.texts, result.text_scores):
            box["text"], box["text_score"] = text, round(float(score), 4)
    members: list[list[int]] = [[] for _ in result.line_boxes]
    for box in result.reading_order:
        members[int(result.line_of_box[box])].append(int(box))
    lines = []
    words = _words(result)
    for corners, indices in zip(result.line_boxes, members):
        line = {"points": _points(corners), "boxes": indices}
        if recognized:
            line["text"] = " ".join(result.texts[i] for i in indices if result.texts[i])
            found = [word for i in indices for word in words[i]]
            line["confidence"], line["words"] = _confidence(found), found
        lines.append(line)
    paragraphs: list[dict] = []
    for number, paragraph in enumerate(result.paragraph_of_line):
        if int(paragraph) == len(paragraphs):
            paragraphs.append({"lines": []})
        paragraphs[-1]["lines"].append(number)
    for paragraph in paragraphs:
        corners = [point for i in paragraph["lines"] for point in lines[i]["points"]]
        xs, ys = [p[0] for p in corners], [p[1] for p in corners]
        paragraph["points"] = [[min(xs), min(ys)], [max(xs), min(ys)], [max(xs), max(ys)],
                               [min(xs), max(ys)]]
        if recognized:
            paragraph["text"] = "\n".join(lines[i]["text"] for i in paragraph["lines"]
                                          if lines[i]["text"])
            paragraph["confidence"] = _confidence([w for i in paragraph["lines"]
                                                   for w in lines[i]["words"]])
    body = {"page": index + 1, "model": {"name": result.model_name,
                                         "version": result.model_version},
            "width": result.width, "height": result.height, "angle": result.angle}
    if recognized:
        body["text"] = result.text
    return {**body, "boxes": boxes, "lines": lines, "paragraphs": paragraphs}


def rendered_dpi(width_px: int, width_pt: float) -> float:
    """The resolution a PDF page was read at, in dots per inch: its width in the pixels Triton
    rendered (``OCR_PDF_DPI``, as rounded to whole pixels) over its displayed width in points
    (1/72 inch)."""
    return 72.0 * width_px / width_pt


@dataclass(frozen=True)
class Answer:
    """The answer to one opened upload.

    Attributes:
        document: the upload it answers (format, page count, the bytes; a PDF's page sizes).
        pages: one :func:`page_body` per page of ``document``, in page order.
    """

    document: Document
    pages: tuple[dict, ...]

    @property
    def text(self) -> str | None:
        """The whole text in reading order, the pages' joined by a form feed; None when the
        text was not read (``recognize=false``)."""
        if not all("text" in page for page in self.pages):
            return None
        return "\f".join(page["text"] for page in self.pages)

    @property
    def dpis(self) -> list[float | None]:
        """Per page, the resolution it was read at in dots per inch: a PDF's pages as rendered
        (:func:`rendered_dpi`); an image's pixels are the file's own, at the resolution its
        header names (:attr:`Document.dpi <ocr_api.intake.documents.Document.dpi>`, None when it
        names none)."""
        if not self.document.page_points:
            return [self.document.dpi] * len(self.pages)
        return [rendered_dpi(page["width"], points[0])
                for page, points in zip(self.pages, self.document.page_points)]

    def body(self) -> dict:
        """The answer as JSON (without the request's ``request_id`` and ``timing_ms``).

        An image answers its page at the top level, its size under ``image`` (as before pages
        existed): ``{"model", "image": {"width", "height", "format", "angle"}, "text"?,
        "boxes", "lines", "paragraphs"}``. A PDF or multi-page TIFF answers
        ``{"model", "document": {"format", "pages"}, "text"?, "pages"}``, ``text`` being
        :attr:`text`. ``model`` is the first page's (every page of a request is read by the
        same ensemble version unless a new one rolled out in between; a page read by another
        keeps its own ``model``, the others lose theirs).
        """
        model = self.pages[0]["model"]
        if not self.document.paged:
            [page] = self.pages
            image = {"width": page["width"], "height": page["height"],
                     "format": self.document.format, "angle": page["angle"]}
            rest = {k: v for k, v in page.items() if k not in _IMAGE_KEYS}
            return {"model": model, "image": image, **rest}
        pages = [{k: v for k, v in page.items() if k != "model" or v != model}
                 for page in self.pages]
        body = {"model": model, "document": {"format": self.document.format,
                                             "pages": self.document.page_count}}
        text = self.text
        if text is not None:
            body["text"] = text
        return {**body, "pages": pages}


def build_answer(document: Document, results: list[OcrResult], recognized: bool) -> Answer:
    """The answer to ``document`` from Triton's results for its pages.

    Args:
        document: the opened upload.
        results: one result per page of ``document``, in page order.
        recognized: the text was read (the request's ``recognize``).

    Raises:
        ValueError: not one result per page.
    """
    if len(results) != document.page_count:
        raise ValueError(f"{len(results)} results for {document.page_count} pages")
    return Answer(document, tuple(page_body(result, index, recognized)
                                  for index, result in enumerate(results)))
