"""The recognizer served by Triton reads exactly what the same ONNX file, in the precision the
server chose, reads in-process."""

import json

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from django.conf import settings

from ocr_contract.tensors import RECOGNIZER_INPUT, RECOGNIZER_MODEL, RECOGNIZER_OUTPUTS
from ocr_inference.triton_metrics import engine_info
from ocr_pipeline import engines, imaging, recognition
from ocr_pipeline.precision import load_engine
from tests.helpers import DATA, IMAGES

pytestmark = [pytest.mark.triton, pytest.mark.quality]
VERSION = settings.TRITON_MODEL_REPOSITORY / RECOGNIZER_MODEL / "1"


def crops(name: str) -> list[np.ndarray]:
    image = np.asarray(imaging.decode_image((IMAGES / name).read_bytes()))
    boxes = json.loads((DATA / "reference" / "craft_boxes_1280.json").read_text())[name]["boxes"]
    height, width = image.shape[:2]
    return [recognition.crop_box(image, recognition.expand_box(np.array(b, np.float32),
                                                               width, height)) for b in boxes]


def served_precision(metrics_url: str, model: str) -> str:
    """The precision a served cpu-flavour network runs in, from its ``ocr_engine_info``
    description (``"openvino 2026.4.1 INT8 LATENCY (auto: ...)"`` -> ``"int8"``)."""
    words = engine_info(metrics_url)[f"{model} v1"].split()
    return words[2].lower() if words[0] == "openvino" else "fp32"


def test_triton_and_in_process_read_the_same_strings(triton):
    classes = recognition.load_dictionary(VERSION / "dict.txt")
    precision = served_precision(triton.metrics_url, RECOGNIZER_MODEL)
    local = load_engine(str(VERSION / "model.onnx"), engines.EngineOptions(precision=precision))
    client = grpcclient.InferenceServerClient(triton.grpc_url)
    lines = crops("english.png") + crops("idcard.png")
    served, in_process = [], []
    for batch in recognition.plan_batches([recognition.resized_width(c) for c in lines], 32):
        tensor = recognition.batch_tensor([lines[i] for i in batch])
        request = grpcclient.InferInput(RECOGNIZER_INPUT, list(tensor.shape), "FP32")
        request.set_data_from_numpy(tensor)
        result = client.infer(RECOGNIZER_MODEL, [request])
        served += [r.text for r in recognition.ctc_greedy(
            *(result.as_numpy(name) for name in RECOGNIZER_OUTPUTS), classes)]
        output = local({RECOGNIZER_INPUT: tensor})
        in_process += [r.text for r in recognition.ctc_greedy(
            *(output[name] for name in RECOGNIZER_OUTPUTS), classes)]
    client.close()
    assert len(served) == 31
    assert served == in_process
    assert "Clean hands with soap and water" in served
