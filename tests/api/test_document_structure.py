"""Opening an upload as a document (ocr_api.documents) and the hOCR of an answer
(ocr_api.hocr), without Triton."""

import io
import xml.etree.ElementTree as ET

import pypdfium2 as pdfium
import pytest
from PIL import Image

from ocr_api import documents, errors, hocr
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


def test_hocr_escapes_text_and_nests_pages_paragraphs_lines_and_words():
    answer = {"image": {"width": 100, "height": 50, "format": "PNG"},
              "boxes": [{"points": [[1, 2], [40, 2], [40, 12], [1, 12]], "score": 0.9,
                         "text": "a<b&c", "text_score": 0.876},
                        {"points": [[45, 2], [90, 3], [90, 13], [45, 12]], "score": 0.8,
                         "text": "d", "text_score": 0.5}],
              "lines": [{"points": [[1, 2], [90, 2], [90, 13], [1, 13]], "boxes": [0, 1],
                         "text": "a<b&c d"}],
              "paragraphs": [{"points": [[1, 2], [90, 2], [90, 13], [1, 13]], "lines": [0],
                              "text": "a<b&c d"}]}
    root = ET.fromstring(hocr.render(answer))
    ns = "{http://www.w3.org/1999/xhtml}"
    page = root.find(f".//{ns}div[@class='ocr_page']")
    assert page.get("title") == "bbox 0 0 100 50; ppageno 0"
    line = page.find(f"./{ns}p[@class='ocr_par']/{ns}span[@class='ocr_line']")
    assert line.get("title") == "bbox 1 2 90 13; baseline 0 0; x_size 11"
    words = line.findall(f"./{ns}span[@class='ocrx_word']")
    assert [(w.text, w.get("title")) for w in words] == [
        ("a<b&c", "bbox 1 2 40 12; x_wconf 88"), ("d", "bbox 45 2 90 13; x_wconf 50")]
