"""The whole detection pipeline in one process, as the in-process baseline runs it.

Same code as the Triton models (``ocr_pipeline.imaging``, the chain of
``ocr_pipeline.detection`` on ``ocr_pipeline.engines``) and the same engine options as the
Triton cpu flavour: the ``parameters`` of ``craft/config.pbtxt`` and ``refinenet/config.pbtxt``,
overridden by the same ``OCR_ENGINE*`` environment variables (:meth:`EngineOptions.from_mapping`).
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from ocr_contract.parameters import LINK_THRESHOLD, LONG_SIDE, LOW_TEXT, TEXT_THRESHOLD
from ocr_contract.tensors import CRAFT_MODEL, REFINENET_MODEL
from ocr_pipeline import detection, imaging
from ocr_pipeline.engines import EngineOptions
from ocr_pipeline.precision import load_engine

REPO_ROOT = Path(__file__).resolve().parent.parent


def model_repository() -> Path:
    """``$TRITON_MODEL_REPOSITORY`` or ``triton_models/repository`` of this checkout."""
    return Path(os.environ.get("TRITON_MODEL_REPOSITORY",
                               REPO_ROOT / "triton_models" / "repository"))


def config_parameters(repository: Path, model: str) -> dict[str, str]:
    """The ``parameters`` of ``<repository>/<model>/config.pbtxt`` (the cpu flavour)."""
    from google.protobuf import text_format
    from tritonclient.grpc import model_config_pb2

    config = text_format.Parse((repository / model / "config.pbtxt").read_text(),
                               model_config_pb2.ModelConfig())
    return {key: value.string_value for key, value in config.parameters.items()}


@dataclass(frozen=True)
class PipelineResult:
    """Boxes of one image and where the time went.

    Attributes:
        boxes: float32 ``[N, 4, 2]`` corners in original-image pixels.
        scores: float32 ``[N]``.
        timing_ms: ``preprocess``, ``craft``, ``refinenet``, ``postprocess`` compute and
            ``lock_wait`` (time queued behind another thread of the same process), in ms.
    """

    boxes: np.ndarray
    scores: np.ndarray
    timing_ms: dict[str, float]


class InProcessPipeline:
    """CRAFT + LinkRefiner loaded in this process, with pre- and post-processing.

    One engine pair per process; a lock lets one thread at a time run it (OpenVINO's infer
    request, like a Triton model instance, runs one inference at a time).

    Args:
        repository: the model repository (ONNX files and config parameters are read there).
    """

    def __init__(self, repository: Path | None = None):
        repository = Path(repository or model_repository())
        self.engines = {}
        for model in (CRAFT_MODEL, REFINENET_MODEL):
            parameters = config_parameters(repository, model)
            options = EngineOptions.from_mapping(parameters)
            onnx = repository / model / "1" / parameters.get("onnx_file", "model.onnx")
            self.engines[model] = load_engine(str(onnx), options)
        self.description = self.engines[CRAFT_MODEL].description
        self._lock = threading.Lock()

    def detect(self, data: bytes, long_side: int = LONG_SIDE.default) -> PipelineResult:
        """Detect text boxes in an encoded image (``long_side`` in pixels).

        Raises:
            ocr_pipeline.imaging.ImageDecodeError: the bytes are not a decodable image.
        """
        networks_ms: dict[str, float] = {}

        def run(model: str, inputs: dict, outputs: tuple[str, ...]) -> dict:
            start = time.perf_counter()
            result = self.engines[model](inputs)
            networks_ms[model] = (time.perf_counter() - start) * 1e3
            return result

        t0 = time.perf_counter()
        prepared = imaging.prepare_image(data, long_side)
        t1 = time.perf_counter()
        with self._lock:
            t2 = time.perf_counter()
            maps, link = detection.score_maps(run, prepared.tensor)
            t3 = time.perf_counter()
        found, scores = detection.postprocess(
            maps, link, prepared.ratio, prepared.width, prepared.height,
            TEXT_THRESHOLD.default, LINK_THRESHOLD.default, LOW_TEXT.default)
        t4 = time.perf_counter()
        return PipelineResult(found, scores, {
            "preprocess": (t1 - t0) * 1e3, "lock_wait": (t2 - t1) * 1e3,
            "craft": networks_ms[CRAFT_MODEL], "refinenet": networks_ms[REFINENET_MODEL],
            "postprocess": (t4 - t3) * 1e3})

    def warm_up(self, images: list[bytes], long_side: int) -> int:
        """Run each distinct input shape of ``images`` once (OpenVINO compiles per shape).

        Returns:
            the number of distinct shapes run.
        """
        seen = set()
        for data in images:
            prepared = imaging.prepare_image(data, long_side)
            if prepared.tensor.shape in seen:
                continue
            seen.add(prepared.tensor.shape)
            self.detect(data, long_side)
        return len(seen)
