"""Encoded image bytes -> the CRAFT input tensor.

The steps and their order follow the reference pipeline that produced
``tests/data/reference/`` (see ``tests/data/SOURCES.md``): decode, EXIF transpose, composite
any alpha over white, convert to RGB, resize so the long side equals ``long_side`` with
bilinear interpolation (OpenCV ``INTER_LINEAR``), pad with zero pixels to a multiple of 32,
then normalise with the ImageNet mean and standard deviation.
"""

from __future__ import annotations

import io
import warnings
from dataclasses import dataclass

import cv2
import numpy as np
from ocr_contract.formats import ACCEPTED_FORMATS
from PIL import Image, ImageCms, ImageOps

from .params import IMAGENET_MEAN, IMAGENET_STD, PAD_MULTIPLE

try:  # HEIC/HEIF (phone photos) decode through the pillow-heif plugin when it is installed.
    from pillow_heif import register_heif_opener
except ImportError:  # pragma: no cover - pillow-heif is a declared dependency
    register_heif_opener = None
else:
    register_heif_opener()

_SRGB_PROFILE = ImageCms.createProfile("sRGB")
_ALPHA_MODES = {"RGBA", "LA", "RGBa", "La"}


class ImageDecodeError(ValueError):
    """The bytes are not an image Pillow can fully decode (truncated, corrupt, unsupported)."""


class ImageTooLargeError(ValueError):
    """The image declares more pixels than the configured cap (a decompression bomb)."""


@dataclass(frozen=True)
class PreparedImage:
    """The CRAFT input for one image and what is needed to map boxes back.

    Attributes:
        tensor: float32 array ``[1, 3, H, W]``, normalised RGB, ``H`` and ``W`` multiples of 32.
        ratio: resize factor applied to the upright original (resized = original * ratio).
        width: upright original width in pixels (after EXIF transpose).
        height: upright original height in pixels (after EXIF transpose).
        original: uint8 ``[height, width, 3]`` RGB, the upright original at full resolution
            (what text lines are cropped from).
    """

    tensor: np.ndarray
    ratio: float
    width: int
    height: int
    original: np.ndarray


def decode_image(data: bytes, max_pixels: int | None = None) -> Image.Image:
    """Decode encoded image bytes into an upright 8-bit RGB Pillow image.

    Reads the contract's accepted formats only (:data:`ocr_contract.formats.ACCEPTED_FORMATS`:
    Pillow's other readers never see untrusted bytes); multi-frame files (GIF, TIFF) give
    their first frame. EXIF orientations 1-8 are applied, embedded ICC profiles are converted
    to sRGB, and transparency is composited over white (black would hide dark text).

    Args:
        data: the encoded file, exactly as uploaded.
        max_pixels: refuse images declaring more than this many pixels before decoding them.

    Raises:
        ImageTooLargeError: width * height exceeds ``max_pixels``.
        ImageDecodeError: the bytes cannot be decoded completely.
    """
    try:
        with warnings.catch_warnings():
            # The explicit max_pixels check below replaces Pillow's warning; Pillow's own
            # error (past twice its default limit) is still mapped to ImageTooLargeError.
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(data), formats=ACCEPTED_FORMATS)
            if max_pixels is not None and image.width * image.height > max_pixels:
                raise ImageTooLargeError(
                    f"image is {image.width}x{image.height}, more than {max_pixels} pixels"
                )
            image.load()
            image = ImageOps.exif_transpose(image)
            return to_rgb(image)
    except ImageTooLargeError:
        raise
    except Image.DecompressionBombError as exc:
        raise ImageTooLargeError(str(exc)) from exc
    except Exception as exc:  # noqa: BLE001 - malformed files make Pillow raise nearly anything
        raise ImageDecodeError(f"cannot decode image: {exc}") from exc


def to_rgb(image: Image.Image) -> Image.Image:
    """Convert any Pillow mode (RGBA, LA, P, L, I;16, I, F, CMYK, YCbCr, ...) to 8-bit RGB.

    16-bit and 32-bit grayscale are scaled to 0..255 rather than clipped. An embedded ICC
    profile is converted to sRGB so colours (and CMYK separations) come out right.
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
        canvas = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
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
        scaled = array.astype(np.float64) / 257.0
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


def resize_and_pad(rgb: np.ndarray, long_side: int, square_canvas: bool = False):
    """Resize an ``[H, W, 3]`` uint8 image so its long side is ``long_side``, then pad.

    The resize uses OpenCV bilinear interpolation with target size ``int(side * ratio)``, as the
    reference CRAFT pipeline does. Padding adds zero pixels on the right and bottom up to a
    multiple of 32; with ``square_canvas`` the canvas is ``long_side`` x ``long_side`` (rounded
    up to 32) for every image, so that requests can share a batch.

    Returns:
        (padded float32 ``[H32, W32, 3]`` in 0..255, ratio resized/original).
    """
    height, width = rgb.shape[:2]
    ratio = long_side / max(height, width)
    target_h, target_w = max(1, int(height * ratio)), max(1, int(width * ratio))
    resized = cv2.resize(rgb, (target_w, target_h), interpolation=cv2.INTER_LINEAR)
    if square_canvas:
        canvas_h = canvas_w = _round_up(long_side, PAD_MULTIPLE)
    else:
        canvas_h, canvas_w = _round_up(target_h, PAD_MULTIPLE), _round_up(target_w, PAD_MULTIPLE)
    padded = np.zeros((canvas_h, canvas_w, 3), dtype=np.float32)
    padded[:target_h, :target_w] = resized
    return padded, ratio


def normalize(padded: np.ndarray) -> np.ndarray:
    """ImageNet-normalise an ``[H, W, 3]`` 0..255 RGB array into a float32 ``[1, 3, H, W]``."""
    mean = np.array(IMAGENET_MEAN, dtype=np.float32) * 255.0
    std = np.array(IMAGENET_STD, dtype=np.float32) * 255.0
    chw = ((padded - mean) / std).transpose(2, 0, 1)
    return np.ascontiguousarray(chw[np.newaxis], dtype=np.float32)


def prepare_image(data: bytes, long_side: int, max_pixels: int | None = None,
                  square_canvas: bool = False) -> PreparedImage:
    """Run the whole preprocessing for one encoded image.

    Raises:
        ImageDecodeError, ImageTooLargeError: see :func:`decode_image`.
    """
    image = decode_image(data, max_pixels=max_pixels)
    original = np.asarray(image)
    padded, ratio = resize_and_pad(original, long_side, square_canvas=square_canvas)
    return PreparedImage(normalize(padded), ratio, image.width, image.height, original)


def _round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple
