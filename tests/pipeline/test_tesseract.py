"""Tesseract through its library API (ocr_pipeline.tesseract), on real crops of korean.png."""

import json

import numpy as np
import pytest

from ocr_contract.languages import tessdata_dir
from ocr_pipeline import imaging, recognition, tesseract
from tests.helpers import DATA, IMAGES


@pytest.fixture(scope="module")
def reader():
    reader = tesseract.TesseractReader(tessdata_dir())
    yield reader
    reader.close()


def korean_lines() -> list[np.ndarray]:
    image = np.asarray(imaging.decode_image((IMAGES / "korean.png").read_bytes()))
    boxes = json.loads((DATA / "reference" / "craft_boxes_1280.json").read_text())["korean.png"]
    height, width = image.shape[:2]
    return [tesseract.line_image(recognition.crop_box(
        image, recognition.expand_box(np.array(box, np.float32), width, height,
                                      tesseract.CROP_MARGIN)))
            for box in boxes["boxes"]]


def test_korean_and_latin_lines_read_exactly(reader):
    readings = reader.read(korean_lines(), "kor+eng")
    assert [r.text for r in readings] == ["서울", "평양", "Seoul", "Pyeongyang", "56Km", "205Km"]
    assert all(0.5 < r.score <= 1.0 for r in readings)


def test_one_engine_per_language_combination_is_kept(reader):
    lines = korean_lines()[:1]
    reader.read(lines, "kor+eng")
    reader.read(lines, "kor+eng")
    assert reader.started == ["kor+eng"]
    assert {"eng", "kor", "tha", "hin", "rus"} <= reader.available()


def test_line_images_are_gray_and_64_pixels_high():
    line = tesseract.line_image(np.zeros((20, 100, 3), np.uint8))
    assert line.shape == (64, 320) and line.dtype == np.uint8
