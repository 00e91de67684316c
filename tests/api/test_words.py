"""Words: every line's words with their own boxes, text and confidence (POST /api/ocr through
the real embedded Triton), in JSON, hOCR and the searchable PDF; characters on request."""

import io
import json
import math
import xml.etree.ElementTree as ET

import pytest

from ocr_pipeline.evaluation import iou, polygon
from ocr_pipeline.word_evaluation import score_words
from tests.helpers import DATA, IMAGES, pdftotext_words
from tests.image_factory import encode, letter_page

pytestmark = [pytest.mark.django_db, pytest.mark.triton]
#: The drawn letter's skew per angle, degrees: a page is never quite straight.
SKEW = {0: 2.0, 90: -2.0, 180: 1.5, 270: -1.5}


def post(client, data: bytes, output: str = "json", **params):
    """POST /api/ocr with ``params`` as form fields, answered in ``output`` (``?format=``)."""
    response = client.post(f"/api/ocr?format={output}", {"image": io.BytesIO(data), **params},
                           format="multipart")
    assert response.status_code == 200, response.content[:500]
    return response


def words_of(body: dict) -> list[dict]:
    return [word for line in body["lines"] for word in line["words"]]


@pytest.fixture(scope="module", params=[0, 90, 180, 270])
def letter(request):
    """The drawn letter turned ``angle`` (skewed a little), with its known words; a PNG that
    says 72 dpi, so that a pixel is a point in the searchable PDF. Each test asks at long side
    640 (the same request again is answered from Triton's response cache)."""
    angle = request.param
    image, truth = letter_page(angle=angle, skew=SKEW[angle])
    return angle, encode(image, dpi=(72, 72)), truth


def test_drawn_letter_answers_its_words_at_every_angle(letter, api_client, live_triton):
    angle, data, truth = letter
    body = post(api_client, data, long_side=640).json()
    assert body["image"]["angle"] == angle
    answered = [(word["text"], word["points"]) for word in words_of(body)]
    score = score_words(answered, truth)
    assert score.rate >= 0.95, (score, answered)
    # The text is the letter's; lines keep their boxes and text, and their words split it.
    assert body["text"].split() == [text for text, _ in truth]
    for line in body["lines"]:
        assert [w["text"] for w in line["words"]] == line["text"].split()
        assert {w["box"] for w in line["words"]} <= set(line["boxes"])
        assert 0 < line["confidence"] <= 1
    # The first word, to the pixel: its ink box, clockwise from its own top-left.
    first = words_of(body)[0]
    assert first["text"] == truth[0][0] == "Dear"
    assert iou(polygon(first["points"]), polygon(truth[0][1])) >= 0.75
    for got, expected in zip(first["points"], truth[0][1]):
        assert got == pytest.approx(expected, abs=4.0)
    assert all(0 < word["confidence"] <= 1 for word in words_of(body))
    for paragraph in body["paragraphs"]:
        assert 0 < paragraph["confidence"] <= 1


def test_hocr_words_are_the_answers_words(letter, api_client, live_triton):
    angle, data, truth = letter
    body = post(api_client, data, long_side=640).json()
    hocr = post(api_client, data, long_side=640, output="hocr").content
    ns = "{http://www.w3.org/1999/xhtml}"
    lines = ET.fromstring(hocr).findall(f".//{ns}span[@class='ocr_line']")
    assert len(lines) == len(body["lines"])
    for element, line in zip(lines, body["lines"]):
        words = element.findall(f"./{ns}span[@class='ocrx_word']")
        assert [w.text for w in words] == [w["text"] for w in line["words"]]
        for word, answered in zip(words, line["words"]):
            xs = [p[0] for p in answered["points"]]
            ys = [p[1] for p in answered["points"]]
            assert word.get("title") == (
                f"bbox {round(min(xs))} {round(min(ys))} {round(max(xs))} {round(max(ys))}; "
                f"x_wconf {round(100 * answered['confidence'])}")


def test_searchable_pdf_sets_each_word_on_its_own_box(letter, api_client, live_triton,
                                                     tmp_path):
    angle, data, truth = letter
    body = post(api_client, data, long_side=640).json()
    pdf = post(api_client, data, long_side=640, output="pdf").content
    found = pdftotext_words(pdf, tmp_path)
    answered = words_of(body)
    assert sorted(w["text"] for w in found) == sorted(w["text"] for w in answered)
    # Each word found where its own box is: the same extent along the line, and across it
    # no further off than the page's tilt over half its width (a line's words share one
    # baseline and size, measured where the line crosses the page's middle, so that readers
    # keep them a line and a tilted page's lines in order: ocr_api.formats.text_layer).
    axis = 0 if angle in (0, 180) else 1
    page = body["image"]["width"] if axis == 0 else body["image"]["height"]
    off = page / 2 * math.tan(math.radians(abs(SKEW[angle])))
    unplaced = list(answered)
    for word in found:
        box = (word["xMin"], word["yMin"], word["xMax"], word["yMax"])
        along = [w for w in unplaced if w["text"] == word["text"]
                 and (box[axis], box[axis + 2]) == pytest.approx(
                     (min(p[axis] for p in w["points"]), max(p[axis] for p in w["points"])),
                     abs=1.5)]
        assert along, (word, angle)
        centre = sum(p[1 - axis] for p in along[0]["points"]) / 4
        assert abs((box[1 - axis] + box[3 - axis]) / 2 - centre) <= off + 2, (word, angle)
        unplaced.remove(along[0])
    assert not unplaced


