"""CPU inference engines (OpenVINO, onnxruntime): selection, precision, parity, quality."""

import json
from pathlib import Path

import numpy as np
import pytest
from django.conf import settings

from ocr_inference.triton_metrics import engine_info
from ocr_pipeline import boxes, engines, evaluation, imaging

from tests.helpers import DATA, IMAGE_NAMES, IMAGES, reference_boxes, running_triton
from tests.parity import PARITY_F, parity_f

REPOSITORY = Path(settings.TRITON_MODEL_REPOSITORY)
CONFIGS = {
    "openvino-auto": engines.EngineOptions(engine="openvino"),
    "openvino-fp32": engines.EngineOptions(engine="openvino", precision="fp32"),
    "onnxruntime": engines.EngineOptions(engine="onnxruntime"),
}


@pytest.fixture(scope="module", params=sorted(CONFIGS))
def pipeline(request):
    """``detect(bytes) -> boxes`` running craft + refinenet in-process on one engine config."""
    options = CONFIGS[request.param]
    craft = engines.load_engine(str(REPOSITORY / "craft" / "1" / "model.onnx"), options)
    refiner = engines.load_engine(str(REPOSITORY / "refinenet" / "1" / "model.onnx"), options)

    def detect(data: bytes, long_side: int = 1280):
        prepared = imaging.prepare_image(data, long_side)
        maps = craft({"image": prepared.tensor})
        link = refiner({"y": maps["y"], "feature": maps["feature"]})["y_refined"]
        found, _ = boxes.detect_boxes(maps["y"][0, 0], link[0, 0], 0.7, 0.4, 0.4)
        return boxes.to_image_coordinates(found, prepared.ratio, prepared.width,
                                          prepared.height).tolist()

    detect.name, detect.craft = request.param, craft
    return detect


def test_engine_reports_what_runs(pipeline):
    description = pipeline.craft.description
    if pipeline.name == "onnxruntime":
        assert description.startswith("onnxruntime ") and description.endswith(" FP32")
    elif pipeline.name == "openvino-fp32":
        assert description.startswith("openvino ") and " F32 " in description
    else:  # auto: BF16 on CPUs with AMX / AVX-512 BF16, FP32 elsewhere
        assert description.startswith("openvino ")
        assert " BF16 " in description or " F32 " in description


def test_every_image_matches_the_reference_at_1280(pipeline):
    reference = reference_boxes(1280)
    scores = {name: parity_f(pipeline((IMAGES / name).read_bytes()), reference[name]["boxes"])
              for name in IMAGE_NAMES}
    assert min(scores.values()) >= PARITY_F, scores


def test_icdar_sample_hmean(pipeline):
    ground_truth = json.loads((DATA / "icdar2015_gt.json").read_text())
    total = evaluation.DetectionScore()
    for entry in ground_truth["data_list"]:
        instances = entry["instances"]
        total.add(evaluation.score_image(
            pipeline((IMAGES / entry["img_path"]).read_bytes()),
            [i["polygon"] for i in instances if not i["ignore"]],
            [i["polygon"] for i in instances if i["ignore"]]))
    assert total.hmean >= 0.85, (total.matched, total.detections, total.truths)


# -- options -------------------------------------------------------------------------------

def test_environment_overrides_config_parameters():
    options = engines.EngineOptions.from_mapping(
        {"engine": "openvino", "precision": "auto", "performance_hint": "LATENCY"},
        environ={"OCR_ENGINE": "onnxruntime", "OCR_ENGINE_PRECISION": "FP32",
                 "OCR_ENGINE_THREADS": "3"})
    assert (options.engine, options.precision, options.threads) == ("onnxruntime", "fp32", 3)
    assert options.performance_hint == "LATENCY"


@pytest.mark.parametrize("values", [{"engine": "tensorflow"}, {"precision": "int4"},
                                    {"performance_hint": "FAST"}, {"threads": "many"}])
def test_unsupported_options_are_refused(values):
    with pytest.raises(engines.EngineConfigError):
        engines.EngineOptions.from_mapping(values, environ={})


def test_instances_share_the_cores():
    base = engines.EngineOptions()
    assert engines.share_cpus(base, instances=1, cpus=8) == base
    shared = engines.share_cpus(base, instances=2, cpus=8)
    assert (shared.threads, shared.streams) == (4, 1)
    assert engines.share_cpus(base, instances=4, cpus=2).threads == 1
    explicit = engines.EngineOptions(threads=6)
    assert engines.share_cpus(explicit, instances=2, cpus=8).threads == 6


def test_missing_onnx_file_says_how_to_fetch(tmp_path):
    with pytest.raises(FileNotFoundError, match="fetch_models"):
        engines.load_engine(str(tmp_path / "model.onnx"), engines.EngineOptions())


# -- through Triton ------------------------------------------------------------------------

@pytest.mark.triton
def test_triton_runs_the_engine_the_environment_selects(tmp_path_factory):
    with running_triton(tmp_path_factory, "onnxruntime", models=("craft",), cache_bytes=0,
                        env={"OCR_ENGINE": "onnxruntime"}) as server:
        engines_in_use = engine_info(server.metrics_url)
    assert list(engines_in_use) == ["craft v1"]
    assert engines_in_use["craft v1"].startswith("onnxruntime ")
    assert "craft v1: onnxruntime" in server.log_path.read_text()


def test_run_grouped_batches_equal_shapes_and_keeps_order():
    calls = []

    def engine(inputs):
        calls.append(inputs["x"].shape)
        return {"double": inputs["x"] * 2}

    feeds = [{"x": np.full((1, 2, 4), i, np.float32)} for i in range(3)]
    feeds.insert(1, {"x": np.full((1, 2, 8), 9, np.float32)})   # another shape
    results = engines.run_grouped(engine, feeds)
    assert calls == [(3, 2, 4), (1, 2, 8)]
    assert [float(r["double"][0, 0, 0]) for r in results] == [0.0, 18.0, 2.0, 4.0]
    assert all(r["double"].shape[0] == 1 for r in results)


def test_openvino_runs_a_batch_like_single_images():
    craft = engines.load_engine(str(REPOSITORY / "craft" / "1" / "model.onnx"),
                                engines.EngineOptions(engine="openvino", precision="fp32"))
    images = np.random.default_rng(0).normal(size=(2, 3, 64, 96)).astype(np.float32)
    together = craft({"image": images})["y"]
    alone = [craft({"image": images[i:i + 1]})["y"] for i in range(2)]
    np.testing.assert_allclose(together, np.concatenate(alone), atol=1e-4)
