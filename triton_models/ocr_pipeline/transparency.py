"""The colour transparent pixels are composited over, so that text of any colour stays readable.

A page, a photo or a logo with transparent corners is composited over white, as a browser or
a printer shows it (and as the reference boxes in ``tests/data/reference/`` were made). But
white text on a transparent background (a dark-mode screenshot, a caption layer) would vanish
over white: when transparency *is* the image's background, the background is the one of black
and white that contrasts more with what is drawn.

The rule (:func:`background_for`):

1. transparency is the background when at least :data:`TRANSPARENT_SHARE` of the pixels are
   mostly transparent (alpha < 128); otherwise white;
2. then black when the visible pixels are light: their mean relative luminance (WCAG 2,
   linear-light sRGB, weighted by alpha) is above :data:`LIGHT_LUMINANCE`, where black gives
   a higher WCAG contrast ratio than white; otherwise white.

Ordinary dark text on a transparent background stays on white.
"""

from __future__ import annotations

import math

import numpy as np
from PIL import Image

WHITE = (255, 255, 255, 255)
BLACK = (0, 0, 0, 255)
#: Share of mostly transparent pixels from which transparency is taken as the background.
TRANSPARENT_SHARE = 0.5
#: Relative luminance at which black and white give the same WCAG contrast ratio:
#: (L + 0.05) / 0.05 = 1.05 / (L + 0.05), so L = sqrt(1.05 * 0.05) - 0.05 = 0.179.
LIGHT_LUMINANCE = math.sqrt(1.05 * 0.05) - 0.05
#: At most about this many pixels are looked at (a regular subsample of larger images).
SAMPLE_PIXELS = 1_000_000
#: WCAG 2 relative-luminance weights of linear R, G, B (ITU-R BT.709 primaries).
_LUMINANCE_WEIGHTS = np.array([0.2126, 0.7152, 0.0722], dtype=np.float32)


def _linear(srgb: np.ndarray) -> np.ndarray:
    """sRGB values in 0..1 to linear light (IEC 61966-2-1 transfer function)."""
    return np.where(srgb <= 0.04045, srgb / 12.92, ((srgb + 0.055) / 1.055) ** 2.4)


def background_for(rgba: Image.Image) -> tuple[int, int, int, int]:
    """The RGBA colour to composite ``rgba`` over: :data:`WHITE` or :data:`BLACK` (see the
    module's rule).

    Args:
        rgba: an ``RGBA`` image, any size.
    """
    pixels = np.asarray(rgba)
    height, width = pixels.shape[:2]
    step = max(1, math.isqrt(height * width // SAMPLE_PIXELS))
    sample = pixels[::step, ::step]
    alpha = sample[..., 3].astype(np.float32) / 255.0
    if (alpha < 0.5).mean() < TRANSPARENT_SHARE or not alpha.any():
        return WHITE
    luminance = _linear(sample[..., :3].astype(np.float32) / 255.0) @ _LUMINANCE_WEIGHTS
    mean = float((luminance * alpha).sum() / alpha.sum())
    return BLACK if mean > LIGHT_LUMINANCE else WHITE
