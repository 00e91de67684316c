"""The hOCR of an answer (ocr_api.formats.hocr), without Triton."""

import xml.etree.ElementTree as ET

from ocr_api.answer import Answer
from ocr_api.formats import hocr
from ocr_api.intake.documents import Document


def test_hocr_escapes_text_and_nests_pages_paragraphs_lines_and_words():
    read = {"page": 1, "width": 100, "height": 50,
            "boxes": [{"points": [[1, 2], [40, 2], [40, 12], [1, 12]], "score": 0.9,
                       "text": "a<b&c", "text_score": 0.876},
                      {"points": [[45, 2], [90, 3], [90, 13], [45, 12]], "score": 0.8,
                       "text": "d", "text_score": 0.5}],
            "lines": [{"points": [[1, 2], [90, 2], [90, 13], [1, 13]], "boxes": [0, 1],
                       "text": "a<b&c d"}],
            "paragraphs": [{"points": [[1, 2], [90, 2], [90, 13], [1, 13]], "lines": [0],
                            "text": "a<b&c d"}]}
    root = ET.fromstring(hocr.render(Answer(Document("PNG", 1, b""), (read,))))
    ns = "{http://www.w3.org/1999/xhtml}"
    page = root.find(f".//{ns}div[@class='ocr_page']")
    assert page.get("title") == "bbox 0 0 100 50; ppageno 0"
    line = page.find(f"./{ns}p[@class='ocr_par']/{ns}span[@class='ocr_line']")
    assert line.get("title") == "bbox 1 2 90 13; baseline 0 0; x_size 11"
    words = line.findall(f"./{ns}span[@class='ocrx_word']")
    assert [(w.text, w.get("title")) for w in words] == [
        ("a<b&c", "bbox 1 2 40 12; x_wconf 88"), ("d", "bbox 45 2 90 13; x_wconf 50")]


def test_hocr_words_are_the_lines_words_with_their_characters():
    """A box holding two words (the LinkRefiner's line): two ocrx_words, each its own bbox,
    x_wconf and ocrx_cinfo characters."""
    box = {"points": [[10, 10], [120, 10], [120, 30], [10, 30]], "score": 0.9,
           "text": "ab cd", "text_score": 0.9}
    words = [{"points": [[10, 12], [50, 12], [50, 28], [10, 28]], "text": "ab",
              "confidence": 0.81, "box": 0,
              "characters": [{"points": [[10, 12], [30, 12], [30, 28], [10, 28]], "text": "a",
                              "confidence": 0.81},
                             {"points": [[30, 12], [50, 12], [50, 28], [30, 28]], "text": "b",
                              "confidence": 0.99}]},
             {"points": [[70, 11], [120, 11], [120, 29], [70, 29]], "text": "cd",
              "confidence": 0.95, "box": 0, "characters": []}]
    read = {"page": 1, "width": 200, "height": 50, "boxes": [box],
            "lines": [{"points": box["points"], "boxes": [0], "text": "ab cd",
                       "confidence": 0.88, "words": words}],
            "paragraphs": [{"points": box["points"], "lines": [0], "text": "ab cd",
                            "confidence": 0.88}]}
    root = ET.fromstring(hocr.render(Answer(Document("PNG", 1, b""), (read,))))
    ns = "{http://www.w3.org/1999/xhtml}"
    found = root.findall(f".//{ns}span[@class='ocr_line']/{ns}span[@class='ocrx_word']")
    assert [w.get("title") for w in found] == ["bbox 10 12 50 28; x_wconf 81",
                                               "bbox 70 11 120 29; x_wconf 95"]
    assert [(c.text, c.get("title")) for c in found[0]] == [
        ("a", "bbox 10 12 30 28; x_conf 81"), ("b", "bbox 30 12 50 28; x_conf 99")]
    assert found[1].text == "cd" and list(found[1]) == []


def line_title(points: list) -> str:
    """The ``ocr_line`` title of a one-line page whose line has the rectangle ``points``."""
    box = {"points": points, "score": 0.9, "text": "ab", "text_score": 0.9}
    read = {"page": 1, "width": 300, "height": 300, "boxes": [box],
            "lines": [{"points": points, "boxes": [0], "text": "ab"}],
            "paragraphs": [{"points": points, "lines": [0], "text": "ab"}]}
    root = ET.fromstring(hocr.render(Answer(Document("PNG", 1, b""), (read,))))
    return root.find(".//{http://www.w3.org/1999/xhtml}span[@class='ocr_line']").get("title")


