"""The invisible text pages of a searchable PDF: every word read, set where it was read in PDF
text render mode 3 (neither filled nor stroked), so that viewers select and find it and
``pdftotext`` extracts it while the page shows only what it showed. The technique of
Tesseract's PDF renderer and ocrmypdf's hOCR transform, drawn here straight from the answer.

Each word is one text object on its box (the answer's 4 points, the first two along the text,
whichever way up): the baseline on the box's bottom edge and turned the way that edge runs,
the font size the box's height, the horizontal scaling (``Tz``) what spreads the characters
across the box's width. The font is :mod:`ocr_api.glyphless_font` as a Type 0 font with
``Identity-H`` encoding: each distinct character of the document gets a 2-byte code, the
``ToUnicode`` CMap maps every code back to its character (outside the BMP as a UTF-16 pair),
and the ``CIDToGIDMap`` maps every code to the font's em-box glyph, which is never painted. So
every script is extractable, with no font for it.
"""

from __future__ import annotations

import math

import pikepdf
from pikepdf import Array, Dictionary, Name

from . import glyphless_font

#: The font's resource name on every text page.
FONT_RESOURCE = Name("/F0")
#: PDF text render mode 3: neither fill nor stroke (PDF 32000-1:2008, 9.3.6).
INVISIBLE = 3
#: Entries per ``beginbfchar`` block: the CMap format allows at most 100 (Adobe TN 5411).
_BFCHAR_BLOCK = 100
#: Boxes thinner than this, in points, get no text (nothing to select).
_MIN_SIZE_PT = 0.5


def words_of(page: dict) -> list[tuple[str, list]]:
    """A page's words in reading order, as (text, its 4 points in pixels): the boxes of each
    line in turn, boxes without text (``recognize=false``) left out."""
    boxes = page["boxes"]
    return [(boxes[index]["text"], boxes[index]["points"])
            for line in page["lines"] for index in line["boxes"] if boxes[index].get("text")]


def text_pdf(pages: list[dict], dpis: list[float]) -> pikepdf.Pdf:
    """A PDF with one page per answer page, holding only its invisible words.

    Args:
        pages: the answer's pages (:func:`ocr_api.hocr.pages_of`): ``width`` and ``height`` in
            pixels, ``boxes`` with ``points`` in those pixels and ``text``, ``lines``.
        dpis: per page, the resolution its pixels are at: page ``i`` is
            ``width * 72 / dpis[i]`` by ``height * 72 / dpis[i]`` points.

    Returns:
        A new :class:`pikepdf.Pdf` (the caller closes it).

    Raises:
        ValueError: more distinct characters than 2-byte codes (65,535).
    """
    words = [words_of(page) for page in pages]
    characters = sorted({character for page in words for text, _ in page for character in text})
    if len(characters) > 0xFFFF:
        raise ValueError(f"{len(characters)} distinct characters: at most 65535 fit one font")
    codes = {character: number + 1 for number, character in enumerate(characters)}  # 0: .notdef
    pdf = pikepdf.new()
    font = pdf.make_indirect(_type0_font(pdf, characters))
    for page, dpi, page_words in zip(pages, dpis, words):
        scale = 72.0 / dpi
        pdf.add_blank_page(page_size=(page["width"] * scale, page["height"] * scale))
        text_page = pdf.pages[-1]
        text_page.Resources = Dictionary(Font=Dictionary({str(FONT_RESOURCE): font}))
        operations = [([], "q"), ([INVISIBLE], "Tr")]
        for text, points in page_words:
            operations += _word(text, points, codes, scale, page["height"] * scale)
        operations.append(([], "Q"))
        text_page.Contents = pdf.make_stream(pikepdf.unparse_content_stream(operations))
    return pdf


