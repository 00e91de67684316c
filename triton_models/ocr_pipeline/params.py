"""Constants of the CRAFT pipeline and the bounds on per-request parameters.

The defaults are those of the reference CRAFT implementation (clovaai/CRAFT-pytorch
``test.py``: text_threshold 0.7, link_threshold 0.4, low_text 0.4, canvas 1280) and of the
reference outputs in ``tests/data/reference/``.
"""

import os

DEFAULT_TEXT_THRESHOLD = 0.7
DEFAULT_LINK_THRESHOLD = 0.4
DEFAULT_LOW_TEXT = 0.4
DEFAULT_LONG_SIDE = 1280
DEFAULT_REFINE = True

#: Default bounds on ``long_side`` (pixels). Below 64 CRAFT sees nothing useful; above 2560 a
#: single request needs several GB of activations.
MIN_LONG_SIDE = 64
MAX_LONG_SIDE = 2560

#: CRAFT's backbone (VGG16-BN, U-Net) downsamples by 32: inputs are padded to a multiple of it.
PAD_MULTIPLE = 32

#: CRAFT's score maps are half the input resolution.
SCORE_MAP_STRIDE = 2

#: ImageNet mean and standard deviation (RGB, 0..1), as used to train CRAFT
#: (clovaai/CRAFT-pytorch ``imgproc.normalizeMeanVariance``).
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


def threshold(value, default: float, name: str) -> float:
    """A threshold from an optional ``[1]`` tensor: ``default`` if None, else a float in (0, 1).

    Raises:
        ValueError: the value is NaN, infinite or outside the open interval (0, 1).
    """
    if value is None:
        return default
    number = float(value.reshape(-1)[0])
    if not 0.0 < number < 1.0:  # also rejects NaN
        raise ValueError(f"{name} must be in (0, 1), got {number}")
    return number


def long_side_bounds(environ=os.environ) -> tuple[int, int]:
    """``(minimum, maximum)`` of ``long_side``: ``OCR_LONG_SIDE_MIN`` / ``OCR_LONG_SIDE_MAX``
    from the environment — the same variables the gateway validates requests with — or
    :data:`MIN_LONG_SIDE` / :data:`MAX_LONG_SIDE`."""
    return (int(environ.get("OCR_LONG_SIDE_MIN") or MIN_LONG_SIDE),
            int(environ.get("OCR_LONG_SIDE_MAX") or MAX_LONG_SIDE))


def long_side(value, default: int = DEFAULT_LONG_SIDE,
              bounds: tuple[int, int] = (MIN_LONG_SIDE, MAX_LONG_SIDE)) -> int:
    """``long_side`` from an optional ``[1]`` tensor, checked against ``bounds`` (pixels).

    Raises:
        ValueError: outside ``bounds``.
    """
    if value is None:
        return default
    number = int(value.reshape(-1)[0])
    low, high = bounds
    if not low <= number <= high:
        raise ValueError(f"long_side must be in [{low}, {high}], got {number}")
    return number


def flag(value, default: bool) -> bool:
    """A boolean from an optional ``[1]`` tensor."""
    return default if value is None else bool(value.reshape(-1)[0])
