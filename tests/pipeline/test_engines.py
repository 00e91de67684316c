"""CPU inference engines (OpenVINO, onnxruntime): selection, precision, parity, quality."""

import time
from pathlib import Path

import numpy as np
import pytest
from django.conf import settings

from ocr_inference.triton_metrics import engine_info
from ocr_pipeline import boxes, engines, evaluation, imaging, validation
from ocr_pipeline.precision import load_engine

from tests.helpers import (DATA, IMAGES, UNSEEN, reference_boxes, running_triton,
                           unseen_reference)
from tests.parity import PARITY_F, parity_f

REPOSITORY = Path(settings.TRITON_MODEL_REPOSITORY)
CRAFT = str(REPOSITORY / "craft" / "1" / "model.onnx")
REFINENET = str(REPOSITORY / "refinenet" / "1" / "model.onnx")
#: (matched, detections, truths) of the reference pipeline (FP32) on the unseen ICDAR images at
#: 1280 (tests/data/unseen/reference_1280.json scored by the ICDAR 2015 rule: H-mean 0.727).
UNSEEN_ICDAR_FP32 = (8, 9, 13)


def engine_cases() -> list[tuple[str, str, str, int]]:
    """``(engine, craft precision, refiner precision, long side)`` for every engine and every
    precision each network offers on this CPU with these models. FP32 is checked against the
    reference run at long side 640 (a quarter of the work at 1280; the API tests check the
    served combination at 1280); a reduced precision, which changes the numbers most, at 1280,
    where quality is judged, with the other network in FP32."""
    cases = [("onnxruntime", "fp32", "fp32", 640), ("openvino", "fp32", "fp32", 640)]
    cases += [("openvino", p, "fp32", 1280) for p in engines.openvino_precisions(CRAFT)
              if p != "fp32"]
    cases += [("openvino", "fp32", p, 1280) for p in engines.openvino_precisions(REFINENET)
              if p != "fp32"]
    return cases


def case_images(long_side: int) -> dict[str, tuple[Path, list]]:
    """``{name: (path, reference boxes)}``: the shared images, and at 1280 also the unseen
    ICDAR images (tests/data/unseen)."""
    found = {name: (IMAGES / name, entry["boxes"])
             for name, entry in reference_boxes(long_side).items()}
    if long_side == 1280:
        found.update({name: (UNSEEN / name, entry["boxes"])
                      for name, entry in unseen_reference().items()})
    return found


pytestmark = pytest.mark.quality


@pytest.fixture(scope="module", params=engine_cases(), ids=lambda case: "-".join(map(str, case)))
def detected(request):
    """``(case, engines, {image name: boxes})`` for every case image: craft and refinenet
    in-process in the case's precisions, with the service's pre/post-processing."""
    engine, craft_precision, refiner_precision, long_side = request.param
    craft = load_engine(CRAFT, engines.EngineOptions(engine=engine, precision=craft_precision))
    refiner = load_engine(REFINENET, engines.EngineOptions(engine=engine,
                                                           precision=refiner_precision))
    found = {}
    for name, (path, _) in case_images(long_side).items():
        prepared = imaging.prepare_image(path.read_bytes(), long_side, keep_original=False)
        maps = craft({"image": prepared.tensor})
        link = refiner({"y": maps["y"], "feature": maps["feature"]})["y_refined"]
        boxes_found, _ = boxes.detect_boxes(maps["y"][0, 0], link[0, 0], 0.7, 0.4, 0.4)
        found[name] = boxes.to_image_coordinates(boxes_found, prepared.ratio, prepared.width,
                                                 prepared.height).tolist()
    return request.param, (craft, refiner), found


def test_engine_reports_what_runs(detected):
    (engine, craft_precision, refiner_precision, _), networks, _ = detected
    for network, precision in zip(networks, (craft_precision, refiner_precision)):
        if engine == "onnxruntime":
            assert network.description.startswith("onnxruntime ")
            assert network.description.endswith(" FP32")
        else:
            assert network.description.startswith("openvino ")
            assert f" {precision.upper()} " in network.description


def assert_auto_refuses(detected, what: str) -> None:
    """A case off FP32's figures (``what`` says how) must be one that ``auto`` never serves:
    a reduced precision the validation set refuses. So the tests pass on every CPU kind,
    whatever precisions it offers and however they round."""
    (_, craft_precision, refiner_precision, _), (craft, refiner), _ = detected
    assert (craft_precision, refiner_precision) != ("fp32", "fp32"), what
    validation_set = validation.ValidationSet(validation.DEFAULT_FOLDER)
    options = engines.EngineOptions(precision="fp32")
    if craft_precision != "fp32":      # the other network is FP32 in every case
        reference = engines.OpenVinoEngine(CRAFT, options, "fp32")
        verdict = validation.detector_validator(validation_set, refiner, reference)(craft)
    else:
        reference = engines.OpenVinoEngine(REFINENET, options, "fp32")
        verdict = validation.link_refiner_validator(validation_set, craft, reference)(refiner)
    assert not verdict.passed, (
        f"{what}, yet the validation set accepts it ({verdict.detail}): auto would serve it")


