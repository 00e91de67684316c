"""One upload as a document: an image (one page), a PDF or a multi-page TIFF (pages), opened
from its header and structure only, and the answer built from its pages.

Where pages are made: a PDF is split here into single-page PDFs (counted with PDFium, cut with
pikepdf; no pixel is drawn) and each goes to Triton on its own, where ``preprocess`` renders
it; a multi-page TIFF goes whole with the page to decode (the ``PAGE`` input: frames cannot be
cut out of a TIFF without decoding them). So the gateway stays free of pixel work, only
encoded bytes cross to Triton (each page's share of the PDF, not the whole document per page),
the rendering cost lands on Triton's CPUs next to the networks, and the page limit is checked
from the page count before anything is rendered.
"""

from __future__ import annotations

import io
import warnings
from dataclasses import dataclass, field

from django.conf import settings
from ocr_contract.formats import MULTI_PAGE_FORMATS, PDF, is_pdf
from ocr_contract.tensors import PAGE
from ocr_inference.client import OcrResult
from PIL import Image

from . import errors
from .image_probe import probe_image


@dataclass(frozen=True)
class Document:
    """An upload, opened.

    Attributes:
        format: as the API reports it (``JPEG``, ``PNG``... ``TIFF``, ``PDF``).
        page_count: pages (1 for an image; a TIFF's frames; a PDF's pages).
        data: the upload as sent.
        width, height: the header's size of the first page in pixels (images; 0 for a PDF).
        pages: a PDF's pages as single-page PDFs (empty for images).
        page_points: a PDF's page sizes ``(width, height)`` in points, as displayed (after the
            page's own rotation).
    """

    format: str
    page_count: int
    data: bytes
    width: int = 0
    height: int = 0
    pages: tuple[bytes, ...] = field(default=(), repr=False)
    page_points: tuple[tuple[float, float], ...] = ()

    @property
    def paged(self) -> bool:
        """The answer lists pages: a PDF, or a file of several pages."""
        return self.format == PDF or self.page_count > 1


def open_document(data: bytes, max_pages: int) -> Document:
    """Sniff and open an upload, counting its pages without rendering any.

    Args:
        max_pages: most pages accepted (``OCR_MAX_PAGES``, or a job's limit).

    Raises:
        errors.TooManyPages: more than ``max_pages`` (413), counted from the structure alone.
        errors.DocumentEncrypted, errors.DocumentUndecodable, errors.DocumentEmpty: a PDF that
            needs a password, cannot be read, or has no page (400).
        errors.ApiError: an image's refusals (:func:`ocr_api.image_probe.probe_image`).
    """
    if data and is_pdf(data):
        return _open_pdf(data, max_pages)
    info = probe_image(data, settings.OCR_MAX_PIXELS, settings.OCR_MIN_IMAGE_SIDE)
    pages = _tiff_pages(data, max_pages) if info.format in MULTI_PAGE_FORMATS else 1
    return Document(info.format, pages, data, info.width, info.height)


def _too_many(count: str, max_pages: int) -> errors.TooManyPages:
    return errors.TooManyPages(
        f"The document has {count} pages; one request reads at most {max_pages}. Send a longer "
        f"document in parts of up to {max_pages} pages (the gateway's OCR_MAX_PAGES).")


def _tiff_pages(data: bytes, max_pages: int) -> int:
    """A TIFF's frames, walked one IFD at a time and never past ``max_pages + 1``; the count
    ends before the first frame whose header cannot be read (what can be read is read)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", Image.DecompressionBombWarning)
        with Image.open(io.BytesIO(data), formats=["TIFF"]) as image:
            count = 1
            while True:
                try:
                    image.seek(count)
                except EOFError:
                    return count
                except Exception:  # noqa: BLE001 - a broken IFD makes Pillow raise anything
                    return count
                count += 1
                if count > max_pages:
                    raise _too_many(f"more than {max_pages}", max_pages)


def _open_pdf(data: bytes, max_pages: int) -> Document:
    """A PDF counted and measured with PDFium (what renders it in Triton), split into pages
    with pikepdf (qpdf), whose output is the same bytes for the same page every time, so
    Triton's response cache answers a page sent again."""
    import pikepdf
    import pypdfium2 as pdfium
    import pypdfium2.raw as raw

    try:
        pdf = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        if getattr(exc, "err_code", None) == raw.FPDF_ERR_PASSWORD:
            raise errors.DocumentEncrypted() from exc
        if _pikepdf_page_count(data) == 0:     # PDFium does not open a PDF without pages
            raise errors.DocumentEmpty() from exc
        raise errors.DocumentUndecodable(f"The PDF cannot be read: {exc}") from exc
    try:
        count = len(pdf)
        if count == 0:
            raise errors.DocumentEmpty()
        if count > max_pages:
            raise _too_many(str(count), max_pages)
        points = []
        for index in range(count):
            page = pdf[index]
            points.append(page.get_size())             # as displayed: /Rotate applied
            page.close()
    finally:
        pdf.close()
    try:
        with pikepdf.open(io.BytesIO(data)) as source:
            pages = []
            for page in source.pages:
                with pikepdf.new() as single:
                    single.pages.append(page)
                    buffer = io.BytesIO()
                    single.save(buffer, static_id=True)
                    pages.append(buffer.getvalue())
    except pikepdf.PdfError as exc:
        raise errors.DocumentUndecodable(f"The PDF cannot be read: {exc}") from exc
    if len(pages) != count:
        raise errors.DocumentUndecodable(
            f"The PDF's page tree is inconsistent ({count} or {len(pages)} pages).")
    return Document(PDF, count, data, pages=tuple(pages), page_points=tuple(points))


