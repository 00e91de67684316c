"""The invisible text pages of a searchable PDF: every word read, set where it was read in PDF
text render mode 3 (neither filled nor stroked), so that viewers select and find it and
``pdftotext`` extracts it while the page shows only what it showed. The technique of
Tesseract's PDF renderer and ocrmypdf's hOCR transform, drawn here straight from the answer.

Each line is one text object (:func:`_line`): turned the nearest quarter turn to the way its
words run (the answer's 4 points, the first two along the text, whichever way up), its words
on one baseline (a tilted line's where it crosses the page's middle), the font size their
median height; each word spans its box's extent along the line (the horizontal scaling ``Tz``
spreads its characters) and is followed by a space. The font is
:mod:`ocr_api.formats.glyphless_font` as a Type 0 font with ``Identity-H`` encoding: each
distinct character of the document gets a 2-byte code, the
``ToUnicode`` CMap maps every code back to its character (outside the BMP as a UTF-16 pair),
and the ``CIDToGIDMap`` maps every code to the font's box glyph, which is never painted. So
every script is extractable, with no font for it.
"""

from __future__ import annotations

import math
import statistics

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


def lines_of(page: dict) -> list[list[tuple[str, list]]]:
    """A page's lines in reading order, each its words in order as (text, its 4 points in
    pixels): the line's ``words``, each on its own box (an answer without them, stored before
    words existed, gives its boxes); boxes without text (``recognize=false``) are left out,
    and so are lone UTF-16 surrogates, which no PDF string can carry."""
    boxes, found = page["boxes"], []
    for line in page["lines"]:
        placed = line["words"] if "words" in line else [boxes[index] for index in line["boxes"]]
        words = [(text, word["points"]) for word in placed
                 if (text := _encodable(word.get("text", "")))]
        if words:
            found.append(words)
    return found


def _encodable(text: str) -> str:
    """``text`` without lone UTF-16 surrogates (a str from JSON may hold them)."""
    return "".join(c for c in text if not "\ud800" <= c <= "\udfff")


def text_pdf(pages: list[dict], dpis: list[float]) -> pikepdf.Pdf:
    """A PDF with one page per answer page, holding only its invisible words.

    Args:
        pages: the answer's pages (:attr:`ocr_api.answer.Answer.pages`): ``width`` and
            ``height`` in pixels, ``boxes`` with ``points`` in those pixels and ``text``,
            ``lines``.
        dpis: per page, the resolution its pixels are at: page ``i`` is
            ``width * 72 / dpis[i]`` by ``height * 72 / dpis[i]`` points.

    Returns:
        A new :class:`pikepdf.Pdf` (the caller closes it).

    Raises:
        ValueError: more distinct characters than 2-byte codes (65,535).
    """
    lines = [lines_of(page) for page in pages]
    characters = sorted({" ", *(character for page in lines for line in page
                                for text, _ in line for character in text)})
    if len(characters) > 0xFFFF:
        raise ValueError(f"{len(characters)} distinct characters: at most 65535 fit one font")
    codes = {character: number + 1 for number, character in enumerate(characters)}  # 0: .notdef
    pdf = pikepdf.new()
    font = pdf.make_indirect(_type0_font(pdf, characters))
    for page, dpi, page_lines in zip(pages, dpis, lines):
        scale = 72.0 / dpi
        pdf.add_blank_page(page_size=(page["width"] * scale, page["height"] * scale))
        text_page = pdf.pages[-1]
        text_page.Resources = Dictionary(Font=Dictionary({str(FONT_RESOURCE): font}))
        operations = [([], "q"), ([INVISIBLE], "Tr")]
        for line in page_lines:
            operations += _line(line, codes, scale,
                                (page["width"] * scale, page["height"] * scale))
        operations.append(([], "Q"))
        text_page.Contents = pdf.make_stream(pikepdf.unparse_content_stream(operations))
    return pdf


