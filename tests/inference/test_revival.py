"""Which model a dead Python stub belongs to, read from Triton's error messages (with a real
Triton: ``test_triton_faults.py``, a model whose stub died)."""

import pytest
from tritonclient.utils import InferenceServerException

from ocr_inference import errors
from ocr_inference.revival import dead_stub_model


@pytest.mark.parametrize("message, model", [
    # Through BLS (recognize calls the recognizer), as Triton 2.51 words it.
    ("in ensemble 'ensemble_ocr', recognizer: Stub process 'recognizer_0_0' is not healthy.",
     "recognizer"),
    # An ensemble step itself, the second instance of its group.
    ("in ensemble 'ensemble_ocr', Stub process 'recognize_0_1' is not healthy.", "recognize"),
    ("Stub process 'ocr_words_12_3' is not healthy.", "ocr_words"),
    ("in ensemble 'ensemble_ocr', Failed to process the request(s) for model instance "
     "'craft_0_0', message: out of memory", None),
    ("", None),
])
def test_the_model_of_a_dead_stub(message, model):
    assert dead_stub_model(message) == model


def test_a_dead_stub_is_unavailable_for_now_not_a_failure():
    exc = InferenceServerException(
        "in ensemble 'ensemble_ocr', recognizer: Stub process 'recognizer_0_0' is not healthy.",
        status="StatusCode.INTERNAL")
    error = errors.from_triton(exc, 30.0)
    assert isinstance(error, errors.InferenceUnavailable)
    assert error.code == "inference_unavailable"
    other = InferenceServerException("in ensemble 'ensemble_ocr', boom",
                                     status="StatusCode.INTERNAL")
    assert isinstance(errors.from_triton(other, 30.0), errors.InferenceFailed)
