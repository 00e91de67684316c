"""An OpenVINO network left unused gives its inferences' memory back (issue 55): the real
CRAFT INT8 (or FP32 where no quantised model is made), no Triton."""

import time
from pathlib import Path

import numpy as np
import psutil
from django.conf import settings
from ocr_pipeline import engines

CRAFT = str(Path(settings.TRITON_MODEL_REPOSITORY) / "craft" / "1" / "model.onnx")
MIB = 1024 ** 2


def pss() -> int:
    return psutil.Process().memory_full_info().pss


def test_an_idle_network_releases_its_buffers_and_reads_the_same_afterwards(tmp_path):
    precision = "int8" if "int8" in engines.openvino_precisions(CRAFT) else "fp32"
    engine = engines.OpenVinoEngine(CRAFT, engines.EngineOptions(
        precision=precision, release_idle_s=1.0, cache_dir=str(tmp_path)), precision)
    page = np.zeros((1, 736, 1280, 3), np.uint8)
    page[0, 300:340, 200:900] = 255                     # a bar for the region score to see
    engines._trim_heap()                                 # what compiling freed, given back
    compiled = pss()
    first = engine({"image": page})
    used = pss()
    assert engine.holding
    # The idle thread looks every max(1, idle / 4) s (at once when an engine is watched):
    # released within a few seconds.
    deadline = time.monotonic() + 15
    while engine.holding and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not engine.holding
    released = pss()
    assert used - compiled > 300 * MIB                   # what the inference allocated...
    assert released < compiled + 0.5 * (used - compiled)  # ... mostly given back
    again = engine({"image": page})
    assert engine.holding
    assert all(np.array_equal(first[name], again[name]) for name in first)


def test_release_waits_for_the_idle_time_and_never_runs_without_memory_held(tmp_path):
    engine = engines.OpenVinoEngine(CRAFT, engines.EngineOptions(
        precision="fp32", release_idle_s=0, cache_dir=str(tmp_path)), "fp32")
    assert not engine.release(0.0)                       # nothing inferred yet
    engine({"image": np.zeros((1, 64, 64, 3), np.uint8)})
    assert not engine.release(3600.0)                    # used just now
    assert engine.release(0.0) and not engine.holding
    assert not engine.release(0.0)                       # nothing held any more
