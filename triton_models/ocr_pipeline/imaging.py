"""Encoded image bytes -> the CRAFT input tensor.

The steps and their order follow the reference pipeline that produced
``tests/data/reference/`` (see ``tests/data/SOURCES.md``): decode, EXIF transpose, composite
any alpha over white (black under light text on a transparent background:
:mod:`ocr_pipeline.transparency`), convert to RGB, resize so the long side equals ``long_side`` with
bilinear interpolation (OpenCV ``INTER_LINEAR``), pad with zero pixels to a multiple of 32.
The last step, normalising with the ImageNet mean and standard deviation, is inside CRAFT's
graph (:func:`ocr_pipeline.onnx_edits.uint8_image_input`): the tensor stays uint8.
"""

from __future__ import annotations

import io
import math
import os
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, replace

import cv2
import numpy as np
from ocr_contract.formats import ACCEPTED_FORMATS, is_pdf
from ocr_contract.limits import PDF_DPI, PDF_RENDER_TIMEOUT_MS
from ocr_contract.parameters import LONG_SIDE
from ocr_contract.settings import read_str
from PIL import Image, ImageCms, ImageOps

from . import pdf_pages
from .params import PAD_MULTIPLE
from .transparency import background_for

try:  # HEIC/HEIF (phone photos) decode through the pi-heif plugin when it is installed.
    from pi_heif import register_heif_opener
except ImportError:  # pragma: no cover - pi-heif is a declared dependency
    register_heif_opener = None
else:
    register_heif_opener()

_SRGB_PROFILE = ImageCms.createProfile("sRGB")
_ALPHA_MODES = {"RGBA", "LA", "RGBa", "La"}


class ImageDecodeError(ValueError):
    """The bytes are not an image Pillow can fully decode (truncated, corrupt, unsupported)."""


class ImageTooLargeError(ValueError):
    """The image declares more pixels than the configured cap (a decompression bomb)."""


#: A PDF PDFium cannot open or render, or a page it does not have.
DocumentDecodeError = pdf_pages.PdfDecodeError
#: A PDF page that did not render in time.
DocumentTooComplexError = pdf_pages.PdfTooComplexError


@dataclass(frozen=True)
class PreparedImage:
    """The CRAFT input for one image and what is needed to map boxes back.

    Attributes:
        tensor: uint8 ``[1, H, W, 3]`` RGB, the resized image zero-padded on the right and
            bottom, ``H`` and ``W`` multiples of 32 (CRAFT's graph normalises it).
        ratio: resize factor applied to the upright original (resized = original * ratio).
        width: upright original width in pixels (after EXIF transpose).
        height: upright original height in pixels (after EXIF transpose).
        original: uint8 ``[height, width, 3]`` RGB, the upright original at full resolution
            (what text lines are cropped from); None when it was not asked for.
    """

    tensor: np.ndarray
    ratio: float
    width: int
    height: int
    original: np.ndarray | None


#: A JPEG decoded at reduced size stays at least this many times the resize target: the final
#: bilinear resize still averages over several decoded pixels, and an image less than 1.5x
#: the target (a 1280-pixel photo at long side 640) is decoded in full.
DRAFT_MARGIN = 1.5

#: EXIF orientations that swap width and height (rotations by 90 or 270 degrees).
_TRANSPOSED_ORIENTATIONS = {5, 6, 7, 8}


def open_image(data: bytes, max_pixels: int | None = None) -> Image.Image:
    """Open encoded bytes with the accepted formats' readers, reading the header only.

    Raises:
        ImageTooLargeError: width * height exceeds ``max_pixels``.
        ImageDecodeError: the header cannot be read.
    """
    try:
        with warnings.catch_warnings():
            # The explicit max_pixels check below replaces Pillow's warning; Pillow's own
            # error (past twice its default limit) is still mapped to ImageTooLargeError.
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(data), formats=ACCEPTED_FORMATS)
    except Image.DecompressionBombError as exc:
        raise ImageTooLargeError(str(exc)) from exc
    except Exception as exc:  # noqa: BLE001 - malformed files make Pillow raise nearly anything
        raise ImageDecodeError(f"cannot decode image: {exc}") from exc
    if max_pixels is not None and image.width * image.height > max_pixels:
        raise ImageTooLargeError(
            f"image is {image.width}x{image.height}, more than {max_pixels} pixels")
    return image


