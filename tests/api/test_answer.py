"""The one answer builder (ocr_api.answer), without Triton: an image's page at the top level, a
document's pages in order, and the pages and dpis the output formats read."""

import numpy as np
import pytest

from ocr_api.answer import Answer, build_answer, rendered_dpi
from ocr_api.intake.documents import Document
from ocr_inference.client import OcrResult, Words


def result(width=200, height=100, texts=("Hello", "world"), version="1") -> OcrResult:
    """Two boxes on one line, one paragraph."""
    boxes = np.array([[[10, 10], [60, 10], [60, 30], [10, 30]],
                      [[70, 12], [120, 12], [120, 31], [70, 31]]], np.float32)
    return OcrResult(boxes=boxes, scores=np.array([0.91234, 0.8], np.float32), width=width,
                     height=height, model_name="ensemble_ocr", model_version=version,
                     inference_ms=5.0, texts=list(texts),
                     text_scores=np.array([0.99, 0.5], np.float32), text=" ".join(texts),
                     reading_order=np.array([0, 1], np.int32),
                     line_of_box=np.array([0, 0], np.int32),
                     line_boxes=np.array([[[10, 10], [120, 10], [120, 31], [10, 31]]],
                                         np.float32),
                     paragraph_of_line=np.array([0], np.int32),
                     words=Words(boxes[:, [0, 1, 2, 3]] + np.float32(0.5), list(texts),
                                 np.array([0.875, 0.5], np.float32), np.array([0, 1], np.int32)))


def test_an_image_answers_its_page_at_the_top_level():
    answer = build_answer(Document("PNG", 1, b"", 200, 100), [result()], recognized=True)
    body = answer.body()
    assert list(body) == ["model", "image", "text", "boxes", "lines", "paragraphs"]
    assert body["model"] == {"name": "ensemble_ocr", "version": "1"}
    assert body["image"] == {"width": 200, "height": 100, "format": "PNG", "angle": 0}
    assert body["boxes"][0] == {"points": [[10.0, 10.0], [60.0, 10.0], [60.0, 30.0],
                                           [10.0, 30.0]],
                                "score": 0.9123, "text": "Hello", "text_score": 0.99}
    assert body["lines"] == [{"points": [[10.0, 10.0], [120.0, 10.0], [120.0, 31.0],
                                         [10.0, 31.0]], "boxes": [0, 1],
                              "text": "Hello world", "confidence": 0.6875, "words": [
        {"points": [[10.5, 10.5], [60.5, 10.5], [60.5, 30.5], [10.5, 30.5]], "text": "Hello",
         "confidence": 0.875, "box": 0},
        {"points": [[70.5, 12.5], [120.5, 12.5], [120.5, 31.5], [70.5, 31.5]], "text": "world",
         "confidence": 0.5, "box": 1}]}]
    assert body["paragraphs"][0]["lines"] == [0]
    assert body["paragraphs"][0]["confidence"] == 0.6875
    # The formats read the page as it was built, never the flattened body.
    assert answer.pages[0]["page"] == 1 and answer.pages[0]["width"] == 200
    assert (answer.text, answer.dpis) == ("Hello world", [None])


def test_a_document_answers_its_pages_and_the_whole_text():
    document = Document("PDF", 2, b"", pages=(b"1", b"2"),
                        page_points=((72.0, 36.0), (144.0, 72.0)))
    answer = build_answer(document, [result(200, 100), result(400, 200, ("a", "b"), "2")],
                          recognized=True)
    body = answer.body()
    assert list(body) == ["model", "document", "text", "pages"]
    assert body["document"] == {"format": "PDF", "pages": 2}
    assert body["text"] == "Hello world\fa b"
    assert [page["page"] for page in body["pages"]] == [1, 2]
    assert "model" not in body["pages"][0]                # the answer's model
    assert body["pages"][1]["model"] == {"name": "ensemble_ocr", "version": "2"}
    assert answer.dpis == [200.0, 200.0] == [rendered_dpi(200, 72.0), rendered_dpi(400, 144.0)]


def test_without_recognition_there_is_no_text():
    answer = build_answer(Document("TIFF", 2, b""), [result(), result()], recognized=False)
    body = answer.body()
    assert "text" not in body and answer.text is None
    assert all("text" not in box for page in body["pages"] for box in page["boxes"])
    assert all("words" not in line and "confidence" not in line
               for page in body["pages"] for line in page["lines"])
    assert answer.dpis == [None, None]


def test_an_answer_needs_one_result_per_page():
    with pytest.raises(ValueError):
        build_answer(Document("PDF", 2, b""), [result()], recognized=True)
    assert isinstance(build_answer(Document("PNG", 1, b""), [result()], True), Answer)


def test_characters_go_inside_their_words_when_asked_for():
    read = result()
    letters = Words(np.repeat(read.words.boxes[:1], 5, axis=0), list("Hello"),
                    np.array([0.9, 0.875, 0.9, 0.9, 0.95], np.float32),
                    np.zeros(5, np.int32))
    with_characters = OcrResult(**{**vars(read), "characters": letters})
    [line] = build_answer(Document("PNG", 1, b""), [with_characters], True).body()["lines"]
    hello, world = line["words"]
    assert [(c["text"], c["confidence"]) for c in hello["characters"]] == \
        [("H", 0.9), ("e", 0.875), ("l", 0.9), ("l", 0.9), ("o", 0.95)]
    assert world["characters"] == []
    [line] = build_answer(Document("PNG", 1, b""), [read], True).body()["lines"]
    assert all("characters" not in word for word in line["words"])
