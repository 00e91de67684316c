"""The searchable PDF's text layer (ocr_api.formats.text_layer, ocr_api.formats.glyphless_font),
read back by independent readers: FreeType (through Pillow) loads the font; poppler (pdftotext,
pdffonts, pdftoppm) and PDFium (pypdfium2) find every word where it was put, and paint
nothing."""

import io
import math
import shutil
import subprocess

import numpy as np
import pikepdf
import pypdfium2 as pdfium
import pytest
from PIL import Image, ImageFont

from ocr_api.formats import glyphless_font, text_layer
from tests.helpers import pdftotext, pdftotext_words

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
    words = {w["text"]: w for w in pdftotext_words(pdf, tmp_path, "-l", "1")}
    hello = words["Hello"]                            # pixels (100, 100)-(300, 150)
    assert (hello["xMin"], hello["yMin"], hello["xMax"], hello["yMax"]) == \
        pytest.approx((36, 36, 108, 54), abs=0.5)
    # The turned word: its top edge (x 800 px = 288 pt) on the right, running down the page.
    sideways = words["Sideways"]                      # pixels (750, 100)-(800, 400)
    assert (sideways["xMax"], sideways["yMin"], sideways["yMax"]) == \
        pytest.approx((288, 36, 144), abs=0.5)


def one_page(lines: list[list[tuple[str, list]]], width=1200, height=800) -> bytes:
    """The text layer of one page at 72 dpi (points = pixels) with these lines of words."""
    boxes = [{"text": text, "points": points} for line in lines for text, points in line]
    starts = [sum(len(line) for line in lines[:n]) for n in range(len(lines))]
    page = {"width": width, "height": height, "boxes": boxes,
            "lines": [{"boxes": list(range(start, start + len(line)))}
                      for start, line in zip(starts, lines)]}
    with text_layer.text_pdf([page], [72.0]) as document:
        out = io.BytesIO()
        document.save(out)
        return out.getvalue()


def rectangle(x0: float, y0: float, x1: float, y1: float) -> list:
    return [[x0, y0], [x1, y0], [x1, y1], [x0, y1]]


def tilted(words: list[str], x: float, y: float, height: float, degrees: float) -> list:
    """A line of words whose boxes rise ``degrees`` to the right (as a photo of a page held
    askew gives them), each 0.55 of the height wide per character."""
    a = math.radians(degrees)
    along, down = (math.cos(a), -math.sin(a)), (math.sin(a), math.cos(a))
    line = []
    for word in words:
        length = 0.55 * height * len(word)
        top_left = (x, y)
        top_right = (x + length * along[0], y + length * along[1])
        line.append((word, [list(top_left), list(top_right),
                            [top_right[0] + height * down[0], top_right[1] + height * down[1]],
                            [x + height * down[0], y + height * down[1]]]))
        x, y = x + (length + 0.35 * height) * along[0], y + (length + 0.35 * height) * along[1]
    return line


@pytest.mark.parametrize("degrees", [-6, -2, 2, 4, 6])
def test_a_tilted_line_reads_as_its_words_in_order(tmp_path, degrees):
    words = "The quick brown fox jumps over the lazy dog".split()
    layer = one_page([tilted(words, 100, 300, 30, degrees)])
    assert pdftotext(layer, tmp_path).split() == words
    assert pdfium.PdfDocument(layer)[0].get_textpage().get_text_range() == " ".join(words)


def tilted_cells(cells: list[tuple[str, float]], y: float, height: float, degrees: float
                 ) -> list:
    """A table row whose cells (``(text, start along the row)``) rise ``degrees`` to the right
    from ``(0, y)``, each 0.55 of the height wide per character."""
    a = math.radians(degrees)
    along, down = (math.cos(a), -math.sin(a)), (math.sin(a), math.cos(a))
    return [tilted([text], start * along[0], y + start * along[1], height, degrees)[0]
            for text, start in cells]


@pytest.mark.parametrize("degrees", [-4, 5])
def test_a_tilted_tables_rows_come_out_of_pdftotext_layout_in_order(tmp_path, degrees):
    """Rows 45 px apart rise or fall by 80 px across the page: each row's cells still share
    one baseline, and the rows keep their order (``-layout`` reads by baselines)."""
    rows = [[("Description", 80), ("Qty", 700), ("Price", 900), ("Amount", 1100)]] + [
        [(f"Item{k}", 80), (str(k), 700), (f"{k}.50", 900), (f"{3 * k}.00", 1100)]
        for k in range(1, 6)]
    lines = [tilted_cells(row, 200 + 45 * number, 30, degrees) for number, row in enumerate(rows)]
    layer = one_page(lines, width=1400, height=700)
    got = [line.split() for line in pdftotext(layer, tmp_path, "-layout").splitlines()
           if line.strip()]
    assert got == [[text for text, _ in row] for row in rows]


def test_close_words_are_copied_apart(tmp_path):
    """Boxes 2 px apart: each word but a line's last is followed by a space."""
    layer = one_page([[("Hello", rectangle(100, 100, 300, 150)),
                       ("world", rectangle(302, 100, 502, 150)),
                       ("again", rectangle(504, 100, 704, 150))]])
    assert pdftotext(layer, tmp_path).strip() == "Hello world again"
    assert pdfium.PdfDocument(layer)[0].get_textpage().get_text_range() == "Hello world again"


@pytest.mark.parametrize("overlap", [0, 5])
def test_lines_whose_boxes_touch_stay_lines(tmp_path, overlap):
    """Boxes 50 px tall, the lines 50 - overlap px apart (CRAFT pads its boxes)."""
    tops = [100 + k * (50 - overlap) for k in range(4)]
    lines = [[(f"L{k}a", rectangle(100, y, 200, y + 50)),
              (f"L{k}b", rectangle(220, y, 320, y + 50))] for k, y in enumerate(tops)]
    layer = one_page(lines)
    expected = ["L0a L0b", "L1a L1b", "L2a L2b", "L3a L3b"]
    assert pdfium.PdfDocument(layer)[0].get_textpage().get_text_range().split("\r\n") == expected
    assert pdftotext(layer, tmp_path).split("\n")[:4] == expected


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
    # 65535 characters and the space between words: one more than 2-byte codes from 1 hold.
    page = {**PAGE, "boxes": [{"text": "".join(map(chr, range(0x20000, 0x2FFFF))),
                               "points": PAGE["boxes"][0]["points"]}], "lines": [{"boxes": [0]}]}
    with pytest.raises(ValueError, match="65536 distinct characters"):
        text_layer.text_pdf([page], [DPI])


def test_a_lines_words_each_sit_on_their_own_box(tmp_path):
    """One box for the whole line (the LinkRefiner's), its words each on their own box."""
    line = rectangle(100, 100, 700, 150)
    page = {"width": 1200, "height": 800,
            "boxes": [{"text": "Hello brave world", "points": line}],
            "lines": [{"boxes": [0], "text": "Hello brave world", "words": [
                {"text": "Hello", "points": rectangle(100, 105, 250, 145)},
                {"text": "brave", "points": rectangle(300, 102, 450, 148)},
                {"text": "world", "points": rectangle(520, 104, 700, 146)}]}]}
    with text_layer.text_pdf([page], [72.0]) as document:
        out = io.BytesIO()
        document.save(out)
    found = pdftotext_words(out.getvalue(), tmp_path)
    assert [w["text"] for w in found] == ["Hello", "brave", "world"]
    assert [v for w in found for v in (w["xMin"], w["xMax"])] == pytest.approx(
        [100, 250, 300, 450, 520, 700], abs=1.0)