def test_a_tilted_lines_baseline_slopes_and_a_turned_line_has_its_textangle():
    # Rising 5 px over 100 to the right; 20 px high.
    assert line_title([[0, 5], [100, 0], [101, 20], [1, 25]]) == \
        "bbox 0 0 101 25; baseline -0.05 0; x_size 20"
    # Falling to the right: the baseline starts 5 px above the bbox's bottom.
    assert line_title([[1, 0], [101, 5], [100, 25], [0, 20]]) == \
        "bbox 0 0 101 25; baseline 0.05 -5; x_size 20"
    # Read bottom to top (a page turned 90 degrees counter-clockwise): x_size is its height
    # across the text, not its length down the page.
    assert line_title([[0, 200], [0, 100], [20, 100], [20, 200]]) == \
        "bbox 0 100 20 200; textangle 90; baseline 0 0; x_size 20"
    assert line_title([[120, 40], [20, 40], [20, 20], [120, 20]]) == \
        "bbox 20 20 120 40; textangle 180; baseline 0 0; x_size 20"
    assert line_title([[20, 100], [20, 200], [0, 200], [0, 100]]) == \
        "bbox 0 100 20 200; textangle 270; baseline 0 0; x_size 20"


def test_an_images_resolution_is_its_scan_res_and_boxes_past_an_edge_stay_on_the_page():
    """What ocrmypdf's hOCR parser needs (issue 57): ``scan_res`` to size the text layer when
    the image names its dpi (Tesseract writes it from the same header), and bboxes of whole
    non-negative numbers inside the page (its parser drops any other, and the word with it)."""
    points = [[-3.4, 40.0], [95.0, 38.0], [104.6, 56.0], [-2.0, 58.2]]
    box = {"points": points, "score": 0.9, "text": "edge", "text_score": 0.9}
    read = {"page": 1, "width": 100, "height": 50, "boxes": [box],
            "lines": [{"points": points, "boxes": [0], "text": "edge"}],
            "paragraphs": [{"points": points, "lines": [0], "text": "edge"}]}
    root = ET.fromstring(hocr.render(Answer(Document("PNG", 1, b"", dpi=299.7), (read,))))
    ns = "{http://www.w3.org/1999/xhtml}"
    assert root.find(f".//{ns}div[@class='ocr_page']").get("title") == \
        "bbox 0 0 100 50; ppageno 0; scan_res 300 300"
    assert root.find(f".//{ns}p[@class='ocr_par']").get("title") == "bbox 0 38 100 50"
    assert root.find(f".//{ns}span[@class='ocrx_word']").get("title") == \
        "bbox 0 38 100 50; x_wconf 90"


def test_a_lines_text_content_is_its_text_unspaced_characters_included():
    """Chinese characters are words of their own in unspaced text: no space between them in
    the hOCR's text content (what a reader of its text, the OCRmyPDF plugin's sidecar, gets)."""
    points = [[0, 0], [90, 0], [90, 20], [0, 20]]
    words = [{"points": [[x, 0], [x + 20, 0], [x + 20, 20], [x, 20]], "text": text,
              "confidence": 0.9, "box": 0}
             for x, text in ((0, "中"), (20, "文"), (50, "ab"), (70, "cd"))]
    box = {"points": points, "score": 0.9, "text": "中文 ab cd", "text_score": 0.9}
    read = {"page": 1, "width": 100, "height": 50, "boxes": [box],
            "lines": [{"points": points, "boxes": [0], "text": "中文 ab cd", "words": words}],
            "paragraphs": [{"points": points, "lines": [0], "text": "中文 ab cd"}]}
    root = ET.fromstring(hocr.render(Answer(Document("PNG", 1, b""), (read,))))
    line = root.find(".//{http://www.w3.org/1999/xhtml}span[@class='ocr_line']")
    assert "".join(line.itertext()) == "中文 ab cd "
