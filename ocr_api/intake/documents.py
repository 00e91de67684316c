"""One upload as a document: an image (one page), a PDF or a multi-page TIFF (pages), opened
from its header and structure only, and what Triton gets for each of its pages. (The answer
built from the pages is :mod:`ocr_api.answer`'s.)

Where pages are made: a PDF is split here into single-page PDFs (counted with PDFium, cut with
pikepdf; no pixel is drawn) and each goes to Triton on its own, where ``preprocess`` renders
it; a multi-page TIFF goes whole with the page to decode (the ``PAGE`` input: frames cannot be
cut out of a TIFF without decoding them). So the gateway stays free of pixel work, only
encoded bytes cross to Triton (each page's share of the PDF, not the whole document per page),
the rendering cost lands on Triton's CPUs next to the networks, and the page limit is checked
from the page count before anything is rendered.

Where uploads are opened: in a parser process (:mod:`.isolation`), never in the gateway's own
worker process. PDFium, qpdf and Pillow are native code reading bytes a client chose, and their
trackers list crafted files that crashed or hung them; in a parser process such a file costs
its own request (400 ``document_undecodable`` or ``document_too_complex``) and nothing else.
:func:`open_document` is that path; :func:`open_in_process` is the same opening in the calling
process, with every limit an argument, for code that runs no untrusted upload (and for the
parser process itself).
"""

from __future__ import annotations

import io
import warnings
from dataclasses import dataclass, field

from django.conf import settings
from ocr_contract import limits
from ocr_contract.formats import MULTI_PAGE_FORMATS, PDF, is_pdf
from ocr_contract.tensors import PAGE
from PIL import Image

from .. import errors
from . import isolation
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
        dpi: an image's resolution as its header names it, dots per inch
            (:attr:`ImageInfo.dpi <ocr_api.intake.image_probe.ImageInfo.dpi>`); None for a PDF
            and for an image that names none.
    """

    format: str
    page_count: int
    data: bytes
    width: int = 0
    height: int = 0
    pages: tuple[bytes, ...] = field(default=(), repr=False)
    page_points: tuple[tuple[float, float], ...] = ()
    dpi: float | None = None

    @property
    def paged(self) -> bool:
        """The answer lists pages: a PDF, or a file of several pages."""
        return self.format == PDF or self.page_count > 1


def open_document(data: bytes, max_pages: int) -> Document:
    """Sniff and open an upload, counting its pages without rendering any, in one of this
    process's parser processes (:func:`open_isolated` with the settings' limits).

    Args:
        data: the upload's bytes.
        max_pages: most pages accepted (``OCR_MAX_PAGES``, or a job's limit).

    Raises:
        errors.TooManyPages: more than ``max_pages`` (413), counted from the structure alone.
        errors.DocumentEncrypted, errors.DocumentUndecodable, errors.DocumentEmpty: a PDF that
            needs a password, cannot be read, or has no page (400).
        errors.DocumentUndecodable: the file crashed the parser process (400).
        errors.DocumentTooComplex: opening took longer than ``OCR_PARSER_TIMEOUT_MS``, or more
            memory than ``OCR_PARSER_MEMORY_BYTES`` (400).
        errors.ApiError: an image's refusals (:func:`ocr_api.intake.image_probe.probe_image`).
    """
    pool = isolation.shared_pool(_setting(limits.PARSER_PROCESSES),
                                 _setting(limits.PARSER_MEMORY_BYTES))
    return open_isolated(pool, data, max_pages, timeout_ms=_setting(limits.PARSER_TIMEOUT_MS),
                         max_pixels=settings.OCR_MAX_PIXELS,
                         min_side=settings.OCR_MIN_IMAGE_SIDE)


def start_parsers() -> None:
    """Start this process's parser processes (and their fork server, ~1 s) now, so that the
    first upload it opens does not wait for them: for a worker process's start (gunicorn's
    ``post_worker_init``, a jobs worker), in a thread if it should not wait either."""
    isolation.shared_pool(_setting(limits.PARSER_PROCESSES),
                          _setting(limits.PARSER_MEMORY_BYTES)).warm_up()


def _setting(limit: limits.Limit) -> int:
    """A limit's Django setting, else its environment variable or default."""
    value = getattr(settings, limit.setting, None)
    return limit.read() if value is None else int(value)


def open_isolated(pool: isolation.ParserPool, data: bytes, max_pages: int, *, timeout_ms: int,
                  max_pixels: int, min_side: int, parse=None) -> Document:
    """Open an upload in a process of ``pool``, so that a crash or a hang of the native
    parsers costs this call only.

    Args:
        pool: the parser processes (:func:`ocr_api.intake.isolation.shared_pool`).
        data, max_pages: as :func:`open_document`'s.
        timeout_ms: most milliseconds the parser process may take.
        max_pixels, min_side: an image's limits (:func:`open_in_process`).
        parse: the function the parser process runs (default :func:`parse_document`); another
            module-level function with its signature and return value lets a test crash or
            hang a real parser process.

    Raises:
        errors.ApiError: what :func:`open_document` raises; the parser process's own refusals
            come back as their codes and are raised here.
        RuntimeError: the parser raised something else (a bug: a 500, as in process).
    """
    try:
        reply = pool.call(parse or parse_document, (data, max_pages, max_pixels, min_side),
                          timeout_ms / 1000.0)
    except isolation.ParserCrashed as exc:
        raise errors.DocumentUndecodable(
            "The file crashed the document parser and cannot be read.") from exc
    except isolation.ParserTimedOut as exc:
        raise errors.DocumentTooComplex(
            f"The document took too long to open (more than {timeout_ms} ms).") from exc
    except isolation.ParserOutOfMemory as exc:
        raise errors.DocumentTooComplex(
            f"The document needs more memory to open than the gateway allows "
            f"({pool.memory_bytes // (1024 * 1024)} MiB).") from exc
    except isolation.ParserFailed as exc:
        raise RuntimeError(str(exc)) from None
    if reply[0] == "refused":
        _, code, message, field_name = reply
        raise errors.ApiError.by_code.get(code, errors.DocumentUndecodable)(
            message, field=field_name)
    _, fmt, page_count, width, height, pages, page_points, dpi = reply
    return Document(fmt, page_count, data, width, height, tuple(pages),
                    tuple(tuple(size) for size in page_points), dpi)


