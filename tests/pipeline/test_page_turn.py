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


def test_osd_s_unsure_angle_is_not_taken(turner):
    """english.png turned 90 (nine short lines): OSD says 270 at a confidence near 0, under
    MIN_OSD_CONFIDENCE, so the page is left for recognize's vote (tests/api/test_orientation
    reads it)."""
    pixels = turned(image("english.png"), 90)
    assert page_turn.lines_run_vertically(pixels)
    angle, confidence = turner.osd(pixels)
    assert angle == 270 and confidence < page_turn.MIN_OSD_CONFIDENCE
    assert turner.angle(pixels) == 0


def test_a_dense_page_s_osd_confidence_is_far_above_the_bar(turner, linn):
    angle, confidence = turner.osd(turned(linn, 90))
    assert angle == 90 and confidence > 20 * page_turn.MIN_OSD_CONFIDENCE


def test_a_sliver_whose_marks_run_down_it_is_left_as_it_is(turner):
    """An 8 x 36,000 strip of dashes (within the pixel limits): its marks' neighbours all lie
    above and below, and OSD, asked at 2,200 pixels high, gets it at least 1 pixel wide."""
    strip = np.full((36000, 8, 3), 255, np.uint8)
    for top in range(0, 36000, 500):
        strip[top:top + 250, 2:6] = 0
    assert page_turn.vertical_share(strip) == 1.0
    assert turner.angle(strip) == 0
