"""The answer as hOCR 1.2 (XHTML): ``ocr_page`` > ``ocr_par`` > ``ocr_line`` > ``ocrx_word``.

hOCR is the layout format Tesseract, ocrmypdf and most OCR tooling read and write
(kba.github.io/hocr-spec/1.2). Every element carries ``bbox x0 y0 x1 y1`` in the page's pixels
(the axis-aligned box around its polygon); words carry ``x_wconf`` (the text score, 0-100);
pages carry ``ppageno`` (from 0) and, for a PDF page, ``scan_res`` (the dpi it was rendered
at), so that a PDF text layer can be placed back on the page. Built with ElementTree, so text
is always escaped.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from ..answer import Answer

XHTML = "http://www.w3.org/1999/xhtml"
CAPABILITIES = "ocr_page ocr_par ocr_line ocrx_word ocrp_wconf"


def _bbox(points: list) -> str:
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    return f"bbox {round(min(xs))} {round(min(ys))} {round(max(xs))} {round(max(ys))}"


def render(answer: Answer) -> bytes:
    """The hOCR document of an answer: one ``ocr_page`` per page of :attr:`Answer.pages
    <ocr_api.answer.Answer.pages>`, with ``scan_res`` where the page was rendered at a
    resolution (:attr:`Answer.dpis <ocr_api.answer.Answer.dpis>`, a PDF's pages).

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
        boxes, lines = page["boxes"], page["lines"]
        for p, paragraph in enumerate(page["paragraphs"]):
            par = ET.SubElement(div, "p", {"class": "ocr_par", "id": f"par_{number + 1}_{p + 1}",
                                           "title": _bbox(paragraph["points"])})
            for index in paragraph["lines"]:
                line = lines[index]
                height = round(max(q[1] for q in line["points"])
                               - min(q[1] for q in line["points"]))
                span = ET.SubElement(par, "span", {
                    "class": "ocr_line", "id": f"line_{number + 1}_{index + 1}",
                    "title": f"{_bbox(line['points'])}; baseline 0 0; x_size {height}"})
                for word_index in line["boxes"]:
                    box = boxes[word_index]
                    confidence = round(100 * box.get("text_score", box["score"]))
                    word = ET.SubElement(span, "span", {
                        "class": "ocrx_word", "id": f"word_{number + 1}_{word_index + 1}",
                        "title": f"{_bbox(box['points'])}; x_wconf {confidence}"})
                    word.text = box.get("text", "")
                    word.tail = " "
    declaration = ('<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE html PUBLIC '
                   '"-//W3C//DTD XHTML 1.0 Transitional//EN" '
                   '"http://www.w3.org/TR/xhtml1/DTD/xhtml1-transitional.dtd">\n')
    return (declaration + ET.tostring(html, encoding="unicode") + "\n").encode("utf-8")
