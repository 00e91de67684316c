"""Images built in the tests with Pillow and plain bytes (no generated files are committed)."""

import io
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
