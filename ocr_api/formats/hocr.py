"""The answer as hOCR 1.2 (XHTML): ``ocr_page`` > ``ocr_par`` > ``ocr_line`` > ``ocrx_word``.

hOCR is the layout format Tesseract, ocrmypdf and most OCR tooling read and write
(kba.github.io/hocr-spec/1.2). Every element carries ``bbox x0 y0 x1 y1`` in the page's pixels
(the axis-aligned box around its polygon); ``ocrx_word`` elements are the answer's words
(``lines[].words``: a word each, with ``x_wconf`` its confidence, 0-100), each holding its
``ocrx_cinfo`` characters (``x_conf``) when they were asked for (``detail=characters``); without
read text (``recognize=false``) they are the boxes; a space follows a word where the line's text
has one (none between the characters of unspaced Chinese or Japanese), so a line's text content
is its text;
``ocr_line`` elements carry the line's ``baseline`` (slope, and offset from the bottom-left
of its bbox, pixels; for a turned line both in the line's own frame, turned upright),
``x_size`` (its height across the text) and, for a turned line, ``textangle`` (its quarter
turn, counter-clockwise, as Tesseract writes it), so a tilted or turned line is placed as it
lies; pages carry ``ppageno`` (from 0) and ``scan_res``: the dpi a PDF page was rendered at, or
the one an image's header names (as Tesseract writes it), so that a PDF text layer (ocrmypdf's
among them) can be placed back on the page at its size. Built with ElementTree, so text
is always escaped.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET

from ..answer import Answer

XHTML = "http://www.w3.org/1999/xhtml"
CAPABILITIES = "ocr_page ocr_par ocr_line ocrx_word ocrx_cinfo ocrp_wconf"


def _bbox(points: list, size: tuple[int, int]) -> str:
    """``bbox x0 y0 x1 y1``: the axis-aligned box around ``points`` (page pixels), kept inside
    the page of ``size`` (width, height): a tilted box's corner may lie past an edge, and hOCR's
    readers (ocrmypdf's parser among them) take only whole non-negative numbers."""
    xs, ys = zip(*_kept_inside(points, size))
    return f"bbox {round(min(xs))} {round(min(ys))} {round(max(xs))} {round(max(ys))}"


def _line_geometry(points: list) -> str:
    """An ``ocr_line``'s ``textangle`` (omitted when 0), ``baseline`` and ``x_size`` from its
    rectangle ``points`` (``[[x, y]] * 4``, clockwise from its text's top-left, page pixels).

    The rectangle is turned back by its quarter turn, so its text reads left to right; there
    the baseline is its bottom side: slope dy/dx (y down, rounded to 3 places) and offset, the
    baseline's y at the bbox's left minus the bbox's bottom (pixels, hOCR 1.2 ``baseline``);
    ``x_size`` is the side across the text.
    """
    (x0, y0), (x1, y1), (x2, y2), _ = points
    turn = round(math.degrees(math.atan2(y0 - y1, x1 - x0)) / 90) % 4 * 90
    cos, sin = round(math.cos(math.radians(-turn))), round(math.sin(math.radians(-turn)))
    level = [(x * cos + y * sin, y * cos - x * sin) for x, y in points]
    (_, _), (_, _), (right, bottom_right), (left, bottom_left) = level
    slope = (bottom_right - bottom_left) / (right - left) if right != left else 0.0
    offset = bottom_left + slope * (min(x for x, _ in level) - left) - max(y for _, y in level)
    angle = f"textangle {turn}; " if turn else ""
    return (f"{angle}baseline {round(slope, 3) + 0.0:g} {round(offset) + 0}; "
            f"x_size {round(math.hypot(x2 - x1, y2 - y1))}")


def _spaces_after(texts: list[str], line_text: str) -> list[str]:
    """What follows each word of a line in the line's text: ``" "`` where the text has a space
    after it, ``""`` where the next word follows at once (Chinese and Japanese characters are
    words of their own in unspaced text), so that the hOCR's text content is the line's text.
    A word not found where expected (no text read) is followed by a space."""
    spaces, position = [], 0
    for text in texts:
        found = line_text.find(text, position) if text else -1
        if found < 0:
            spaces.append(" ")
            continue
        position = found + len(text)
        spaces.append(" " if line_text[position:position + 1].isspace() else "")
    if spaces:
        spaces[-1] = " "
    return spaces


def _kept_inside(points: list, size: tuple[int, int]) -> list:
    """``points`` (page pixels) moved onto the page of ``size`` (width, height)."""
    return [[min(max(x, 0), size[0]), min(max(y, 0), size[1])] for x, y in points]


def _line_words(line: dict, boxes: list) -> list[dict]:
    """A line's ``ocrx_word`` contents: its words (``points``, ``text``, ``conf`` 0-100,
    ``characters``?), or its boxes when it has no words (``recognize=false``)."""
    if "words" in line:
        return [{**word, "conf": round(100 * word["confidence"])} for word in line["words"]]
    return [{"points": boxes[i]["points"], "text": boxes[i].get("text", ""),
             "conf": round(100 * boxes[i].get("text_score", boxes[i]["score"]))}
            for i in line["boxes"]]


def _add_characters(element: ET.Element, word: dict, size: tuple[int, int]) -> None:
    """The word's text in ``element``: one ``ocrx_cinfo`` span per character (``bbox`` inside
    the page of ``size``, ``x_conf`` 0-100) when ``word`` has ``characters``, else the plain
    text."""
    characters = word.get("characters")
    if not characters:
        element.text = word.get("text", "")
        return
    for character in characters:
        cinfo = ET.SubElement(element, "span", {
            "class": "ocrx_cinfo",
            "title": f"{_bbox(character['points'], size)}; x_conf "
                     f"{round(100 * character['confidence'], 2):g}"})
        cinfo.text = character["text"]


def render(answer: Answer) -> bytes:
    """The hOCR document of an answer: one ``ocr_page`` per page of :attr:`Answer.pages
    <ocr_api.answer.Answer.pages>`, with ``scan_res`` where the page has a resolution
    (:attr:`Answer.dpis <ocr_api.answer.Answer.dpis>`: a PDF's pages, an image that names one).

    Returns:
        UTF-8 XHTML bytes.
    """
    html = ET.Element("html", {"xmlns": XHTML, "xml:lang": "en", "lang": "en"})
    head = ET.SubElement(html, "head")
    ET.SubElement(head, "title").text = "OCR"
    ET.SubElement(head, "meta", {"http-equiv": "Content-Type",
                                 "content": "text/html;charset=utf-8"})
    ET.SubElement(head, "meta", {"name": "ocr-system", "content": "ocr-gateway"})
    ET.SubElement(head, "meta", {"name": "ocr-capabilities", "content": CAPABILITIES})
    body = ET.SubElement(html, "body")
    for number, (page, dpi) in enumerate(zip(answer.pages, answer.dpis)):
        title = f"bbox 0 0 {page['width']} {page['height']}; ppageno {number}"
        if dpi:
            title += f"; scan_res {round(dpi)} {round(dpi)}"
        div = ET.SubElement(body, "div", {"class": "ocr_page", "id": f"page_{number + 1}",
                                          "title": title})
        boxes, lines, words = page["boxes"], page["lines"], 0
        size = (page["width"], page["height"])
        for p, paragraph in enumerate(page["paragraphs"]):
            par = ET.SubElement(div, "p", {"class": "ocr_par", "id": f"par_{number + 1}_{p + 1}",
                                           "title": _bbox(paragraph["points"], size)})
            for index in paragraph["lines"]:
                line = lines[index]
                # A line past an edge: its baseline measured from the bbox it is given.
                inside = _kept_inside(line["points"], size)
                span = ET.SubElement(par, "span", {
                    "class": "ocr_line", "id": f"line_{number + 1}_{index + 1}",
                    "title": f"{_bbox(inside, size)}; {_line_geometry(inside)}"})
                line_words = _line_words(line, boxes)
                spaces = _spaces_after([word.get("text", "") for word in line_words],
                                       line.get("text", ""))
                for word, space in zip(line_words, spaces):
                    words += 1
                    element = ET.SubElement(span, "span", {
                        "class": "ocrx_word", "id": f"word_{number + 1}_{words}",
                        "title": f"{_bbox(word['points'], size)}; x_wconf {word['conf']}"})
                    _add_characters(element, word, size)
                    element.tail = space
    declaration = ('<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE html PUBLIC '
                   '"-//W3C//DTD XHTML 1.0 Transitional//EN" '
                   '"http://www.w3.org/TR/xhtml1/DTD/xhtml1-transitional.dtd">\n')
    return (declaration + ET.tostring(html, encoding="unicode") + "\n").encode("utf-8")
