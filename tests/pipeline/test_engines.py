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
CRAFT = str(REPOSITORY / "craft" / "1" / "model.onnx")
REFINENET = str(REPOSITORY / "refinenet" / "1" / "model.onnx")


def engine_cases() -> list[tuple[str, str, int]]:
    """``(engine, precision, long side)`` for every engine and every precision it offers on
    this CPU with these models. FP32 and BF16 are checked against the reference run at long
    side 640 (a quarter of the work at 1280; the API tests check the served default at 1280);
    INT8, which changes the numbers most, at 1280, where its recipe's acceptance bar was set."""
    precisions = engines.openvino_precisions(CRAFT)
    cases = [("onnxruntime", "fp32", 640)]
    cases += [("openvino", precision, 1280 if precision == "int8" else 640)
              for precision in precisions]
    return cases


@pytest.fixture(scope="module", params=engine_cases(), ids=lambda case: "-".join(map(str, case)))
def detected(request):
    """``(case, engine description, {image name: boxes})`` for every test image: craft (in the
    case's precision) and refinenet (FP32) in-process, with the service's pre/post-processing."""
    engine, precision, long_side = request.param
    options = engines.EngineOptions(engine=engine, precision=precision)
    craft = engines.load_engine(CRAFT, options)
    refiner = engines.load_engine(REFINENET, engines.EngineOptions(
        engine=engine, precision="fp32"))
    found = {}
    for name in IMAGE_NAMES:
        prepared = imaging.prepare_image((IMAGES / name).read_bytes(), long_side,
                                         keep_original=False)
        maps = craft({"image": prepared.tensor})
        link = refiner({"y": maps["y"], "feature": maps["feature"]})["y_refined"]
        boxes_found, _ = boxes.detect_boxes(maps["y"][0, 0], link[0, 0], 0.7, 0.4, 0.4)
        found[name] = boxes.to_image_coordinates(boxes_found, prepared.ratio, prepared.width,
                                                 prepared.height).tolist()
    return request.param, craft.description, found


def test_engine_reports_what_runs(detected):
    (engine, precision, _), description, _ = detected
    if engine == "onnxruntime":
        assert description.startswith("onnxruntime ") and description.endswith(" FP32")
    else:
        assert description.startswith("openvino ") and f" {precision.upper()} " in description


def test_every_image_matches_the_reference(detected):
    (_, _, long_side), _, found = detected
    reference = reference_boxes(long_side)
    scores = {name: parity_f(found[name], reference[name]["boxes"]) for name in IMAGE_NAMES}
    assert min(scores.values()) >= PARITY_F, scores


@pytest.mark.parametrize("detected", [case for case in engine_cases() if case[2] == 1280],
                         indirect=True, ids=lambda case: "-".join(map(str, case)))
def test_icdar_hmean_is_no_lower_than_fp32s(detected):
    """Quality is judged at 1280 (tests/data/SOURCES.md): the cases run there."""
    _, _, found = detected
    ground_truth = json.loads((DATA / "icdar2015_gt.json").read_text())
    total = evaluation.DetectionScore()
    for entry in ground_truth["data_list"]:
        instances = entry["instances"]
        total.add(evaluation.score_image(
            found[entry["img_path"]], [i["polygon"] for i in instances if not i["ignore"]],
            [i["polygon"] for i in instances if i["ignore"]]))
    # FP32's figure, through the served ensemble: tests/ops/test_evaluate_detection.py.
    assert (total.matched, total.detections, total.truths) == (7, 8, 8)
    assert total.hmean == pytest.approx(0.875)


def test_auto_times_the_candidates_once_and_keeps_the_decision(tmp_path):
    sample = {"image": np.zeros((1, 192, 320, 3), np.uint8)}
    options = engines.EngineOptions(engine="openvino", cache_dir=str(tmp_path))
    chosen, reason = engines.choose_precision(CRAFT, options, sample)
    candidates = engines.openvino_precisions(CRAFT)
    assert len(candidates) >= 2            # fp32 and the int8 model make_setup quantised
    assert chosen.precision in candidates and reason.endswith(f"-> {chosen.precision}")
    assert all(f"{precision} " in reason for precision in candidates)
    stored = json.loads((tmp_path / "precision-choices.json").read_text())
    assert [choice["precision"] for choice in stored.values()] == [chosen.precision]
    again, again_reason = engines.choose_precision(CRAFT, options, sample)   # not measured
    assert (again.precision, again_reason) == (chosen.precision, reason)


def test_an_unavailable_precision_is_refused_with_the_fix(tmp_path):
    lonely = tmp_path / "craft" / "1" / "model.onnx"
    lonely.parent.mkdir(parents=True)
    lonely.write_bytes(Path(CRAFT).read_bytes())            # no model_int8.xml beside it
    with pytest.raises(engines.EngineConfigError, match="quantize_models"):
        engines.load_engine(str(lonely), engines.EngineOptions(precision="int8"))


def test_int8_runs_the_networks_that_are_not_quantised_in_fp32():
    refinenet = Path(CRAFT).parents[2] / "refinenet" / "1" / "model.onnx"
    engine = engines.load_engine(str(refinenet), engines.EngineOptions(precision="int8"))
    assert engine.precision == "fp32"
    assert engine.choice == "int8 asked: only craft is quantised, fp32"


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
    craft = engines.load_engine(CRAFT, engines.EngineOptions(engine="openvino", precision="fp32"))
    images = np.random.default_rng(0).integers(0, 256, (2, 64, 96, 3), dtype=np.uint8)
    together = craft({"image": images})["y"]
    alone = [craft({"image": images[i:i + 1]})["y"] for i in range(2)]
    np.testing.assert_allclose(together, np.concatenate(alone), atol=1e-4)
