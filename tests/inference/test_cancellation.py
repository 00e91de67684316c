"""Abandoned requests stop inside Triton (issue 38): a request whose client gave up (its
deadline passed, or it cancelled the call) is not read any further.

Measured with Triton 2.51: on a gRPC deadline or cancel Triton marks the ensemble request
cancelled and passes the mark to each later step's request when it schedules that step, but
neither stops the ensemble nor interrupts the step that is running, and a request already
queued for a step (behind the rate limiter) keeps running it. The Python models answer a
marked request CANCELLED without working on it (ocr_pipeline.triton_python.is_cancelled),
which ends the ensemble there; the recognize model also stops between its BLS calls when its
own request is marked (a direct call: an ensemble step's mark never changes while it runs).

The assertions are Triton's own counts (inference statistics), never times: a request that
was stopped never reaches the models after the step where it was stopped.
"""

import io
import math
import threading
import time
import uuid
from pathlib import Path

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from django.conf import settings as django_settings
from tritonclient.utils import InferenceServerException
from ocr_contract.tensors import DEADLINE_PARAMETER, ENSEMBLE
from PIL import Image, PngImagePlugin

from ocr_inference import errors
from ocr_inference.client import TritonClient
from ocr_inference.requests import build_inputs

from tests.helpers import DATA, IMAGES

pytestmark = [pytest.mark.triton]

#: A dense page: 600 x 4000 pixels, about 200 boxes, seconds of CPU per read.
RECEIPT = DATA / "documents" / "receipt_600x4000.png"


def unique_png(path) -> bytes:
    """The image at ``path`` as PNG bytes no request sent before (a text chunk with a fresh
    id), so the response cache cannot answer it."""
    info = PngImagePlugin.PngInfo()
    info.add_text("request", uuid.uuid4().hex)
    out = io.BytesIO()
    Image.open(path).save(out, format="PNG", pnginfo=info)
    return out.getvalue()


def statistics(url: str) -> dict[str, dict]:
    """Triton's inference statistics: model name -> its (summed over versions) counts
    ``inferences``, ``executions`` and ``ended`` (requests answered, success or failure)."""
    client = grpcclient.InferenceServerClient(url)
    try:
        found: dict[str, dict] = {}
        for model in client.get_inference_statistics(as_json=True)["model_stats"]:
            counts = found.setdefault(model["name"], {"inferences": 0, "executions": 0,
                                                      "ended": 0})
            stats = model.get("inference_stats", {})
            counts["inferences"] += int(model.get("inference_count", 0))
            counts["executions"] += int(model.get("execution_count", 0))
            counts["ended"] += sum(int(stats.get(kind, {}).get("count", 0))
                                   for kind in ("success", "fail"))
        return found
    finally:
        client.close()


def grown(before: dict, after: dict, count: str) -> dict[str, int]:
    """How much ``count`` grew per model between two :func:`statistics`."""
    return {name: after[name][count] - before.get(name, {}).get(count, 0) for name in after}


def wait_for(url: str, condition, what: str, limit_s: float = 600.0) -> dict:
    """Poll :func:`statistics` (every 20 ms) until ``condition(statistics)`` holds; return
    them. The limit only turns a hang into a failure."""
    deadline = time.monotonic() + limit_s
    while True:
        now = statistics(url)
        if condition(now):
            return now
        assert time.monotonic() < deadline, f"Triton never showed {what}"
        time.sleep(0.02)


def test_a_request_whose_deadline_passes_during_detection_is_never_read(triton):
    url = triton.grpc_url
    before = statistics(url)
    first = TritonClient(url, timeout_s=600.0)
    late = TritonClient(url, timeout_s=0.5)
    answers = {}
    sender = threading.Thread(
        target=lambda: answers.update(first=first.infer(unique_png(RECEIPT), {})))
    sender.start()
    try:
        # The first request's detection and recognizer batches hold the one engine slot
        # (rate limiter) for seconds: the late request's detection waits behind them, and
        # its half-second deadline passes there, on any machine.
        wait_for(url, lambda now: grown(before, now, "inferences")["preprocess"] >= 1,
                 "the first request past preprocess")
        with pytest.raises(errors.InferenceTimeout):
            late.infer(unique_png(RECEIPT), {})
    finally:
        sender.join()
    # Both ended inside Triton (the late one failed CANCELLED where it was stopped).
    wait_for(url, lambda now: grown(before, now, "ended")[ENSEMBLE] >= 2,
             "the late request ended")
    following = first.infer((IMAGES / "korean.png").read_bytes(), {"long_side": 640})
    # A model's statistics are counted just after it has answered: waited for, not raced.
    after = wait_for(url, lambda now: grown(before, now, "ended")["recognize"] >= 2,
                     "recognize's counts of the answered requests")
    first.close()
    late.close()

    inferred = grown(before, after, "inferences")
    # Three requests reached Triton, each once: the late one was not sent again.
    assert inferred["preprocess"] == 3
    # Only the first and the following one got past detection and were read.
    assert inferred["postprocess"] == inferred["recognize"] == 2
    assert answers["first"].texts and len(answers["first"].texts) == len(answers["first"].boxes)
    assert len(following.boxes) == len(following.texts) == 6


