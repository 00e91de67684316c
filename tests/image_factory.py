"""Images built in the tests with Pillow and plain bytes (no generated files are committed)."""

import io
import math
import struct
import zlib

from PIL import Image, ImageDraw

#: ``ImageOps.exif_transpose`` applies, per EXIF orientation, a transform; its inverse turns an
#: upright picture into the raw pixels a camera would store with that orientation tag.
INVERSE_ORIENTATION = {
    1: None,
    2: Image.Transpose.FLIP_LEFT_RIGHT,
    3: Image.Transpose.ROTATE_180,
    4: Image.Transpose.FLIP_TOP_BOTTOM,
    5: Image.Transpose.TRANSPOSE,
    6: Image.Transpose.ROTATE_90,
    7: Image.Transpose.TRANSVERSE,
    8: Image.Transpose.ROTATE_270,
}


def encode(image: Image.Image, fmt: str = "PNG", **save_args) -> bytes:
    """``image`` encoded as ``fmt`` bytes."""
    buffer = io.BytesIO()
    image.save(buffer, fmt, **save_args)
    return buffer.getvalue()


def images_pdf(images: list[Image.Image], resolution: float = 96) -> bytes:
    """The images as the pages of one PDF at ``resolution`` dpi (as a scanner or a phone app's
    "save as PDF" makes them)."""
    out = io.BytesIO()
    images[0].convert("RGB").save(out, "PDF", save_all=True, resolution=resolution,
                                  append_images=[image.convert("RGB") for image in images[1:]])
    return out.getvalue()


def heic(image: Image.Image, quality: int = 95) -> bytes:
    """``image`` as HEIC, written by pillow-heif (pi-heif, which the service reads with, has no
    encoder). Not registered with Pillow, so the service's own opener is the one that reads it."""
    import pillow_heif

    out = io.BytesIO()
    pillow_heif.from_pillow(image).save(out, quality=quality)
    return out.getvalue()