def _word(text: str, points: list, codes: dict[str, int], scale: float,
          page_height: float) -> list[tuple[list, str]]:
    """The text object of one word: ``points`` in pixels (y down), ``scale`` points per pixel."""
    (x0, y0), (x1, y1), (x2, y2), (x3, y3) = [(x * scale, page_height - y * scale)
                                              for x, y in points]
    width = (math.hypot(x1 - x0, y1 - y0) + math.hypot(x2 - x3, y2 - y3)) / 2
    size = (math.hypot(x3 - x0, y3 - y0) + math.hypot(x2 - x1, y2 - y1)) / 2
    if size < _MIN_SIZE_PT or width < _MIN_SIZE_PT:
        return []
    angle = math.atan2(y2 - y3, x2 - x3)               # along the bottom edge: the baseline
    cos, sin = math.cos(angle), math.sin(angle)
    natural = len(text) * size * glyphless_font.ADVANCE / glyphless_font.UNITS_PER_EM
    encoded = b"".join(codes[character].to_bytes(2, "big") for character in text)
    return [([], "BT"),
            ([FONT_RESOURCE, _number(size)], "Tf"),
            ([_number(100.0 * width / natural)], "Tz"),
            ([*(_number(v, 4) for v in (cos, sin, -sin, cos)), _number(x3), _number(y3)], "Tm"),
            ([pikepdf.String(encoded)], "Tj"),
            ([], "ET")]


def _number(value: float, places: int = 2) -> float:
    """A coordinate as the content stream writes it: rounded, so files stay small."""
    return round(value, places)


def _type0_font(pdf: pikepdf.Pdf, characters: list[str]) -> Dictionary:
    """The Type 0 font: code ``n`` (from 1) is ``characters[n - 1]``, set in the box glyph,
    :data:`glyphless_font.ADVANCE` thousandths of the font size wide."""
    program = glyphless_font.font_bytes()
    font_file = pdf.make_stream(program)
    font_file.Length1 = len(program)
    descriptor = Dictionary(
        Type=Name.FontDescriptor, FontName=Name("/" + glyphless_font.NAME),
        Flags=5,                                       # fixed pitch, symbolic
        FontBBox=Array([0, 0, glyphless_font.ADVANCE, glyphless_font.UNITS_PER_EM]),
        ItalicAngle=0, Ascent=glyphless_font.UNITS_PER_EM, Descent=0,
        CapHeight=glyphless_font.UNITS_PER_EM, StemV=80, FontFile2=font_file)
    box = glyphless_font.BOX_GLYPH.to_bytes(2, "big")
    descendant = Dictionary(
        Type=Name.Font, Subtype=Name.CIDFontType2, BaseFont=Name("/" + glyphless_font.NAME),
        CIDSystemInfo=Dictionary(Registry=pikepdf.String("Adobe"),
                                 Ordering=pikepdf.String("Identity"), Supplement=0),
        FontDescriptor=pdf.make_indirect(descriptor), DW=glyphless_font.ADVANCE,
        CIDToGIDMap=pdf.make_stream(b"\0\0" + box * len(characters)))
    return Dictionary(
        Type=Name.Font, Subtype=Name.Type0, BaseFont=Name("/" + glyphless_font.NAME),
        Encoding=Name("/Identity-H"), DescendantFonts=Array([pdf.make_indirect(descendant)]),
        ToUnicode=pdf.make_stream(_to_unicode(characters)))


def _to_unicode(characters: list[str]) -> bytes:
    """The ToUnicode CMap (Adobe TN 5411): code ``n`` (from 1) -> ``characters[n - 1]``."""
    entries = [f"<{number:04X}> <{character.encode('utf-16-be').hex().upper()}>"
               for number, character in enumerate(characters, start=1)]
    blocks = [entries[i:i + _BFCHAR_BLOCK] for i in range(0, len(entries), _BFCHAR_BLOCK)]
    lines = ["/CIDInit /ProcSet findresource begin", "12 dict begin", "begincmap",
             "/CIDSystemInfo << /Registry (Adobe) /Ordering (UCS) /Supplement 0 >> def",
             "/CMapName /Adobe-Identity-UCS def", "/CMapType 2 def",
             "1 begincodespacerange", "<0000> <FFFF>", "endcodespacerange"]
    for block in blocks:
        lines += [f"{len(block)} beginbfchar", *block, "endbfchar"]
    lines += ["endcmap", "CMapName currentdict /CMap defineresource pop", "end", "end"]
    return ("\n".join(lines) + "\n").encode("ascii")
