"""A turned page found before detection (ocr_pipeline.page_turn), on the tests' own pages: none
of them was among the images its constants were chosen on (tests/data/calibration and
validation; python -m bench.page_turn prints both sets)."""

import numpy as np
import pypdfium2 as pdfium
import pytest
from PIL import Image

from ocr_contract.languages import tessdata_dir
from ocr_contract.limits import PDF_DPI
from ocr_pipeline import page_turn
from tests.helpers import DATA, IMAGES


@pytest.fixture(scope="module")
def turner():
    turner = page_turn.PageTurn(tessdata_dir())
    yield turner
    turner.close()


@pytest.fixture(scope="module")
def linn() -> np.ndarray:
    """linn.pdf's page as the gateway renders it (200 dpi, 1700 x 2200)."""
    page = pdfium.PdfDocument(DATA / "documents" / "ocrmypdf_linn.pdf")[0]
    return np.asarray(page.render(scale=PDF_DPI.default / 72).to_pil().convert("RGB"))


def turned(pixels: np.ndarray, angle: int) -> np.ndarray:
    """The page turned ``angle`` degrees clockwise."""
    return np.ascontiguousarray(np.rot90(pixels, k=-angle // 90))


def image(name: str) -> np.ndarray:
    return np.asarray(Image.open(IMAGES / name).convert("RGB"))


def test_a_dense_page_s_neighbours_run_along_its_lines(linn):
    upright, sideways = (page_turn.vertical_share(turned(linn, a)) for a in (0, 90))
    assert upright == pytest.approx(0.14, abs=0.02)
    assert sideways == pytest.approx(1 - upright, abs=0.02)
    assert not page_turn.lines_run_vertically(linn)
    assert page_turn.lines_run_vertically(turned(linn, 90))
    assert page_turn.lines_run_vertically(turned(linn, 270))


@pytest.mark.parametrize("angle", [90, 270])
def test_a_dense_page_turned_either_way_is_found_turned_that_way(turner, linn, angle):
    assert turner.angle(turned(linn, angle)) == angle


@pytest.mark.parametrize("angle", [0, 180])
def test_a_page_whose_lines_run_across_is_left_as_it_is(turner, linn, angle):
    """Upright or upside down, the lines run across: OSD is not asked (recognize's vote finds
    180)."""
    assert turner.angle(turned(linn, angle)) == 0


def test_a_photo_with_little_print_is_left_as_it_is(turner):
    """img_1.jpg (a street scene, a few words): too few character candidates to say."""
    pixels = image("img_1.jpg")
    assert page_turn.vertical_share(pixels) is None
    assert turner.angle(turned(pixels, 90)) == 0


@pytest.mark.parametrize("name", ["idcard.png", "english.png", "example.png"])
def test_upright_cards_and_notices_are_not_turned(turner, name):
    assert page_turn.vertical_share(image(name)) < 0.2
    assert turner.angle(image(name)) == 0


def test_a_card_turned_either_way_is_found_turned_that_way(turner):
    pixels = image("idcard.png")
    assert [turner.angle(turned(pixels, angle)) for angle in (90, 270)] == [90, 270]


def test_osd_may_take_a_short_notice_the_wrong_way(turner):
    """english.png turned 90: OSD says 270 (its confidence there is 0.1). recognize's vote then
    finds the page upside down and detects again; tests/api/test_orientation reads it."""
    assert turner.angle(turned(image("english.png"), 90)) == 270
