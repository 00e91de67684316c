"""Cheap image validation in the gateway: sniff the format from the bytes, read the header.

Nothing here decodes pixels or looks at orientation: the real decode (and the upright size the
answer reports) happens once, in Triton's ``preprocess`` model. The format is recognised by
Pillow's own per-format signature checks (and pi-heif's for HEIC/HEIF), never by file
name or Content-Type; the accepted formats are :data:`ocr_contract.formats.ACCEPTED_FORMATS`.
"""

from __future__ import annotations

import io
import warnings
from dataclasses import dataclass

from ocr_contract.formats import ACCEPTED_FORMATS, ACCEPTED_FORMATS_TEXT, reported_name
from PIL import Image
from pi_heif import register_heif_opener

from .. import errors

register_heif_opener()
Image.init()

#: Bytes every accepted format's signature check needs at most.
_SNIFF_BYTES = 64


@dataclass(frozen=True)
class ImageInfo:
    """What the header says: the format as the API reports it, the stored width and height
    in pixels (before any EXIF rotation), and the horizontal resolution it names in dots per
    inch (PNG's pHYs, JPEG's JFIF density in inches or centimetres, TIFF's tags, as Pillow reads
    them; None when it names none or one under :data:`MIN_DPI`). Only the first frame or page
    is looked at: counting frames would walk the whole file."""

    format: str
    width: int
    height: int
    dpi: float | None = None


#: The least resolution taken as meant (dots per inch): files written with a density of 1 (a
#: JFIF aspect ratio, a placeholder) name no real resolution.
MIN_DPI = 10.0


def named_dpi(image: Image.Image) -> float | None:
    """The horizontal resolution an opened image's header names, in dots per inch; None when
    it names none, or one under :data:`MIN_DPI`."""
    dpi = image.info.get("dpi")
    try:
        value = float(dpi[0])
    except (TypeError, ValueError, IndexError):
        return None
    return value if value >= MIN_DPI else None


def sniff_format(data: bytes) -> str | None:
    """The accepted Pillow format whose signature ``data`` starts with, else None."""
    prefix = data[:_SNIFF_BYTES]
    for name in ACCEPTED_FORMATS:
        accept = Image.OPEN[name][1]
        if accept is None or accept(prefix):
            return name
    return None


def probe_image(data: bytes, max_pixels: int, min_side: int) -> ImageInfo:
    """Validate an upload from its header alone.

    Args:
        data: the uploaded bytes.
        max_pixels: refuse images declaring more pixels than this (decompression bombs).
        min_side: refuse images narrower or lower than this many pixels.

    Raises:
        errors.UnsupportedImageFormat: empty, or not an accepted format (415).
        errors.ImageUndecodable: a supported signature but an unreadable header (400).
        errors.ImageTooLarge: more than ``max_pixels`` pixels (413).
        errors.ImageTooSmall: a side under ``min_side`` pixels (400).
    """
    fmt = sniff_format(data) if data else None
    if fmt is None:
        raise errors.UnsupportedImageFormat(
            f"The body is not an image in a supported format ({ACCEPTED_FORMATS_TEXT}).")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data), formats=[fmt]) as image:
                width, height = image.size
                dpi = named_dpi(image)
    except Image.DecompressionBombError:
        raise errors.ImageTooLarge(f"The image has more than {max_pixels} pixels.")
    except Exception as exc:  # noqa: BLE001 - malformed headers make Pillow raise nearly anything
        raise errors.ImageUndecodable(f"The {fmt} header cannot be read.") from exc
    if width * height > max_pixels:
        raise errors.ImageTooLarge(
            f"The image is {width}x{height} pixels; the limit is {max_pixels} pixels.")
    if min(width, height) < min_side:
        raise errors.ImageTooSmall(
            f"The image is {width}x{height} pixels; each side must be at least {min_side}.")
    return ImageInfo(format=reported_name(fmt), width=width, height=height, dpi=dpi)
