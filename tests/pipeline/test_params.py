"""Parameters read from Triton's optional input tensors (ocr_pipeline.params)."""

import numpy as np
import pytest

from ocr_contract.parameters import LONG_SIDE, REFINE, TEXT_THRESHOLD, ParameterError
from ocr_pipeline import params


def test_an_absent_input_is_the_contracts_default():
    assert params.read(TEXT_THRESHOLD, None) == 0.7
    assert params.read(LONG_SIDE, None) == 1280
    assert params.read(REFINE, None) is True


def test_values_are_converted_and_checked():
    assert params.read(TEXT_THRESHOLD, np.array([0.5], np.float32)) == 0.5
    assert params.read(LONG_SIDE, np.array([640], np.int32)) == 640
    assert params.read(REFINE, np.array([False])) is False
    with pytest.raises(ParameterError, match=r"long_side must be in \[64, 2560\], got 9000"):
        params.read(LONG_SIDE, np.array([9000], np.int32))
