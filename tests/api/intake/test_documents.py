"""Opening an upload as a document (ocr_api.intake.documents), without Triton."""

import io

import pypdfium2 as pdfium
import pytest
from PIL import Image

from ocr_api import errors
from ocr_api.intake import documents
from tests.helpers import DATA, IMAGES


def pdf(*sizes, rotation=0) -> bytes:
    document = pdfium.PdfDocument.new()
    for width, height in sizes:
        document.new_page(width, height).set_rotation(rotation)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def test_an_image_is_one_page_answered_as_today():
    document = documents.open_document((IMAGES / "korean.png").read_bytes(), 10)
    assert (document.format, document.page_count, document.width, document.height,
            document.paged) == ("PNG", 1, 629, 420, False)
    assert documents.page_input(document, 0) == (document.data, {})


@pytest.mark.parametrize("fmt, save, dpi", [
    ("PNG", {"dpi": (300, 300)}, 300.0),                 # pHYs, in dots per metre: 299.9994
    ("JPEG", {"dpi": (150, 150)}, 150.0),                # JFIF density in inches
    ("JPEG", {}, None),                                  # JFIF's default 1:1, an aspect ratio
    ("TIFF", {"dpi": (200, 200)}, 200.0),
    ("PNG", {}, None)])
def test_an_images_resolution_is_what_its_header_names(fmt, save, dpi):
    """Read in the parser process with the header (no pixels decoded); the hOCR's scan_res
    and the searchable PDF's page size follow it."""
    out = io.BytesIO()
    Image.new("L", (64, 48), 255).save(out, fmt, **save)
    document = documents.open_document(out.getvalue(), 10)
    assert document.dpi == (pytest.approx(dpi, abs=0.01) if dpi else None)


def test_a_pdf_is_split_into_the_same_single_page_pdfs_every_time():
    data = pdf((595, 842), (842, 595))
    first, again = documents.open_document(data, 10), documents.open_document(data, 10)
    assert (first.format, first.page_count, first.paged) == ("PDF", 2, True)
    assert first.page_points == ((595, 842), (842, 595))
    assert first.pages == again.pages                        # the response cache can answer
    for index, (size, page) in enumerate(zip(first.page_points, first.pages)):
        single = pdfium.PdfDocument(page)
        assert len(single) == 1 and single[0].get_size() == size
        assert documents.page_input(first, index) == (page, {})


def test_a_turned_pdf_page_is_measured_as_displayed():
    assert documents.open_document(pdf((595, 842), rotation=90), 10).page_points == \
        ((842, 595),)


def test_a_multi_page_tiff_sends_the_whole_file_with_the_page():
    frames = [Image.new("RGB", (64, 64), "white")] * 3
    out = io.BytesIO()
    frames[0].save(out, "TIFF", save_all=True, append_images=frames[1:])
    document = documents.open_document(out.getvalue(), 10)
    assert (document.format, document.page_count, document.paged) == ("TIFF", 3, True)
    assert documents.page_input(document, 2) == (document.data, {"PAGE": 2})
    assert documents.page_input(document, 0) == (document.data, {})


@pytest.mark.parametrize("data, error", [
    (pdf(*[(100, 100)] * 11), errors.TooManyPages),
    (pdf(), errors.DocumentEmpty),
    ((DATA / "documents" / "pypdfium2_encrypted.pdf").read_bytes(), errors.DocumentEncrypted),
    (b"%PDF-1.4\n%%EOF\n", errors.DocumentUndecodable),
    (b"GIF89a", errors.ImageUndecodable),
    (b"plain text", errors.UnsupportedImageFormat),
], ids=["11 pages", "no page", "encrypted", "broken", "a bad image", "not a document"])
def test_what_cannot_be_read_is_refused_by_its_code(data, error):
    with pytest.raises(error):
        documents.open_document(data, 10)