def marker_image(width: int = 40, height: int = 20) -> Image.Image:
    """White RGB image with a red block in its top-left quarter (to check orientation)."""
    image = Image.new("RGB", (width, height), "white")
    ImageDraw.Draw(image).rectangle([0, 0, width // 4 - 1, height // 4 - 1], fill=(255, 0, 0))
    return image


def with_orientation(upright: Image.Image, orientation: int, fmt: str = "PNG", **save) -> bytes:
    """Raw pixels plus EXIF orientation tag that display as ``upright``."""
    inverse = INVERSE_ORIENTATION[orientation]
    raw = upright.transpose(inverse) if inverse is not None else upright.copy()
    exif = Image.Exif()
    exif[0x0112] = orientation
    return encode(raw, fmt, exif=exif.tobytes(), **save)


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return (struct.pack(">I", len(data)) + kind + data
            + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))


def png_header_only(width: int, height: int) -> bytes:
    """A tiny PNG that declares ``width`` x ``height`` (a decompression bomb's header)."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    idat = zlib.compress(b"\x00" * 64)
    return (b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", ihdr) + _png_chunk(b"IDAT", idat)
            + _png_chunk(b"IEND", b""))


def _s15f16(value: float) -> bytes:
    return struct.pack(">i", round(value * 65536))


def _xyz_tag(x: float, y: float, z: float) -> bytes:
    return b"XYZ " + b"\0" * 4 + _s15f16(x) + _s15f16(y) + _s15f16(z)


def swapped_primaries_icc() -> bytes:
    """A minimal ICC v2 RGB display profile (matrix/TRC, gamma 2.2) whose red and green
    primaries are swapped: a pixel it describes as (255, 0, 0) is green in sRGB. Built by hand
    because Pillow can only create an sRGB profile, and sRGB -> sRGB proves nothing."""
    # D50-adapted sRGB primaries (the PCS is D50), red and green exchanged.
    red, green, blue = (0.3851, 0.7169, 0.0971), (0.4361, 0.2225, 0.0139), \
        (0.1431, 0.0606, 0.7141)
    gamma = b"curv" + b"\0" * 4 + struct.pack(">I", 1) + struct.pack(">H", int(2.2 * 256))
    description = b"desc" + b"\0" * 4 + struct.pack(">I", 8) + b"swapped\0" + b"\0" * 79
    tags = [(b"desc", description), (b"wtpt", _xyz_tag(0.9642, 1.0, 0.8249)),
            (b"rXYZ", _xyz_tag(*red)), (b"gXYZ", _xyz_tag(*green)), (b"bXYZ", _xyz_tag(*blue)),
            (b"rTRC", gamma), (b"gTRC", gamma), (b"bTRC", gamma)]
    offset = 128 + 4 + 12 * len(tags)
    table, data = b"", b""
    for signature, body in tags:
        body += b"\0" * (-len(body) % 4)
        table += signature + struct.pack(">II", offset + len(data), len(body))
        data += body
    size = offset + len(data)
    header = (struct.pack(">I", size) + b"lcms" + struct.pack(">I", 0x02100000) + b"mntr"
              + b"RGB " + b"XYZ " + b"\0" * 12 + b"acsp" + b"\0" * 28   # ... rendering intent
              + _s15f16(0.9642) + _s15f16(1.0) + _s15f16(0.8249) + b"\0" * 48)  # D50, ...
    return header + struct.pack(">I", len(tags)) + table + data


def text_page(lines: list[list[str]], size: int = 28, margin: int = 24,
              line_gap: int = 22, word_gap: int = 22, font_path: str = "") -> Image.Image:
    """Black words on white, in Pillow's built-in font (FreeType Aileron) or the TrueType file
    ``font_path`` at ``size`` px: each inner list is one line; the page is as big as the words
    need."""
    from PIL import ImageFont

    font = ImageFont.truetype(font_path, size) if font_path else ImageFont.load_default(size=size)
    widths = [sum(font.getlength(word) for word in line) + word_gap * (len(line) - 1)
              for line in lines]
    image = Image.new("RGB", (int(max(widths)) + 2 * margin,
                              len(lines) * (size + line_gap) + 2 * margin), "white")
    draw = ImageDraw.Draw(image)
    for row, line in enumerate(lines):
        x = margin
        for word in line:
            draw.text((x, margin + row * (size + line_gap)), word, font=font, fill="black")
            x += font.getlength(word) + word_gap
    return image


#: Fonts of Debian packages (fonts-dejavu-core, fonts-liberation) a drawn letter cycles through.
LETTER_FONTS = ("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
                "/usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf",
                "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
                "/usr/share/fonts/truetype/liberation/LiberationSerif-Regular.ttf",
                "/usr/share/fonts/truetype/liberation/LiberationMono-Regular.ttf")
#: Text sizes of a drawn letter's lines, pixels (the issue's 20-44 px printed words).
LETTER_SIZES = (20, 24, 28, 32, 36, 40, 44)
#: The letter the tests draw (written for this project).
LETTER = ("Dear Margaret, thank you for the parcel that arrived on Monday morning. The garden "
          "looks wonderful after the rain and the apple trees are full of blossom. We plan to "
          "visit the harbour on 14 June and stay two nights at the small hotel near the "
          "station. Please send the new address of your office and the phone number of the "
          "library. With warm regards from all of us, Thomas")


def letter_page(text: str = LETTER, angle: int = 0, skew: float = 0.0, seed: int = 0,
                width: int = 1100, margin: int = 50) -> tuple[Image.Image, list]:
    """A drawn letter with known word boxes: black words on white, each line in one of
    :data:`LETTER_FONTS` at one of :data:`LETTER_SIZES` (picked by ``seed``), wrapped at
    ``width``; then skewed ``skew`` degrees (counter-clockwise, the page grown to hold it) and
    turned ``angle`` degrees clockwise (0, 90, 180, 270).

    Returns:
        ``(image, words)``: the RGB page, and per word ``(text, points)`` with ``points`` the
        4 corners ``[x, y]`` of the word's ink box in the image's pixels, clockwise from the
        word's own top-left.
    """
    import random

    from PIL import ImageFont

    rng = random.Random(seed)
    lines, bottom = _wrapped(text, lambda: ImageFont.truetype(rng.choice(LETTER_FONTS),
                                                              rng.choice(LETTER_SIZES)),
                             margin, width - margin, margin)
    page = Image.new("L", (width, bottom + margin), 255)
    return _skewed_and_turned(page, _drawn(page, lines), skew, angle)


def _wrapped(text: str, next_font, left: float, right: float, top: float,
             pitch: float = 1.5) -> tuple[list, int]:
    """``text`` wrapped between ``left`` and ``right`` from ``top`` (pixels), each line in
    ``next_font()``, lines ``pitch`` font heights apart: ``([(font, [(word, x)], y)], bottom)``."""
    tokens = text.split()
    lines, y = [], top
    while tokens:
        font = next_font()
        space = font.getlength(" ")
        line, x = [], left
        while tokens and (not line or x + font.getlength(tokens[0]) <= right):
            line.append((tokens[0], x))
            x += font.getlength(tokens.pop(0)) + space
        lines.append((font, line, y))
        ascent, descent = font.getmetrics()
        y += int(pitch * (ascent + descent))
    return lines, int(y)


def _drawn(page: Image.Image, lines: list) -> list:
    """Draws :func:`_wrapped`'s lines on ``page``: ``[(word, ink corners)]`` in their order."""
    draw = ImageDraw.Draw(page)
    return [(word, _ink_box(draw, page.size, (x, top), word, font))
            for font, line, top in lines for word, x in line]


def _skewed_and_turned(page: Image.Image, placed: list, skew: float, angle: int,
                       nearest: bool = False) -> tuple[Image.Image, list]:
    """A drawn ``L`` page skewed ``skew`` degrees counter-clockwise (grown to hold it;
    bicubic, or with ``nearest`` the nearest pixel, as Pillow's ``rotate`` does by default)
    and turned ``angle`` degrees clockwise, with its words' ``(text, corners)`` mapped along:
    :func:`letter_page`'s return value."""
    import cv2
    import numpy as np
    from ocr_pipeline.orientation import from_upright

    pixels = np.asarray(page)
    height, width = pixels.shape
    matrix = cv2.getRotationMatrix2D((width / 2, height / 2), skew, 1.0)
    cos, sin = abs(matrix[0, 0]), abs(matrix[0, 1])
    grown = (int(np.ceil(width * cos + height * sin)), int(np.ceil(width * sin + height * cos)))
    matrix[:, 2] += (grown[0] - width) / 2, (grown[1] - height) / 2
    pixels = cv2.warpAffine(pixels, matrix, grown, borderValue=255,
                            flags=cv2.INTER_NEAREST if nearest else cv2.INTER_CUBIC)
    turned = np.ascontiguousarray(np.rot90(pixels, k=-(angle // 90)))
    words = []
    for word, corners in placed:
        points = np.hstack([np.asarray(corners, float), np.ones((4, 1))]) @ matrix.T
        points = from_upright(points, angle, turned.shape[1], turned.shape[0])
        words.append((word, np.round(points, 1).tolist()))
    return Image.fromarray(turned).convert("RGB"), words


def _ink_box(draw: ImageDraw.ImageDraw, size: tuple[int, int], xy: tuple[float, float],
             word: str, font) -> list:
    """Draws ``word`` at ``xy`` and gives the 4 corners of its ink, clockwise from top-left."""
    ink = Image.new("L", size, 0)
    ImageDraw.Draw(ink).text(xy, word, font=font, fill=255)
    left, upper, right, lower = ink.getbbox() or draw.textbbox(xy, word, font=font)
    draw.text(xy, word, font=font, fill=0)
    return [[left, upper], [right, upper], [right, lower], [left, lower]]


#: An invoice table's items, each with one price (written for this project).
TABLE_ITEMS = (("Garden twine 100 m", 3.20), ("Labels, pack of 50", 2.75),
               ("Watering can 10 litres", 14.99), ("Seed trays, large", 1.10),
               ("Printer paper A4", 4.50), ("Desk lamp", 189.99), ("Stapler", 12.00),
               ("Pencils, box of 12", 0.95))


def table_page(items=TABLE_ITEMS, rows: int = 6, seed: int = 0, skew: float = 0.0,
               angle: int = 0, width: int = 2000, margin: int = 80) -> tuple[Image.Image, list]:
    """A drawn invoice table with known word boxes: a header (Description, Qty, Unit price,
    Amount) and ``rows`` of ``items`` (picked by ``seed``) with a single-digit quantity, the
    numbers right-aligned in their columns, one of :data:`LETTER_FONTS` at 28-36 px and a row
    spacing of 1.3-1.8 lines (by ``seed``); skewed and turned as :func:`letter_page`.

    Returns:
        :func:`letter_page`'s ``(image, words)``, the words row by row, left to right, so
        :func:`letter_lines` gives the rows' cells as lines.
    """
    import random

    from PIL import ImageFont

    rng = random.Random(seed)
    font = ImageFont.truetype(rng.choice(LETTER_FONTS), rng.choice((28, 32, 36)))
    pitch = int(font.size * rng.choice((1.3, 1.5, 1.8)))
    right_edges = (width // 2, width // 2 + 350, width - margin)   # Qty, Unit price, Amount
    table = [("Description", "Qty", "Unit price", "Amount")]
    for name, price in rng.sample(list(items), rows):
        quantity = rng.randint(1, 9)
        table.append((name, str(quantity), f"{price:.2f}", f"{quantity * price:.2f}"))
    page = Image.new("L", (width, 2 * margin + pitch * len(table)), 255)
    draw = ImageDraw.Draw(page)
    placed = []
    for row, cells in enumerate(table):
        top = margin + row * pitch
        starts = [margin] + [edge - font.getlength(cell) for edge, cell in zip(right_edges,
                                                                               cells[1:])]
        for cell, x in zip(cells, starts):
            for word in cell.split():
                placed.append((word, _ink_box(draw, page.size, (x, top), word, font)))
                x += font.getlength(word + " ")
    return _skewed_and_turned(page, placed, skew, angle)


#: An invoice a first user drew (written for this project): its columns start at fixed x.
INVOICE_ROWS = (("Description", "Qty", "Unit price", "Amount"),
                ("Widget assembly", "3", "12.50", "37.50"),
                ("Copper cable 10m", "2", "8.00", "16.00"),
                ("Mounting bracket", "5", "4.20", "21.00"),
                ("Service fee", "1", "60.00", "60.00"),
                ("Spare fuse pack", "7", "1.10", "7.70"))


def invoice_page(rows=INVOICE_ROWS, lefts=(60, 900, 1200, 1600), width: int = 2000,
                 font_path: str = LETTER_FONTS[0], size: int = 32, pitch: int = 70,
                 skew: float = 0.0) -> tuple[Image.Image, list]:
    """A table whose columns start at ``lefts`` (left-aligned cells, as a user lays one out),
    rows ``pitch`` px apart in ``font_path`` at ``size`` px, skewed as :func:`letter_page`
    but to the nearest pixel (as the user's Pillow ``rotate`` did).

    Returns:
        :func:`letter_page`'s ``(image, words)``, the words row by row, left to right.
    """
    from PIL import ImageFont

    font = ImageFont.truetype(font_path, size)
    page = Image.new("L", (width, 100 + len(rows) * pitch), 255)
    draw = ImageDraw.Draw(page)
    placed = []
    for row, cells in enumerate(rows):
        for cell, x in zip(cells, lefts):
            for word in cell.split():
                placed.append((word, _ink_box(draw, page.size, (x, 40 + row * pitch), word,
                                              font)))
                x += font.getlength(word + " ")
    return _skewed_and_turned(page, placed, skew, 0, nearest=True)


#: Two columns of prose the tests draw (written for this project).
COLUMNS = ("The village hall opens again on the first Saturday of May after a winter of repairs. "
           "New windows keep the heat in, the stage has a wooden floor and the kitchen can "
           "serve tea for eighty people. Volunteers painted the walls in a pale green chosen "
           "by the school children, and the old clock above the door strikes the hour once "
           "more. Bookings for weddings and concerts are taken by the secretary.",
           "The garden club meets in the small room every second Tuesday at seven. This "
           "season we swap seeds, prune the orchard behind the church and plan a show of "
           "roses for July. Members bring their own tools and a cup. Children are welcome "
           "with an adult, and the first visit costs nothing. Write to the club at the hall "
           "or leave a note in the box by the gate.")


def columns_page(columns=COLUMNS, title: str = "News from the hall", seed: int = 0,
                 skew: float = 0.0, angle: int = 0, width: int = 2000, margin: int = 80
                 ) -> tuple[Image.Image, list]:
    """A drawn page with known word boxes: a title across the page, then two columns of prose
    (``columns``, left then right), then a last line across the page. One of
    :data:`LETTER_FONTS` per page; by ``seed``, each column's own size (20-36 px, so their
    lines rarely share a baseline), line pitch (1.3-1.7 font heights) and a gutter of 1.2-2.5
    font sizes between them; skewed and turned as :func:`letter_page`.

    Returns:
        :func:`letter_page`'s ``(image, words)`` in reading order: the title, the left column,
        the right column, the last line.
    """
    import random

    from PIL import ImageFont

    rng = random.Random(seed)
    face = rng.choice(LETTER_FONTS)
    sizes = [rng.choice((20, 24, 28, 32, 36)) for _ in columns]
    gutter = rng.choice((1.2, 1.6, 2.5)) * max(sizes)
    middle = width / 2
    title, top = _wrapped(title, lambda: ImageFont.truetype(face, 2 * max(sizes)),
                          margin, width - margin, margin)
    edges = ((margin, middle - gutter / 2), (middle + gutter / 2, width - margin))
    wrapped = [_wrapped(text, lambda size=size: ImageFont.truetype(face, size), left, right,
                        top, pitch=rng.choice((1.3, 1.5, 1.7)))
               for text, size, (left, right) in zip(columns, sizes, edges)]
    bottom = max(end for _, end in wrapped) + max(sizes)
    last, end = _wrapped("Page 4 of the spring newsletter", lambda: ImageFont.truetype(
        face, min(sizes)), margin, width - margin, bottom)
    page = Image.new("L", (width, end + margin), 255)
    lines = title + [line for column, _ in wrapped for line in column] + last
    return _skewed_and_turned(page, _drawn(page, lines), skew, angle)


def letter_lines(words: list[tuple[str, list]]) -> list[list[str]]:
    """The lines of a :func:`letter_page` as drawn, each its words' texts: the page lists its
    words in writing order, and a line starts where a word's top-left lies at or before the
    previous word's along the text's direction (the words' top sides summed, so any skew or
    turn), or as far across it from the line's first word as that word or the line's tallest
    is high (the next column's first line, higher up)."""
    dx = sum(points[1][0] - points[0][0] for _, points in words)
    dy = sum(points[1][1] - points[0][1] for _, points in words)
    length = math.hypot(dx, dy) or 1.0
    dx, dy = dx / length, dy / length
    lines: list[list[str]] = []
    previous = first = math.inf
    tallest = 0.0
    for text, points in words:
        (x0, y0), _, _, (x3, y3) = points
        along, across = x0 * dx + y0 * dy, y0 * dx - x0 * dy
        height = math.hypot(x3 - x0, y3 - y0)
        if along <= previous or abs(across - first) >= max(tallest, height):
            lines.append([])
            first, tallest = across, 0.0
        lines[-1].append(text)
        previous, tallest = along, max(tallest, height)
    return lines
