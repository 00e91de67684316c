"""Constants of the CRAFT pipeline, and request parameters read from optional input tensors.

The parameters themselves (tensor names, defaults, bounds) are the contract's
(:mod:`ocr_contract.parameters`); this module only reads them out of Triton tensors.
"""

from __future__ import annotations

import numpy as np
from ocr_contract.parameters import Parameter

#: CRAFT's backbone (VGG16-BN, U-Net) downsamples by 32: inputs are padded to a multiple of it.
PAD_MULTIPLE = 32

#: CRAFT's score maps are half the input resolution.
SCORE_MAP_STRIDE = 2

#: ImageNet mean and standard deviation (RGB, 0..1), as used to train CRAFT
#: (clovaai/CRAFT-pytorch ``imgproc.normalizeMeanVariance``).
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)

_CONVERT = {"FP32": float, "INT32": int, "BOOL": bool,
            "BYTES": lambda raw: bytes(raw).decode("utf-8")}


def read(parameter: Parameter, tensor: np.ndarray | None):
    """A parameter's value from its optional ``[1]`` input: the contract's default when the
    client left the input out, else the value; checked against the parameter's bounds (limits
    read from this process's environment) and normalised by :meth:`Parameter.check`
    (``language`` becomes a tuple of codes).

    Raises:
        ocr_contract.parameters.ParameterError: out of bounds; ``field`` names the parameter.
        UnicodeDecodeError: a BYTES value that is not UTF-8.
    """
    if tensor is None:
        return parameter.check(parameter.default)
    return parameter.check(_CONVERT[parameter.dtype](tensor.reshape(-1)[0]))