def _line(words: list[tuple[str, list]], codes: dict[str, int], scale: float,
          page_size: tuple[float, float]) -> list[tuple[list, str]]:
    """The text object of one line: ``words`` with points in pixels (y down), ``scale``
    points per pixel, ``page_size`` (width, height) in points.

    The line runs the nearest quarter turn to its words' baselines (the bottom edges): text
    readers (poppler's above all) break words tilted off the axes into letters and reorder
    them. In that direction its words share one baseline and one font size, the median of
    its words' heights, as an hOCR line's words do. A line tilted a few degrees rises along
    its length by more than its height, so its baseline is where its words' bottom edges,
    carried along the line's own slope, cross the middle of the page (or the line's nearer
    end): every line of a tilted page is measured at the same place, and their baselines keep
    their order and spacing (a table's rows, whose words sit far apart, too). Each word
    spans its own extent along the line, and the gap to the next word holds a space (at least
    :data:`_MIN_SIZE_PT` wide), so readers copy the words apart however close they are.
    """
    page_height = page_size[1]
    pdf_points = [[(x * scale, page_height - y * scale) for x, y in points]
                  for _, points in words]
    run_x = sum(q[2][0] - q[3][0] for q in pdf_points)
    run_y = sum(q[2][1] - q[3][1] for q in pdf_points)
    turns = round(math.atan2(run_y, run_x) / (math.pi / 2)) % 4
    cos, sin = ((1, 0), (0, 1), (-1, 0), (0, -1))[turns]
    along = [[x * cos + y * sin for x, y in q] for q in pdf_points]        # the line's frame
    across = [[y * cos - x * sin for x, y in q] for q in pdf_points]
    slope = (run_y * cos - run_x * sin) / max(run_x * cos + run_y * sin, 1e-9)
    # The page's middle, or the line's nearer end when it lies to one side of it: a short
    # line, or a steep one, is not carried far off its own words.
    middle = min(max(page_size[0] / 2 * cos + page_height / 2 * sin,
                     min(min(a) for a in along)), max(max(a) for a in along))
    baseline = statistics.median((c[2] + c[3]) / 2 + (middle - (a[2] + a[3]) / 2) * slope
                                 for a, c in zip(along, across))
    size = statistics.median((c[0] + c[1] - c[2] - c[3]) / 2 for c in across)
    if size < _MIN_SIZE_PT:
        return []
    advance = size * glyphless_font.ADVANCE / glyphless_font.UNITS_PER_EM
    operations = [([], "BT"), ([FONT_RESOURCE, _number(size)], "Tf")]
    spans = [[text, min(extent), max(extent)] for (text, _), extent in zip(words, along)
             if max(extent) - min(extent) >= _MIN_SIZE_PT]
    for before, after in zip(spans, spans[1:]):
        # Words whose boxes overlap along the line (a tilted line's neighbours) part in the
        # middle, a space apart: poppler joins words that overlap, and drops a space that runs
        # into the next word.
        if before[2] + _MIN_SIZE_PT > after[1]:
            middle = (before[2] + after[1]) / 2
            before[2] = max(before[1] + _MIN_SIZE_PT, middle - _MIN_SIZE_PT / 2)
            after[1] = min(after[2] - _MIN_SIZE_PT, middle + _MIN_SIZE_PT / 2)
    for number, (text, start, end) in enumerate(spans):
        operations += _set(text, start, end - start, baseline, advance, cos, sin, codes)
        if number + 1 < len(spans):
            gap_end = max(spans[number + 1][1], end + _MIN_SIZE_PT / 2)
            operations += _set(" ", end, gap_end - end, baseline, advance, cos, sin, codes)
    return operations + [([], "ET")]


def _set(text: str, start: float, width: float, baseline: float, advance: float, cos: int,
         sin: int, codes: dict[str, int]) -> list[tuple[list, str]]:
    """Operators that set ``text`` from ``start`` along the line (points, in the line's
    frame) on ``baseline``, scaled (``Tz``) to span ``width`` points; ``advance`` is a
    character's width at scale 100."""
    origin = (start * cos - baseline * sin, start * sin + baseline * cos)
    return [([_number(100.0 * width / (len(text) * advance), 4)], "Tz"),
            ([cos, sin, -sin, cos, _number(origin[0]), _number(origin[1])], "Tm"),
            ([pikepdf.String(b"".join(codes[c].to_bytes(2, "big") for c in text))], "Tj")]


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
        FontBBox=Array([0, glyphless_font.BOX_BOTTOM, glyphless_font.ADVANCE,
                        glyphless_font.BOX_TOP]),
        # Descent -1, not 0: poppler takes a descent of 0 for a broken font and gives the
        # words its default, 35 % of their size below the line (Tesseract writes -1 too).
        ItalicAngle=0, Ascent=glyphless_font.UNITS_PER_EM, Descent=-1,
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
