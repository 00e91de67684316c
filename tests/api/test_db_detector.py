"""The light pipeline (``detector=db``, ensemble_ocr_db) through POST /api/ocr and a real
embedded Triton: the text it reads, each word on its own box, a turned page detected again by
DB (recognize's BLS chain is the one that found the boxes), every format, a job's pages. What
it reads is scored against the words the images show (recognition/text_gt.json), not against
CRAFT: bars a little under CRAFT's own (tests/api/test_recognition.py), as
bench/results/detectors-example.md measured."""

import io

import numpy as np
import pytest

from ocr_pipeline.evaluation import polygon
from ocr_pipeline.imaging import turned_png
from ocr_pipeline.text_evaluation import load_text_truth, score_text

from tests.helpers import DATA, IMAGES, KOREAN_TEXT, pdftotext

pytestmark = [pytest.mark.django_db, pytest.mark.triton]
TRUTH = {truth.image: truth for truth in load_text_truth(DATA / "recognition" / "text_gt.json")}


def read(client, data: bytes, query: str = "", **params) -> dict:
    response = client.post(f"/api/ocr?detector=db{query}",
                           {"image": io.BytesIO(data), **params}, format="multipart")
    assert response.status_code == 200, response.json()
    return response.json()


@pytest.fixture(scope="module")
def answers(django_db_blocker):
    """Answers by image name and angle (filled by the first test that asks)."""
    return {}


def answer(api_client, answers: dict, name: str, angle: int = 0) -> dict:
    if (name, angle) not in answers:
        answers[(name, angle)] = read(api_client, turned_png((IMAGES / name).read_bytes(), angle))
    return answers[(name, angle)]


def test_db_reads_the_photos_words(api_client, live_triton, answers):
    english = answer(api_client, answers, "english.png")
    assert english["model"] == {"name": "ensemble_ocr_db", "version": "1"}
    score = score_text(english["text"], TRUTH["english.png"].words)
    assert (score.precision, score.recall) >= (0.95, 0.95), english["text"]
    assert english["text"].splitlines()[0] == "Reduce your risk of coronavirus infection:"
    korean = answer(api_client, answers, "korean.png", 0)
    # The Latin lines as CRAFT reads them; the Hangul words by Tesseract where PP-OCR is unsure.
    assert korean["text"].splitlines()[1:] == KOREAN_TEXT.splitlines()[1:]


def test_every_word_lies_on_its_own_box_inside_its_line(api_client, live_triton, answers):
    body = answer(api_client, answers, "english.png")
    words = [word for line in body["lines"] for word in line["words"]]
    assert len(words) == len(body["text"].split())
    for line in body["lines"]:
        outline = polygon(line["points"]).buffer(2.0)
        for word in line["words"]:
            assert outline.contains(polygon(word["points"])), (word, line["points"])
            assert word["text"] in line["text"]


@pytest.mark.parametrize("angle", [90, 270])
def test_a_turned_page_is_detected_again_by_db_and_reads_as_upright(api_client, live_triton,
                                                                    answers, angle):
    upright = answer(api_client, answers, "english.png", 0)
    turned = answer(api_client, answers, "english.png", angle)
    assert turned["image"]["angle"] == angle
    assert turned["text"] == upright["text"]
    assert turned["model"]["name"] == "ensemble_ocr_db"


def test_every_format_of_a_db_answer(api_client, live_triton, answers, tmp_path):
    data = (IMAGES / "english.png").read_bytes()
    body = answer(api_client, answers, "english.png")
    text = api_client.post("/api/ocr?detector=db&format=text", {"image": io.BytesIO(data)},
                           format="multipart")
    assert text.status_code == 200 and text.content.decode().strip() == body["text"]
    hocr = api_client.post("/api/ocr?detector=db&format=hocr", {"image": io.BytesIO(data)},
                           format="multipart").content.decode()
    assert hocr.count('class="ocrx_word"') == len(body["text"].split())
    pdf = api_client.post("/api/ocr?detector=db&format=pdf", {"image": io.BytesIO(data)},
                          format="multipart").content
    assert pdftotext(pdf, tmp_path).split() == body["text"].split()


def test_db_answers_no_box_where_there_is_no_text(api_client, live_triton):
    blank = io.BytesIO()
    from PIL import Image

    Image.fromarray(np.full((480, 640, 3), 255, np.uint8)).save(blank, "PNG")
    body = read(api_client, blank.getvalue())
    assert (body["boxes"], body["text"]) == ([], "")