def _pikepdf_page_count(data: bytes) -> int | None:
    """Pages qpdf finds in a PDF PDFium refused (None when qpdf cannot open it either)."""
    import pikepdf

    try:
        with pikepdf.open(io.BytesIO(data)) as pdf:
            return len(pdf.pages)
    except (pikepdf.PdfError, pikepdf.PasswordError):
        return None


def page_input(document: Document, index: int) -> tuple[bytes, dict]:
    """What Triton gets for page ``index`` (0-based): the encoded bytes, and the inputs that
    pick the page (``{"PAGE": index}`` for a TIFF frame; none otherwise)."""
    if document.pages:
        return document.pages[index], {}
    return document.data, ({PAGE.name: index} if index else {})


def _points(corners) -> list:
    return [[round(float(x), 1), round(float(y), 1)] for x, y in corners]


def page_body(result: OcrResult, document: Document, index: int, recognized: bool) -> dict:
    """One page of the answer: its number (from 1), the ensemble that read it, its size, the
    whole text (when read), the boxes, and their lines and paragraphs in reading order. Points are rounded to 0.1 px, scores to 4
    decimals; a line lists its boxes' indices, a paragraph its lines'."""
    boxes = [{"points": _points(box), "score": round(float(score), 4)}
             for box, score in zip(result.boxes, result.scores)]
    if recognized:
        for box, text, score in zip(boxes, result.texts, result.text_scores):
            box["text"], box["text_score"] = text, round(float(score), 4)
    members: list[list[int]] = [[] for _ in result.line_boxes]
    for box in result.reading_order:
        members[int(result.line_of_box[box])].append(int(box))
    lines = []
    for corners, indices in zip(result.line_boxes, members):
        line = {"points": _points(corners), "boxes": indices}
        if recognized:
            line["text"] = " ".join(result.texts[i] for i in indices if result.texts[i])
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
    body = {"page": index + 1, "model": {"name": result.model_name,
                                         "version": result.model_version},
            "width": result.width, "height": result.height, "angle": result.angle}
    if recognized:
        body["text"] = result.text
    return {**body, "boxes": boxes, "lines": lines, "paragraphs": paragraphs}


def document_body(document: Document, pages: list[dict]) -> dict:
    """The whole answer from the pages' bodies (:func:`page_body`, in page order).

    An image answers its page at the top level, its size under ``image`` (as before pages
    existed); a PDF or multi-page TIFF answers ``document`` (format, page count), ``pages``,
    and the whole ``text``: the pages' texts joined by a form feed. ``model`` is the first
    page's (every page of a request is read by the same ensemble version unless a new one
    rolled out in between; each page keeps its own then).
    """
    model = pages[0]["model"]
    if not document.paged:
        [page] = pages
        image = {"width": page["width"], "height": page["height"], "format": document.format,
                 "angle": page["angle"]}
        rest = {k: v for k, v in page.items()
                if k not in ("page", "model", "width", "height", "angle")}
        return {"model": model, "image": image, **rest}
    pages = [{k: v for k, v in page.items() if k != "model" or v != model} for page in pages]
    body = {"model": model, "document": {"format": document.format,
                                         "pages": document.page_count}}
    if all("text" in page for page in pages):
        body["text"] = "\f".join(page["text"] for page in pages)
    return {**body, "pages": pages}