def test_characters_on_request(api_client, live_triton):
    image, truth = letter_page(angle=0)
    plain = post(api_client, encode(image), long_side=640).json()
    assert "characters" not in words_of(plain)[0]
    body = post(api_client, encode(image), long_side=640, detail="characters").json()
    for word in words_of(body):
        assert "".join(c["text"] for c in word["characters"]) == word["text"]
        assert word["confidence"] == min(c["confidence"] for c in word["characters"])
        area = polygon(word["points"]).buffer(1.5)
        assert all(area.contains(polygon(c["points"])) for c in word["characters"])
    dear = words_of(body)[0]
    assert [c["text"] for c in dear["characters"]] == ["D", "e", "a", "r"]
    lefts = [min(p[0] for p in c["points"]) for c in dear["characters"]]
    assert lefts == sorted(lefts)                        # left to right, one after another
    # The same words as without characters.
    assert [(w["text"], w["points"]) for w in words_of(plain)] == \
        [(w["text"], w["points"]) for w in words_of(body)]


def test_detail_is_validated(api_client, live_triton):
    response = api_client.post("/api/ocr?detail=letters",
                               {"image": io.BytesIO(encode(letter_page()[0]))},
                               format="multipart")
    assert response.status_code == 400
    assert response.json()["error"]["field"] == "detail"


def test_a_tesseract_line_takes_tesseracts_word_boxes(api_client, live_triton):
    body = post(api_client, (IMAGES / "korean.png").read_bytes(), language="ko",
                long_side=640, detail="characters").json()
    words = words_of(body)
    assert [w["text"] for w in words] == ["서울", "평양", "Seoul", "Pyeongyang", "56Km", "205Km"]
    for word in words:
        box = polygon(body["boxes"][word["box"]]["points"])
        assert box.buffer(2).contains(polygon(word["points"]))
        assert 0.5 < word["confidence"] <= 1
    seoul = words[0]
    for got, expected in zip(seoul["points"], [[145.5, 90.8], [278.5, 99.3], [274.0, 169.4],
                                               [141.0, 160.8]]):
        assert got == pytest.approx(expected, abs=3.0)
    assert [c["text"] for c in seoul["characters"]] == ["서", "울"]


def test_a_real_page_answers_its_lines_words_in_order_each_inside_its_line(api_client,
                                                                            live_triton):
    body = post(api_client, (IMAGES / "english.png").read_bytes(), long_side=640).json()
    first = body["lines"][0]
    assert [w["text"] for w in first["words"]] == \
        ["Reduce", "your", "risk", "of", "coronavirus", "infection:"]
    for line in body["lines"]:
        area = polygon(line["points"]).buffer(2)
        shapes = [polygon(w["points"]) for w in line["words"]]
        assert all(area.contains(shape) for shape in shapes)
        lefts = [shape.bounds[0] for shape in shapes]
        assert lefts == sorted(lefts)
        assert all(a.intersection(b).area < 0.05 * min(a.area, b.area)
                   for a, b in zip(shapes, shapes[1:]))


@pytest.mark.quality
def test_icdar_words_are_answered_on_their_ground_truth_boxes(api_client, live_triton):
    """Every single-word ICDAR 2015 polygon of recognition/text_gt.json has an answered word on
    it (IoU >= 0.5, at the defaults); those read right have its text. (The misread ones are
    the recognizer's: "fusionopolis" read "furionopolis" and "fuionopo", "I2R" "IR",
    "[02-03]" "[82-03]", on the right boxes.)"""
    truth = json.loads((DATA / "recognition" / "text_gt.json").read_text())["images"]
    placed, read = [], []
    for name, entry in truth.items():
        labelled = [w for w in entry["words"] if "polygon" in w and " " not in w["text"]]
        if not labelled:
            continue
        body = post(api_client, (IMAGES / name).read_bytes()).json()
        for word in labelled:
            flat = word["polygon"]
            known = polygon([flat[i:i + 2] for i in range(0, 8, 2)])
            overlaps = [(iou(polygon(w["points"]), known), w["text"]) for w in words_of(body)]
            best, text = max(overlaps)
            placed.append(best >= 0.5)
            if text == word["text"]:
                read.append(text)
    assert all(placed) and len(placed) == 7, placed
    assert sorted(read) == ["Carpark", "EXIT", "[06]"]
