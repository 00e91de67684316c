"""The searchable PDF's text layer (ocr_api.text_layer, ocr_api.glyphless_font), read back by
independent readers: FreeType (through Pillow) loads the font; poppler (pdftotext, pdffonts,
pdftoppm) and PDFium (pypdfium2) find every word where it was put, and paint nothing."""

import io
import shutil
import subprocess
import xml.etree.ElementTree as ET

import numpy as np
import pikepdf
import pypdfium2 as pdfium
import pytest
from PIL import Image, ImageFont

from ocr_api import glyphless_font, text_layer
from tests.helpers import pdftotext

DPI = 200.0                      # 0.36 points per pixel
#: A 1000 x 500 px page: Latin with a diacritic, Chinese, Korean, a character outside the BMP,
#: a word running down the page (turned 90 degrees clockwise: its first two points run down),
#: and a box with no text (recognize=false).
PAGE = {"width": 1000, "height": 500, "boxes": [
    {"text": "Hello", "points": [[100, 100], [300, 100], [300, 150], [100, 150]]},
    {"text": "wörld", "points": [[320, 100], [500, 100], [500, 150], [320, 150]]},
    {"text": "我是中国人", "points": [[100, 200], [400, 200], [400, 250], [100, 250]]},
    {"text": "사용", "points": [[450, 200], [550, 200], [550, 250], [450, 250]]},
    {"text": "𝔘nicode", "points": [[100, 300], [400, 300], [400, 340], [100, 340]]},
    {"text": "Sideways", "points": [[800, 100], [800, 400], [750, 400], [750, 100]]},
    {"points": [[600, 400], [700, 400], [700, 450], [600, 450]]},
], "lines": [{"boxes": [0, 1]}, {"boxes": [2, 3]}, {"boxes": [4]}, {"boxes": [5]},
             {"boxes": [6]}]}
WORDS = ["Hello", "wörld", "我是中国人", "사용", "𝔘nicode", "Sideways"]


@pytest.fixture(scope="module")
def pdf() -> bytes:
    with text_layer.text_pdf([PAGE, PAGE], [DPI, DPI / 2]) as document:
        out = io.BytesIO()
        document.save(out)
        return out.getvalue()


def poppler_words(pdf: bytes, tmp_path) -> list[dict]:
    """pdftotext -bbox: the first page's words, each with its text and box in points."""
    layout = ET.fromstring(pdftotext(pdf, tmp_path, "-bbox", "-l", "1")
                           .replace("<!DOCTYPE html>", ""))
    return [{"text": w.text, **{k: float(w.get(k)) for k in ("xMin", "yMin", "xMax", "yMax")}}
            for w in layout.iter("{http://www.w3.org/1999/xhtml}word")]


def test_freetype_loads_the_font_with_its_name_and_advance():
    font = ImageFont.truetype(io.BytesIO(glyphless_font.font_bytes()), 20)
    assert font.getname() == ("GlyphLessFont", "Regular")
    assert font.getlength("abc") == 30.0             # 3 x 500/1000 of 20 px
    assert len(glyphless_font.font_bytes()) < 1024


def test_pages_are_sized_from_pixels_and_dpi(pdf):
    document = pdfium.PdfDocument(pdf)
    assert [document[i].get_size() for i in range(len(document))] == [(360, 180), (720, 360)]


def test_poppler_finds_every_word_of_every_script_on_each_page(pdf, tmp_path):
    pages = pdftotext(pdf, tmp_path).split("\f")
    assert [sorted(page.split()) for page in pages[:2]] == [sorted(WORDS)] * 2


def test_pdfium_finds_every_word_in_reading_order(pdf):
    page = pdfium.PdfDocument(pdf)[0]
    assert page.get_textpage().get_text_range().split() == WORDS


def test_a_word_sits_on_its_box(pdf, tmp_path):
    words = {w["text"]: w for w in poppler_words(pdf, tmp_path)}
    hello = words["Hello"]                            # pixels (100, 100)-(300, 150)
    assert (hello["xMin"], hello["yMin"], hello["xMax"]) == pytest.approx((36, 36, 108), abs=0.5)
    # The turned word: its top edge (x 800 px = 288 pt) on the right, running down the page.
    sideways = words["Sideways"]                      # pixels (750, 100)-(800, 400)
    assert (sideways["xMax"], sideways["yMin"], sideways["yMax"]) == \
        pytest.approx((288, 36, 144), abs=0.5)


def test_the_font_is_embedded_and_maps_back_to_unicode(pdf, tmp_path):
    assert shutil.which("pdffonts"), "pdffonts is missing: apt-get install poppler-utils"
    path = tmp_path / "layer.pdf"
    path.write_bytes(pdf)
    listed = subprocess.run(["pdffonts", str(path)], check=True, capture_output=True,
                            text=True).stdout.splitlines()[2:]
    assert [line.split() for line in listed] == [
        ["GlyphLessFont", "CID", "TrueType", "Identity-H", "yes", "no", "yes",
         *listed[0].split()[-2:]]]                   # embedded, not subset, ToUnicode


def test_nothing_is_painted(pdf, tmp_path):
    assert np.asarray(pdfium.PdfDocument(pdf)[0].render(scale=1).to_pil().convert("L")).min() \
        == 255
    path = tmp_path / "layer.pdf"
    path.write_bytes(pdf)
    subprocess.run(["pdftoppm", "-r", "72", "-gray", "-png", "-f", "1", "-l", "1", str(path),
                    str(tmp_path / "page")], check=True)
    assert np.asarray(Image.open(next(tmp_path.glob("page*.png")))).min() == 255


def test_boxes_without_text_give_an_empty_page(tmp_path):
    unread = {**PAGE, "boxes": [{"points": box["points"]} for box in PAGE["boxes"]]}
    with text_layer.text_pdf([unread], [DPI]) as document:
        assert [str(operation.operator)
                for operation in pikepdf.parse_content_stream(document.pages[0])] == \
            ["q", "Tr", "Q"]                          # render mode set, no text object
        out = io.BytesIO()
        document.save(out)
    assert pdftotext(out.getvalue(), tmp_path).strip() == ""


def test_more_distinct_characters_than_two_byte_codes_is_refused():
    page = {**PAGE, "boxes": [{"text": "".join(map(chr, range(0x20000, 0x30000))),
                               "points": PAGE["boxes"][0]["points"]}], "lines": [{"boxes": [0]}]}
    with pytest.raises(ValueError, match="65536 distinct characters"):
        text_layer.text_pdf([page], [DPI])