def test_every_image_matches_the_reference_or_auto_refuses_the_precision(detected):
    """Green on every CPU kind: a precision this CPU offers is at parity on every test image
    (the unseen ones included), or the validation set refuses it, so ``auto`` never serves
    it (a forced one says so in /api/models)."""
    (_, _, _, long_side), _, found = detected
    scores = {name: parity_f(found[name], expected)
              for name, (_, expected) in case_images(long_side).items()}
    if min(scores.values()) < PARITY_F:
        assert_auto_refuses(detected, f"not at parity on the test images {scores}")


@pytest.mark.parametrize("detected", [case for case in engine_cases() if case[3] == 1280],
                         indirect=True, ids=lambda case: "-".join(map(str, case)))
def test_icdar_hmean_is_no_lower_than_fp32s(detected):
    """Quality is judged at 1280 (tests/data/SOURCES.md): the cases run there, on the shared
    ICDAR sample and on the unseen one. Green on every CPU kind, like the parity test: a
    precision off FP32's figures is one the validation set refuses."""
    _, _, found = detected
    for ground_truth, expected in ((DATA / "icdar2015_gt.json", (7, 8, 8)),
                                   (UNSEEN / "icdar2015_gt.json", UNSEEN_ICDAR_FP32)):
        total = evaluation.DetectionScore()
        for image in evaluation.load_mmocr_textdet(ground_truth):
            total.add(evaluation.score_image(found[image.image], image.truths,
                                             image.dont_care))
        # FP32's figures, through the served ensemble: tests/ops/test_evaluate_detection.py.
        # A precision that misses them is one auto must refuse (a BF16 CRAFT on an AMX Xeon
        # lost every box of one image).
        figures = (total.matched, total.detections, total.truths)
        if figures != expected:
            assert_auto_refuses(detected, f"{ground_truth.parent.name}: (matched, detections, "
                                          f"truths) {figures}, FP32's {expected}")


def test_an_unavailable_precision_is_refused_with_the_fix(tmp_path):
    lonely = tmp_path / "craft" / "1" / "model.onnx"
    lonely.parent.mkdir(parents=True)
    lonely.write_bytes(Path(CRAFT).read_bytes())            # no model_int8.xml beside it
    with pytest.raises(engines.EngineConfigError, match="quantize_models"):
        load_engine(str(lonely), engines.EngineOptions(precision="int8"))


def test_int8_runs_a_network_without_a_recipe_in_fp32(tmp_path):
    other = tmp_path / "other" / "1" / "model.onnx"
    other.parent.mkdir(parents=True)
    other.write_bytes(Path(REFINENET).read_bytes())
    engine = load_engine(str(other), engines.EngineOptions(precision="int8"))
    assert engine.precision == "fp32"
    assert engine.choice == "int8 asked: other has no INT8 recipe, fp32"


def test_a_forced_precision_off_parity_says_so_and_warns(tmp_path, caplog):
    failing = validation.Validator("detector", "test-fingerprint", lambda engine: (
        validation.Agreement(0.5, validation.MIN_BOX_F, "boxes F 0.500 on img_9.jpg")))
    options = engines.EngineOptions(precision="int8", cache_dir=str(tmp_path))
    engine = load_engine(CRAFT, options, validator=failing)
    assert engine.precision == "int8"
    assert engine.choice == ("forced int8 is NOT at parity with FP32 (boxes F 0.500 on "
                             "img_9.jpg, at least 0.98)")
    assert "NOT at parity" in caplog.text
    again = load_engine(CRAFT, options, validator=validation.Validator(
        "detector", "test-fingerprint", lambda engine: pytest.fail("measured again")))
    assert again.choice == engine.choice                      # the verdict is kept


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
        load_engine(str(tmp_path / "model.onnx"), engines.EngineOptions())


# -- through Triton ------------------------------------------------------------------------

@pytest.mark.triton
@pytest.mark.slow                                   # a Triton of its own
def test_triton_runs_the_engine_the_environment_selects(tmp_path_factory):
    with running_triton(tmp_path_factory, "onnxruntime", models=("craft",), cache_bytes=0,
                        env={"OCR_ENGINE": "onnxruntime"}) as server:
        # Just after the start, engine_info came back empty in 1 run of 3 on 2 cores (the
        # endpoint unreachable or the gauge not yet published): ask again for up to 20 s.
        deadline = time.monotonic() + 20
        while not (engines_in_use := engine_info(server.metrics_url)) \
                and time.monotonic() < deadline:
            time.sleep(0.5)
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
    craft = load_engine(CRAFT, engines.EngineOptions(engine="openvino", precision="fp32"))
    images = np.random.default_rng(0).integers(0, 256, (2, 64, 96, 3), dtype=np.uint8)
    together = craft({"image": images})["y"]
    alone = [craft({"image": images[i:i + 1]})["y"] for i in range(2)]
    np.testing.assert_allclose(together, np.concatenate(alone), atol=1e-4)