def finish_decoding(image: Image.Image) -> Image.Image:
    """Decode an opened image's pixels into an upright 8-bit RGB image.

    Multi-frame files (GIF, TIFF) give their first frame. EXIF orientations 1-8 are applied,
    embedded ICC profiles are converted to sRGB, and transparency is composited over white
    (black under light text on a transparent background, :func:`to_rgb`).

    Raises:
        ImageDecodeError: the pixels cannot be decoded completely.
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            image.load()
            return to_rgb(ImageOps.exif_transpose(image))
    except Exception as exc:  # noqa: BLE001 - malformed files make Pillow raise nearly anything
        raise ImageDecodeError(f"cannot decode image: {exc}") from exc


def decode_image(data: bytes, max_pixels: int | None = None) -> Image.Image:
    """Decode encoded image bytes into an upright 8-bit RGB Pillow image, at full resolution.

    Reads the contract's accepted formats only (:data:`ocr_contract.formats.ACCEPTED_FORMATS`:
    Pillow's other readers never see untrusted bytes); see :func:`finish_decoding`.

    Args:
        data: the encoded file, exactly as uploaded.
        max_pixels: refuse images declaring more than this many pixels before decoding them.

    Raises:
        ImageTooLargeError: width * height exceeds ``max_pixels``.
        ImageDecodeError: the bytes cannot be decoded completely.
    """
    return finish_decoding(open_image(data, max_pixels))


def upright_size(image: Image.Image) -> tuple[int, int]:
    """``(width, height)`` of an opened JPEG once EXIF-transposed, from its header (for a
    PNG, ``getexif`` would decode the whole file to find a late eXIf chunk)."""
    width, height = image.size
    orientation = image.getexif().get(0x0112, 1)
    return (height, width) if orientation in _TRANSPOSED_ORIENTATIONS else (width, height)


def to_rgb(image: Image.Image) -> Image.Image:
    """Convert any Pillow mode (RGBA, LA, P, L, I;16, I, F, CMYK, YCbCr, ...) to 8-bit RGB.

    16-bit and 32-bit grayscale are scaled to 0..255 rather than clipped. An embedded ICC
    profile is converted to sRGB so colours (and CMYK separations) come out right.
    Transparency is composited over white, or over black when it is the background of light
    text (:func:`~ocr_pipeline.transparency.background_for`).
    """
    if image.mode in ("P", "PA", "1"):
        has_alpha = image.mode == "PA" or "transparency" in image.info
        image = image.convert("RGBA" if has_alpha else "RGB")
    if image.mode in ("I;16", "I;16B", "I;16L", "I;16N", "I", "F"):
        image = _high_depth_to_l(image)
    icc = image.info.get("icc_profile")
    if icc and image.mode in ("RGB", "RGBA", "CMYK", "L", "LA"):
        image = _icc_to_srgb(image, icc)
    if image.mode in _ALPHA_MODES:
        rgba = image.convert("RGBA")
        # White, or black under light text on a transparent background (transparency.py).
        canvas = Image.new("RGBA", rgba.size, background_for(rgba))
        canvas.alpha_composite(rgba)
        image = canvas
    return image.convert("RGB") if image.mode != "RGB" else image


def _high_depth_to_l(image: Image.Image) -> Image.Image:
    """16-bit (and 32-bit integer) grayscale scaled from 0..65535 to 8-bit ``L``; float
    grayscale clipped to 0..255."""
    array = np.asarray(image)
    if image.mode == "F":
        scaled = np.clip(array, 0.0, 255.0)
    else:
        # 16-bit data (the common case: 16-bit PNG and TIFF) uses the full 0..65535 range.
        scaled = array.astype(np.float32) / np.float32(257.0)
    return Image.fromarray(np.clip(np.rint(scaled), 0, 255).astype(np.uint8), mode="L")


def _icc_to_srgb(image: Image.Image, icc: bytes) -> Image.Image:
    """Convert ``image`` from its embedded ICC profile to sRGB; leave it as is if unusable."""
    try:
        source = ImageCms.ImageCmsProfile(io.BytesIO(icc))
        has_alpha = image.mode in ("RGBA", "LA")
        out_mode = "RGBA" if has_alpha else "RGB"
        if image.mode == "LA":
            image = image.convert("RGBA")
        converted = ImageCms.profileToProfile(image, source, _SRGB_PROFILE, outputMode=out_mode)
        return converted if converted is not None else image
    except (ImageCms.PyCMSError, OSError, ValueError):
        # A broken or mismatched profile must not fail the request: the pixels are still usable.
        return image


#: Without an explicit ``long_side``, an image whose short side would fall under the working
#: long side / MAX_ASPECT is scaled so that it does not (text across a 600x4000 till roll would
#: otherwise shrink to a third: 22-pixel type to 7 pixels, below what CRAFT finds).
MAX_ASPECT = 3.0


def resized_size(width: int, height: int, long_side: int | None) -> tuple[int, int, float]:
    """``(target_w, target_h, ratio)``: the working size of a ``width`` x ``height`` image
    (sides ``int(side * ratio)``, at least 1, as the reference CRAFT pipeline rounds them).

    Args:
        long_side: a request's explicit ``long_side``: the long side becomes exactly this. None
            (the default): the long side becomes ``LONG_SIDE.default`` (1280), unless that
            leaves the short side under ``1280 / MAX_ASPECT`` (an image more than 3:1); then the
            short side becomes ``1280 / MAX_ASPECT``, and the total pixels stay within
            ``1280 x 1280`` (what a square image at the default costs). Every image up to 3:1
            (every photo, an A4 page) is sized exactly as with ``long_side=1280``.
    """
    base = long_side or LONG_SIDE.default
    ratio = base / max(height, width)
    if long_side is None and min(width, height) * ratio < base / MAX_ASPECT:
        ratio = min(base / MAX_ASPECT / min(width, height),
                    math.sqrt(base * base / (width * height)))
    return max(1, int(width * ratio)), max(1, int(height * ratio)), ratio


#: Median box height in the default working image, pixels, under which a page's print is too
#: small for CRAFT there: a lone digit's region score stays under ``text_threshold`` or its
#: blob under CRAFT's 10-pixel noise floor (drawn A4 invoices at 300 dpi, the quantity column's
#: single digits: 27/72 found at a 13-pixel median, 43/72 at 14, 72/72 at 17.5).
SMALL_PRINT_PX = 15
#: The median box height the larger working size of small print brings the page to, pixels.
PRINT_TARGET_PX = 18
#: Least boxes for a page's print to be measured: a page of text, not a photo's few signs.
SMALL_PRINT_MIN_BOXES = 20


def small_print_side(heights: np.ndarray, width: int, height: int) -> int | None:
    """The working long side for a page of small print, or None: when at least
    :data:`SMALL_PRINT_MIN_BOXES` boxes' median height at the default working size
    (:func:`resized_size` with no ``long_side``) is under :data:`SMALL_PRINT_PX`, the long
    side that brings it to :data:`PRINT_TARGET_PX`, never past the image's own long side or
    the largest ``long_side`` a request may ask (``OCR_LONG_SIDE_MAX``), a multiple of 32;
    None too when that is no larger than the default working size (a small image, upscaled).

    Args:
        heights: float ``[N]`` the boxes' heights (short sides) in the image's pixels.
        width, height: the image's size, pixels.
    """
    if len(heights) < SMALL_PRINT_MIN_BOXES:
        return None
    _, _, ratio = resized_size(width, height, None)
    median = float(np.median(heights)) * ratio
    if median >= SMALL_PRINT_PX:
        return None
    current = max(width, height) * ratio
    side = current * PRINT_TARGET_PX / max(median, 1.0)
    side = int(min(side, max(width, height), LONG_SIDE.bounds()[1])) // 32 * 32
    return side if side > current else None


#: The canvases an image is padded onto: its own size rounded up to 32 (``fit``), or a
#: ``long_side`` square so that any two requests can share a batch (``square``).
FIT_CANVAS, SQUARE_CANVAS = "fit", "square"
CANVASES = (FIT_CANVAS, SQUARE_CANVAS)


def read_canvas(parameters: Mapping[str, str], environ: Mapping[str, str] = os.environ) -> str:
    """The canvas this server pads onto: ``OCR_CANVAS`` in the environment, else the
    ``canvas`` parameter of preprocess's config (``configs/batched.pbtxt`` sets ``square``),
    else ``fit``. Read here, by preprocess, only: the recognize step's second detection of a
    turned page takes preprocess's answer from its ``CANVAS`` output.

    Raises:
        ValueError: not one of :data:`CANVASES`.
    """
    canvas = read_str("OCR_CANVAS", parameters.get("canvas", FIT_CANVAS), environ)
    if canvas not in CANVASES:
        raise ValueError(f"canvas must be 'fit' or 'square', not {canvas!r}")
    return canvas


def resize_and_pad(rgb: np.ndarray, target_w: int, target_h: int, long_side: int,
                   square_canvas: bool = False) -> np.ndarray:
    """Resize an ``[h, w, 3]`` uint8 image to ``target_w`` x ``target_h`` and zero-pad it.

    The resize is OpenCV's bilinear interpolation (``INTER_LINEAR``), as in the reference
    CRAFT pipeline. Padding adds zero pixels on the right and bottom up to a multiple of 32;
    with ``square_canvas`` the canvas is ``long_side`` x ``long_side`` (rounded up to 32) for
    every image, so that requests can share a batch.

    Returns:
        uint8 ``[1, H32, W32, 3]``.
    """
    resized = cv2.resize(rgb, (target_w, target_h), interpolation=cv2.INTER_LINEAR)
    if square_canvas:
        canvas_h = canvas_w = _round_up(long_side, PAD_MULTIPLE)
    else:
        canvas_h, canvas_w = _round_up(target_h, PAD_MULTIPLE), _round_up(target_w, PAD_MULTIPLE)
    padded = np.zeros((1, canvas_h, canvas_w, 3), dtype=np.uint8)
    padded[0, :target_h, :target_w] = resized
    return padded


def decode_page(data: bytes, page: int, max_pixels: int | None) -> Image.Image:
    """Page ``page`` (0-based) of a PDF, rendered (:mod:`ocr_pipeline.pdf_pages`, at
    ``OCR_PDF_DPI``, within ``OCR_MAX_PIXELS`` and ``OCR_PDF_RENDER_TIMEOUT_MS``), or frame
    ``page`` of a multi-page image (a TIFF), decoded; upright 8-bit RGB.

    Raises:
        DocumentDecodeError, DocumentTooComplexError: the PDF cannot be opened, lacks the page,
            or took too long to render.
        ImageDecodeError, ImageTooLargeError: see :func:`decode_image`; also a missing frame.
    """
    if is_pdf(data):
        rendered = pdf_pages.render_page(data, page, PDF_DPI.read(), max_pixels,
                                         PDF_RENDER_TIMEOUT_MS.read() / 1000.0)
        return Image.fromarray(rendered.pixels, "RGB")
    image = open_image(data, max_pixels)
    try:
        image.seek(page)
    except (EOFError, ValueError) as exc:
        raise ImageDecodeError(f"the image has no page {page + 1}") from exc
    return finish_decoding(image)


def prepare_image(data: bytes, long_side: int | None, max_pixels: int | None = None,
                  square_canvas: bool = False, keep_original: bool = True,
                  page: int = 0) -> PreparedImage:
    """Run the whole preprocessing for one encoded image (or one page of a PDF or TIFF).

    The working size is :func:`resized_size`'s (``long_side`` None: the default rule; with a
    square canvas, ``LONG_SIDE.default`` exactly, so that every image fits the canvas).

    Without ``keep_original`` (boxes only, no text to read), a JPEG much larger than the
    target is decoded at a reduced size (libjpeg's DCT scaling by 1/2, 1/4 or 1/8, through
    Pillow's ``draft``), never below :data:`DRAFT_MARGIN` times the target, then resized as
    usual: a 12 MP photo for long side 1280 decodes at half size, in a third of the time.
    Images within 1.5x of the target (every test image, at 1280 and at 640) decode in full, so
    their boxes are the reference pipeline's. The boxes are mapped to the original's pixels.

    Raises:
        ImageDecodeError, ImageTooLargeError: see :func:`decode_image`.
        DocumentDecodeError, DocumentTooComplexError: see :func:`decode_page`.
    """
    if square_canvas and long_side is None:
        long_side = LONG_SIDE.default                 # also the JPEG draft's target below
    if page or is_pdf(data):
        return _prepared(decode_page(data, page, max_pixels), None, long_side, square_canvas,
                         keep_original)
    image = open_image(data, max_pixels)
    full_size = None
    if not keep_original and image.format == "JPEG":
        full_size = upright_size(image)               # the header's, before any reduction
        target_w, target_h, _ = resized_size(*image.size, long_side)
        # Pillow picks the largest reduction that keeps the image at least this size.
        image.draft("RGB", (int(target_w * DRAFT_MARGIN), int(target_h * DRAFT_MARGIN)))
    return _prepared(finish_decoding(image), full_size, long_side, square_canvas, keep_original)


def _prepared(rgb: Image.Image, full_size: tuple[int, int] | None, long_side: int | None,
              square_canvas: bool, keep_original: bool) -> PreparedImage:
    """The CRAFT input of a decoded image; ``full_size`` is the upright size when ``rgb`` was
    decoded at a reduced size."""
    prepared = prepare_pixels(np.asarray(rgb), long_side, square_canvas, full_size)
    return prepared if keep_original else replace(prepared, original=None)


def prepare_pixels(pixels: np.ndarray, long_side: int | None, square_canvas: bool = False,
                   size: tuple[int, int] | None = None) -> PreparedImage:
    """The CRAFT input of an image already decoded upright (the working size and canvas of
    :func:`prepare_image`).

    Args:
        pixels: uint8 ``[H, W, 3]`` RGB.
        long_side: the working size's long side, pixels; None for :func:`resized_size`'s rule.
        square_canvas: pad to a ``long_side`` square (``LONG_SIDE.default`` when None).
        size: ``(width, height)`` the boxes map back to, when ``pixels`` were decoded at a
            reduced size; by default ``pixels``' own.
    """
    if square_canvas and long_side is None:
        long_side = LONG_SIDE.default
    width, height = size or (pixels.shape[1], pixels.shape[0])
    target_w, target_h, ratio = resized_size(width, height, long_side)
    tensor = resize_and_pad(pixels, target_w, target_h, long_side or LONG_SIDE.default,
                            square_canvas)
    return PreparedImage(tensor, ratio, width, height, pixels)


def _round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


def turned_png(data: bytes, angle: int) -> bytes:
    """An image file turned ``angle`` degrees clockwise, as a PNG without EXIF (what a phone
    app sends after stripping metadata; for evaluations and tests of orientation).

    Args:
        data: an encoded image in an accepted format (decoded upright, RGB, as the pipeline
            decodes it: :func:`decode_image`).
        angle: 0, 90, 180 or 270.

    Returns:
        the PNG bytes of ``np.rot90(upright, k=-angle // 90)``.
    """
    if angle not in (0, 90, 180, 270):
        raise ValueError(f"angle must be 0, 90, 180 or 270, got {angle}")
    pixels = np.rot90(np.asarray(decode_image(data)), k=-angle // 90)
    out = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(pixels)).save(out, format="PNG")
    return out.getvalue()