def recognizer_batch() -> int:
    """recognize's ``recognizer_batch`` parameter (its config.pbtxt)."""
    from google.protobuf import text_format
    from tritonclient.grpc import model_config_pb2

    path = Path(django_settings.TRITON_MODEL_REPOSITORY) / "recognize" / "config.pbtxt"
    config = text_format.Parse(path.read_text(),
                               model_config_pb2.ModelConfig())
    return int(config.parameters["recognizer_batch"].string_value)


def test_recognize_stops_between_recognizer_batches_once_its_request_is_cancelled(triton):
    url = triton.grpc_url
    image = np.asarray(Image.open(RECEIPT).convert("RGB"))
    # 200 boxes of one size over the page: the recognizer reads them in batches of at most
    # recognizer_batch crops, at least ceil(200 / recognizer_batch) BLS calls for a full read.
    boxes = np.array([[[x, y], [x + 110, y], [x + 110, y + 18], [x, y + 18]]
                      for y in range(20, 3980, 99) for x in range(10, 560, 116)][:200],
                     np.float32)
    full_read = math.ceil(len(boxes) / recognizer_batch())
    tensors = {"ORIGINAL_IMAGE": image, "BOXES": boxes,
               "SCORES": np.ones(len(boxes), np.float32),
               "CANVAS": np.array([b"fit"], dtype=object),
               "LANGUAGE": np.array([b"en"], dtype=object),
               "ORIENTATION": np.array([b"upright"], dtype=object)}
    inputs = []
    for name, value in tensors.items():
        tensor = grpcclient.InferInput(name, list(value.shape),
                                       "BYTES" if value.dtype == object else
                                       {np.uint8: "UINT8", np.float32: "FP32"}[value.dtype.type])
        tensor.set_data_from_numpy(value)
        inputs.append(tensor)

    client = grpcclient.InferenceServerClient(url)
    before = statistics(url)
    answered = threading.Event()
    call = client.async_infer("recognize", inputs, callback=lambda result, error: answered.set(),
                              outputs=[grpcclient.InferRequestedOutput("TEXTS")])
    wait_for(url, lambda now: grown(before, now, "executions")["recognizer"] >= 1,
             "recognize's first recognizer batch")
    call.cancel()
    after = wait_for(url, lambda now: grown(before, now, "ended")["recognize"] >= 1,
                     "recognize answering the cancelled request")
    assert answered.wait(60)
    client.close()

    batches = grown(before, after, "executions")["recognizer"]
    assert 1 <= batches < full_read


def test_a_step_stops_a_request_past_the_deadline_it_carries(triton):
    """The deadline also travels as the request parameter DEADLINE_PARAMETER (Triton does not
    tell a running step about a cancel): a request that arrives past it is stopped by the
    first step, even with its gRPC call still waiting, and the gateway reads that as a
    timeout, not as a failure to send again."""
    url = triton.grpc_url
    client = grpcclient.InferenceServerClient(url)
    before = statistics(url)
    past = {DEADLINE_PARAMETER: int((time.time() - 1) * 1000)}
    with pytest.raises(InferenceServerException) as stopped:
        client.infer(ENSEMBLE, build_inputs(unique_png(RECEIPT), {}), client_timeout=120,
                     parameters=past)
    client.close()
    assert str(stopped.value.status()).endswith("CANCELLED")
    assert isinstance(errors.from_triton(stopped.value, 30.0), errors.InferenceTimeout)
    after = wait_for(url, lambda now: grown(before, now, "ended")["preprocess"] >= 1,
                     "preprocess answering the late request")
    inferred = grown(before, after, "inferences")
    # preprocess answered it (CANCELLED, counted among its requests); nothing after it ran.
    assert inferred["craft"] == inferred["postprocess"] == inferred["recognize"] == 0
