"""PDF pages rendered by PDFium (ocr_pipeline.pdf_pages): size, rotation, the pixel cap, broken
files and the rendering deadline."""

import io

import pypdfium2 as pdfium
import pypdfium2.raw as raw
import pytest

from ocr_pipeline import pdf_pages


def pdf(*sizes, rotation=0, paths=0) -> bytes:
    """A PDF of blank pages of ``sizes`` (points), each turned by ``rotation``, the first
    holding ``paths`` filled squares (drawing objects for the deadline test)."""
    document = pdfium.PdfDocument.new()
    for number, (width, height) in enumerate(sizes):
        page = document.new_page(width, height)
        page.set_rotation(rotation)
        for index in range(paths if number == 0 else 0):
            path = raw.FPDFPageObj_CreateNewPath(index % 500, index // 500)
            raw.FPDFPath_LineTo(path, index % 500 + 1, index // 500)
            raw.FPDFPath_LineTo(path, index % 500 + 1, index // 500 + 1)
            raw.FPDFPath_Close(path)
            raw.FPDFPath_SetDrawMode(path, raw.FPDF_FILLMODE_ALTERNATE, False)
            raw.FPDFPage_InsertObject(page.raw, path)
        if paths and number == 0:
            page.gen_content()
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def test_a_page_is_rendered_at_the_dpi_on_white():
    rendered = pdf_pages.render_page(pdf((612, 792)), 0, 200, None, 10)
    assert rendered.pixels.shape == (2200, 1700, 3) and rendered.dpi == 200
    assert (rendered.pixels == 255).all()


def test_a_turned_page_is_rendered_as_displayed():
    rendered = pdf_pages.render_page(pdf((612, 792), rotation=90), 0, 100, None, 10)
    assert rendered.pixels.shape == (850, 1100, 3)          # landscape, as a viewer shows it


def test_the_dpi_is_lowered_to_fit_the_pixel_cap():
    rendered = pdf_pages.render_page(pdf((2384, 3370)), 0, 200, 40_000_000, 10)   # A0
    height, width = rendered.pixels.shape[:2]
    assert width * height <= 40_000_000 and rendered.dpi == pytest.approx(160.7, abs=0.1)


def test_broken_files_and_missing_pages_are_decode_errors():
    with pytest.raises(pdf_pages.PdfDecodeError, match="cannot open the PDF"):
        pdf_pages.render_page(b"%PDF-1.4\n" + b"\0" * 100, 0, 200, None, 10)
    with pytest.raises(pdf_pages.PdfDecodeError, match="1 pages, no page 2"):
        pdf_pages.render_page(pdf((100, 100)), 1, 200, None, 10)


def test_a_page_that_draws_too_long_is_abandoned():
    heavy = pdf((500, 500), paths=20_000)
    assert pdf_pages.render_page(heavy, 0, 72, None, 60).pixels.shape == (500, 500, 3)
    with pytest.raises(pdf_pages.PdfTooComplexError, match="did not render within"):
        pdf_pages.render_page(heavy, 0, 72, None, 0.000_001)
