"""PDF pages as images: rendered with PDFium (pypdfium2), at a bounded size and in bounded time.

PDFium is Chrome's PDF engine, the library most PDF tooling in Python (pypdfium2, docTR,
ocrmypdf's rasteriser option) renders with. A page is rendered at :data:`ocr_contract.limits.
PDF_DPI` (200 dpi: a 10 pt line is ~28 pixels high, the detector's resize then brings it to
its working size), lowered for a page that would have more pixels than ``OCR_MAX_PIXELS``, on
white, with annotations (form fields and stamps are part of what a reader sees). It is drawn
progressively (``FPDF_RenderPageBitmap_Start`` / ``FPDF_RenderPage_Continue``): between two
drawing steps PDFium asks whether to pause, and past the deadline the rendering is abandoned,
so a page made of millions of tiny vector objects cannot hold a model instance for long.
"""

from __future__ import annotations

import ctypes
import math
import time
from dataclasses import dataclass

import numpy as np

#: PDF user space units per inch.
POINTS_PER_INCH = 72.0


class PdfDecodeError(ValueError):
    """The bytes are not a PDF PDFium can open (broken, encrypted) or have no such page."""


class PdfTooComplexError(ValueError):
    """The page did not finish rendering before the deadline."""


@dataclass(frozen=True)
class RenderedPage:
    """One rendered page.

    Attributes:
        pixels: uint8 ``[height, width, 3]`` RGB.
        dpi: the resolution it was rendered at (pixels per inch).
    """

    pixels: np.ndarray
    dpi: float


def render_page(data: bytes, index: int, dpi: float, max_pixels: int | None,
                timeout_s: float) -> RenderedPage:
    """Render one page of a PDF.

    Args:
        data: the PDF file.
        index: 0-based page.
        dpi: wanted resolution; lowered so that ``width * height <= max_pixels``.
        max_pixels: most pixels of the rendering (None: no cap).
        timeout_s: most seconds of drawing.

    Raises:
        PdfDecodeError: PDFium cannot open the file (its error is in the message: a password,
            a broken file), the page does not exist, or its page object cannot be loaded.
        PdfTooComplexError: drawing took longer than ``timeout_s``.
    """
    import pypdfium2 as pdfium

    try:
        document = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        raise PdfDecodeError(f"cannot open the PDF: {exc}") from exc
    try:
        if not 0 <= index < len(document):
            raise PdfDecodeError(f"the PDF has {len(document)} pages, no page {index + 1}")
        try:
            page = document[index]
        except pdfium.PdfiumError as exc:           # a broken page object: damaged file
            raise PdfDecodeError(f"page {index + 1} cannot be read: {exc}") from exc
        try:
            width_pt, height_pt = page.get_size()
            if max_pixels:
                fit = POINTS_PER_INCH * math.sqrt(max_pixels / max(width_pt * height_pt, 1e-6))
                dpi = min(dpi, fit)
            return RenderedPage(_draw(page, dpi / POINTS_PER_INCH, timeout_s), dpi)
        finally:
            page.close()
    finally:
        document.close()


def _draw(page, scale: float, timeout_s: float) -> np.ndarray:
    """The page drawn progressively at ``scale`` pixels per point, as RGB."""
    import pypdfium2.raw as raw

    width_pt, height_pt = page.get_size()          # as displayed: the page's /Rotate applied
    width, height = max(1, round(width_pt * scale)), max(1, round(height_pt * scale))
    bitmap = raw.FPDFBitmap_CreateEx(width, height, raw.FPDFBitmap_BGR, None, 0)
    if not bitmap:
        raise PdfTooComplexError(f"cannot allocate a {width}x{height} page")
    deadline = time.monotonic() + timeout_s
    pause = raw.IFSDK_PAUSE(version=1)
    pause.NeedToPauseNow = type(pause.NeedToPauseNow)(lambda _: time.monotonic() > deadline)
    try:
        raw.FPDFBitmap_FillRect(bitmap, 0, 0, width, height, 0xFFFFFFFF)
        # PDFium counts the page's own /Rotate in quarter turns: 0 here keeps it.
        status = raw.FPDF_RenderPageBitmap_Start(bitmap, page.raw, 0, 0, width, height, 0,
                                                 raw.FPDF_ANNOT, ctypes.byref(pause))
        while status == raw.FPDF_RENDER_TOBECONTINUED:
            if time.monotonic() > deadline:
                raise PdfTooComplexError(
                    f"the page did not render within {timeout_s:g} s (too many objects)")
            status = raw.FPDF_RenderPage_Continue(page.raw, ctypes.byref(pause))
        if status == raw.FPDF_RENDER_FAILED:
            raise PdfDecodeError("PDFium could not render the page")
        stride = raw.FPDFBitmap_GetStride(bitmap)
        buffer = ctypes.cast(raw.FPDFBitmap_GetBuffer(bitmap),
                             ctypes.POINTER(ctypes.c_uint8 * (stride * height))).contents
        bgr = np.frombuffer(buffer, np.uint8).reshape(height, stride)[:, :width * 3]
        return np.ascontiguousarray(bgr.reshape(height, width, 3)[:, :, ::-1])
    finally:
        raw.FPDF_RenderPage_Close(page.raw)
        raw.FPDFBitmap_Destroy(bitmap)
