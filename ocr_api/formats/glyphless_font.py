"""A glyphless TrueType font: the font program a searchable PDF's invisible text is set in.

Invisible text (PDF text render mode 3) is never painted, but a PDF font should still carry
its program, or viewers substitute one and warn. This one has two glyphs, 500 of 1000 units
wide: an empty ``.notdef`` and glyph 1, a bare box as wide as its advance, from 0.1 to
0.9 em above the baseline, that every character is set in. Render mode 3 never paints it;
its box is what lets PDF readers keep, order and highlight a word (PDFium drops the
characters of a turned word whose glyph has no extent). It stops short of the em so that the
characters of lines whose boxes touch (CRAFT pads its boxes) do not: PDFium reads touching
characters as one line. So the font weighs a few hundred bytes and covers every script: the
characters are in the PDF's ``ToUnicode`` map, not in the font. It is the glyphless-font
technique of Tesseract's PDF renderer, written from the TrueType table layouts of the OpenType
specification (``head``, ``hhea``, ``maxp``, ``OS/2`` version 4, ``hmtx``, ``loca``, ``glyf``,
``cmap`` format 4, ``name``, ``post`` version 3).
"""

from __future__ import annotations

import functools
import struct

#: The font's name (its ``name`` table and the PDF's ``BaseFont``).
NAME = "GlyphLessFont"
#: Units per em.
UNITS_PER_EM = 1000
#: Advance width of both glyphs, font units: half an em (the PDF's ``DW``).
ADVANCE = 500
#: Glyph ids: 0 is ``.notdef``; 1 is the box every character is set in.
BOX_GLYPH = 1
#: The box's bottom and top, font units above the baseline.
BOX_BOTTOM, BOX_TOP = 100, 900


def _checksum(data: bytes) -> int:
    """The TrueType table checksum: the sum of big-endian uint32s, the data zero-padded."""
    padded = data + b"\0" * (-len(data) % 4)
    return sum(struct.unpack(f">{len(padded) // 4}I", padded)) & 0xFFFFFFFF


def _name_table() -> bytes:
    """Windows (3, 1, en-US) names: family, subfamily, full name, PostScript name."""
    names = {1: NAME, 2: "Regular", 3: f"{NAME}-Regular", 4: NAME, 6: NAME}
    records, strings = b"", b""
    for name_id, text in names.items():
        encoded = text.encode("utf-16-be")
        records += struct.pack(">6H", 3, 1, 0x409, name_id, len(encoded), len(strings))
        strings += encoded
    return struct.pack(">3H", 0, len(names), 6 + len(records)) + records + strings


@functools.cache
def font_bytes() -> bytes:
    """The font file (TrueType, ``sfnt`` version 1.0), about 700 bytes.

    Glyph 0 (``.notdef``, empty) and glyph 1 (:data:`BOX_GLYPH`, the box) are
    :data:`ADVANCE` units wide; the ``cmap`` maps no character (a PDF reaches the glyph
    through its ``CIDToGIDMap``).
    """
    glyphs = 2
    # Glyph 1: one closed contour around its box (0, BOX_BOTTOM)-(ADVANCE, BOX_TOP), 4
    # on-curve points given as int16 deltas.
    box = struct.pack(">5h", 1, 0, BOX_BOTTOM, ADVANCE, BOX_TOP) + struct.pack(">HH", 3, 0) \
        + bytes([0x01] * 4) + struct.pack(">4h", 0, 0, ADVANCE, 0) \
        + struct.pack(">4h", BOX_BOTTOM, BOX_TOP - BOX_BOTTOM, 0, BOX_BOTTOM - BOX_TOP)
    tables = {
        "head": struct.pack(">IIIIHHqqhhhhHHhhh", 0x00010000, 0x00010000, 0, 0x5F0F3CF5,
                            0b1011, UNITS_PER_EM, 0, 0, 0, BOX_BOTTOM, ADVANCE, BOX_TOP,
                            0, 3, 2, 0, 0),
        "hhea": struct.pack(">I3hH11hH", 0x00010000, UNITS_PER_EM, 0, 0, ADVANCE,
                            0, 0, ADVANCE, 1, 0, 0, 0, 0, 0, 0, 0, glyphs),
        "maxp": struct.pack(">I14H", 0x00010000, glyphs, 4, 1, 0, 0, 2, 0, 0, 0, 0, 0, 0,
                            0, 0),
        "hmtx": struct.pack(">HhHh", ADVANCE, 0, ADVANCE, 0),
        "loca": struct.pack(">3H", 0, 0, len(box) // 2),     # short offsets: bytes / 2
        "glyf": box,
        # One (3, 1) subtable, format 4 with only the final 0xFFFF segment: no character.
        "cmap": struct.pack(">4HI", 0, 1, 3, 1, 12)
                + struct.pack(">12H", 4, 24, 0, 2, 2, 0, 0, 0xFFFF, 0, 0xFFFF, 1, 0),
        "name": _name_table(),
        # OS/2 version 4, which font loaders (browsers' OpenType Sanitizer) require: regular
        # weight and width, installable embedding (fsType 0), no character (first = last =
        # 0xFFFF, as the cmap), the em above the baseline.
        "OS/2": struct.pack(">HhHHH11h10s4I4sHHHhhhHH2IhhHHH", 4, ADVANCE, 400, 5, 0,
                            650, 700, 0, 140, 650, 700, 0, 480, 50, 250, 0, bytes(10),
                            0, 0, 0, 0, b"NONE", 0x40, 0xFFFF, 0xFFFF, UNITS_PER_EM, 0, 0,
                            UNITS_PER_EM, 0, 1, 0, UNITS_PER_EM // 2, UNITS_PER_EM, 0, 0x20, 1),
        "post": struct.pack(">IihhIIIII", 0x00030000, 0, -100, 50, 1, 0, 0, 0, 0),
    }
    tags = sorted(tables)
    entry_selector = len(tags).bit_length() - 1
    search_range = 16 << entry_selector
    directory = struct.pack(">IHHHH", 0x00010000, len(tags), search_range, entry_selector,
                            16 * len(tags) - search_range)
    offset = len(directory) + 16 * len(tags)
    records, body, head_offset = b"", b"", 0
    for tag in tags:
        data = tables[tag]
        if tag == "head":
            head_offset = offset + len(body)
        records += struct.pack(">4sIII", tag.encode("ascii"), _checksum(data),
                               offset + len(body), len(data))
        body += data + b"\0" * (-len(data) % 4)
    font = bytearray(directory + records + body)
    # head.checkSumAdjustment (at 8 in head) makes the whole file sum to 0xB1B0AFBA.
    struct.pack_into(">I", font, head_offset + 8,
                     (0xB1B0AFBA - _checksum(bytes(font))) & 0xFFFFFFFF)
    return bytes(font)
