"""The batched flavour: square canvas + dynamic batching, with a real Triton. Concurrent
requests are merged into batches, and the boxes are the same as one request at a time."""

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from ocr_inference.requests import build_inputs

from tests.helpers import IMAGES, running_triton

pytestmark = [pytest.mark.triton, pytest.mark.slow]
NAMES = ["korean.png", "img_1.jpg", "idcard.png", "english.png"]  # four aspect ratios


@pytest.fixture(scope="module")
def batched_triton(tmp_path_factory):
    with running_triton(tmp_path_factory, "batched", flavour="batched", cache_bytes=0) as server:
        yield server


def detect(url: str, name: str):
    client = grpcclient.InferenceServerClient(url)
    try:
        result = client.infer("ensemble_ocr", build_inputs((IMAGES / name).read_bytes(),
                                                           {"long_side": 640, "recognize": False}))
        return result.as_numpy("BOXES"), result.as_numpy("SCORES")
    finally:
        client.close()


def batch_counts(url: str, model: str) -> tuple[int, int]:
    """(images inferred, executions) of ``model`` so far, from Triton's statistics."""
    client = grpcclient.InferenceServerClient(url)
    stats = client.get_inference_statistics(model, as_json=True)["model_stats"][0]
    client.close()
    return int(stats.get("inference_count", 0)), int(stats.get("execution_count", 0))


def test_concurrent_requests_are_batched_with_identical_boxes(batched_triton):
    url = batched_triton.grpc_url
    one_at_a_time = [detect(url, name) for name in NAMES]
    inferred_before, executions_before = batch_counts(url, "craft")

    with ThreadPoolExecutor(max_workers=8) as pool:
        together = list(pool.map(lambda name: detect(url, name), NAMES * 2))

    inferred, executions = batch_counts(url, "craft")
    assert inferred - inferred_before == 8
    assert executions - executions_before < 8          # some executions carried > 1 image
    for (boxes, scores), (alone_boxes, alone_scores) in zip(together, one_at_a_time * 2):
        np.testing.assert_array_equal(boxes, alone_boxes)
        np.testing.assert_array_equal(scores, alone_scores)