def parse_document(data: bytes, max_pages: int, max_pixels: int, min_side: int) -> tuple:
    """What a parser process runs for :func:`open_isolated`: :func:`open_in_process`, its
    answer as plain data (no exception object crosses back).

    Returns:
        ``("document", format, page_count, width, height, pages, page_points, dpi)``, or
        ``("refused", code, message, field)`` for an :class:`errors.ApiError`.
    """
    try:
        document = open_in_process(data, max_pages, max_pixels, min_side)
    except errors.ApiError as exc:
        return ("refused", exc.default_code, str(exc.detail), exc.field)
    return ("document", document.format, document.page_count, document.width,
            document.height, document.pages, document.page_points, document.dpi)


def open_in_process(data: bytes, max_pages: int, max_pixels: int, min_side: int) -> Document:
    """Open an upload in this process, every limit an argument (no Django settings read).

    Only for bytes that are not a client's, or inside a parser process: a crafted file can
    crash or hang the native parsers, and here that would take the calling process with it.

    Args:
        data, max_pages: as :func:`open_document`'s.
        max_pixels: an image's most pixels (``OCR_MAX_PIXELS``).
        min_side: an image's shortest side in pixels (``OCR_MIN_IMAGE_SIDE``).

    Raises:
        errors.ApiError: what :func:`open_document` raises, but for a crash, a hang or the
            memory limit.
    """
    if data and is_pdf(data):
        return _open_pdf(data, max_pages)
    info = probe_image(data, max_pixels, min_side)
    pages = _tiff_pages(data, max_pages) if info.format in MULTI_PAGE_FORMATS else 1
    return Document(info.format, pages, data, info.width, info.height, dpi=info.dpi)


def _too_many(count: str, max_pages: int) -> errors.TooManyPages:
    """The refusal of a document over ``max_pages``: the facts only, since the same parser
    opens for POST /api/ocr and for jobs; the endpoint adds where a longer one goes
    (:func:`ocr_api.views.base.refusal_for_sync`)."""
    return errors.TooManyPages(
        f"The document has {count} pages; this endpoint reads at most {max_pages}.")


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
    Triton's response cache answers a page sent again.

    A damaged file fails in either library in many ways (found by fuzzing: PDFium's "Failed to
    load page.", qpdf's runtime errors, pybind's overflow ``ValueError``); each becomes
    :class:`errors.DocumentUndecodable`, naming the page when one page is the problem. A
    document with some unreadable pages is refused whole rather than answered without them: a
    client reading ``text`` could not tell a missing page from a blank one.
    """
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
            try:
                page = pdf[index]
            except pdfium.PdfiumError as exc:
                raise errors.DocumentUndecodable(
                    f"Page {index + 1} of {count} of the PDF cannot be read: {exc}") from exc
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
    except _qpdf_errors() as exc:
        raise errors.DocumentUndecodable(f"The PDF cannot be read: {exc}") from exc
    if len(pages) != count:
        raise errors.DocumentUndecodable(
            f"The PDF's page tree is inconsistent ({count} or {len(pages)} pages).")
    return Document(PDF, count, data, pages=tuple(pages), page_points=tuple(points))


def _qpdf_errors() -> tuple[type[Exception], ...]:
    """What pikepdf raises for a damaged file: its own errors (``PdfError``, ``PasswordError``,
    ``QpdfRuntimeError``... all derive from ``PikepdfError``) and pybind's ``ValueError`` for a
    number too large for qpdf's 64-bit integers."""
    import pikepdf

    return (pikepdf.PikepdfError, ValueError)


def _pikepdf_page_count(data: bytes) -> int | None:
    """Pages qpdf finds in a PDF PDFium refused (None when qpdf cannot open it either)."""
    import pikepdf

    try:
        with pikepdf.open(io.BytesIO(data)) as pdf:
            return len(pdf.pages)
    except _qpdf_errors():
        return None


def page_input(document: Document, index: int) -> tuple[bytes, dict]:
    """What Triton gets for page ``index`` (0-based, below ``document.page_count``): the
    encoded bytes (a PDF page's single-page PDF, else the whole upload), and the inputs that
    pick the page (``{"PAGE": index}`` for a later TIFF frame; none otherwise)."""
    if document.pages:
        return document.pages[index], {}
    return document.data, ({PAGE.name: index} if index else {})
