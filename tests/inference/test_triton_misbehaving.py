"""A real Triton whose model breaks the ensemble's contract: the gateway answers 502
``inference_failed`` (never 500, never a hang), per image in a batch."""

import io
import textwrap

import pytest

from tests.helpers import IMAGES, running_triton

pytestmark = [pytest.mark.django_db, pytest.mark.triton, pytest.mark.slow]

BROKEN_CONFIG = """
name: "broken_ocr"
backend: "python"
max_batch_size: 0
input [ { name: "IMAGE_BYTES" data_type: TYPE_STRING dims: [ 1 ] } ]
output [
  { name: "BOXES" data_type: TYPE_FP32 dims: [ -1, 4, 2 ] },
  { name: "SCORES" data_type: TYPE_FP32 dims: [ -1 ] },
  { name: "IMAGE_SIZE" data_type: TYPE_INT32 dims: [ -1 ] },
  { name: "TEXTS" data_type: TYPE_STRING dims: [ -1 ] },
  { name: "TEXT_SCORES" data_type: TYPE_FP32 dims: [ -1 ] },
  { name: "TEXT" data_type: TYPE_STRING dims: [ 1 ] }
]
"""

BROKEN_MODEL = '''
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    """Answers with one box, no score and a one-number image size: a broken contract."""

    def execute(self, requests):
        return [pb_utils.InferenceResponse(output_tensors=[
            pb_utils.Tensor("BOXES", np.zeros((1, 4, 2), np.float32)),
            pb_utils.Tensor("SCORES", np.zeros((0,), np.float32)),
            pb_utils.Tensor("IMAGE_SIZE", np.array([7], np.int32)),
            pb_utils.Tensor("TEXTS", np.array([b"a"], dtype=object)),
            pb_utils.Tensor("TEXT_SCORES", np.zeros((1,), np.float32)),
            pb_utils.Tensor("TEXT", np.array([b"a"], dtype=object))]) for _ in requests]
'''


@pytest.fixture(scope="module")
def broken_triton(tmp_path_factory):
    repository = tmp_path_factory.mktemp("broken") / "repository"
    (repository / "broken_ocr" / "1").mkdir(parents=True)
    (repository / "broken_ocr" / "config.pbtxt").write_text(BROKEN_CONFIG)
    (repository / "broken_ocr" / "1" / "model.py").write_text(textwrap.dedent(BROKEN_MODEL))
    with running_triton(tmp_path_factory, "broken-log", repository, models=("broken_ocr",),
                        cache_bytes=0) as server:
        yield server


def test_malformed_answers_are_502_for_single_and_batch(api_client, broken_triton, settings):
    settings.TRITON_GRPC_URL, settings.TRITON_MODEL = broken_triton.grpc_url, "broken_ocr"
    korean = (IMAGES / "korean.png").read_bytes()
    single = api_client.post("/api/ocr", data=korean, content_type="image/png")
    assert (single.status_code, single.json()["error"]["code"]) == (502, "inference_failed")

    files = []
    for name in ("a.png", "b.png"):
        handle = io.BytesIO(korean)
        handle.name = name
        files.append(handle)
    batch = api_client.post("/api/ocr/batch", {"images": files}, format="multipart")
    assert batch.status_code == 200
    assert [(r["status"], r["error"]["code"]) for r in batch.json()["results"]] == \
        [(502, "inference_failed")] * 2


def test_triton_refusing_the_request_is_a_502_not_the_clients_fault(api_client, broken_triton,
                                                                       settings):
    # broken_ocr has no LONG_SIDE input: Triton answers INVALID_ARGUMENT without a model's
    # "[code]" tag. That is a deployment error (model and gateway disagree), not a bad image.
    settings.TRITON_GRPC_URL, settings.TRITON_MODEL = broken_triton.grpc_url, "broken_ocr"
    korean = (IMAGES / "korean.png").read_bytes()
    response = api_client.post("/api/ocr?long_side=640", data=korean, content_type="image/png")
    assert (response.status_code, response.json()["error"]["code"]) == (502, "inference_failed")
    settings.TRITON_MODEL = "no_such_model"
    response = api_client.post("/api/ocr", data=(IMAGES / "korean.png").read_bytes(),
                               content_type="image/png")
    assert (response.status_code, response.json()["error"]["code"]) == \
        (503, "inference_unavailable")
