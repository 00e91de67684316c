"""CPU inference engines (OpenVINO, onnxruntime): selection, precision, parity, quality."""

import time
from pathlib import Path

import numpy as np
import pytest
from django.conf import settings

from ocr_inference.triton_metrics import engine_info
from ocr_pipeline import boxes, engines, evaluation, imaging, validation
from ocr_pipeline import precision as precision_rule
from ocr_pipeline.precision import load_engine

from tests.helpers import (DATA, IMAGES, UNSEEN, reference_boxes, running_triton,
                           unseen_reference)
from tests.api.test_ocr import box_points, post_image
from tests.parity import PARITY_F, parity_f

REPOSITORY = Path(settings.TRITON_MODEL_REPOSITORY)
CRAFT = str(REPOSITORY / "craft" / "1" / "model.onnx")
REFINENET = str(REPOSITORY / "refinenet" / "1" / "model.onnx")
#: (matched, detections, truths) of the reference pipeline (FP32) on the unseen ICDAR images at
#: 1280 (tests/data/unseen/reference_1280.json scored by the ICDAR 2015 rule: H-mean 0.727).
UNSEEN_ICDAR_FP32 = (8, 9, 13)


def engine_cases() -> list[tuple[str, str, str, int]]:
    """``(engine, craft precision, refiner precision, long side)``: FP32 in both engines,
    checked against the reference run at long side 640 (a quarter of the work at 1280). The
    reduced precisions this CPU offers are checked where quality is judged, at 1280, by
    :func:`test_every_reduced_precision_is_served_at_parity_refused_or_at_parity_alone`."""
    return [("onnxruntime", "fp32", "fp32", 640), ("openvino", "fp32", "fp32", 640)]


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


def detect_in_process(engine: str, craft_precision: str, refiner_precision: str,
                      long_side: int) -> tuple[tuple, dict[str, list]]:
    """``(engines, {image name: boxes})`` for every case image: craft and refinenet
    in-process in the precisions named, with the service's pre/post-processing."""
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
    return (craft, refiner), found


@pytest.fixture(scope="module", params=engine_cases(), ids=lambda case: "-".join(map(str, case)))
def detected(request):
    """``(case, engines, {image name: boxes})`` of an FP32 case (:func:`engine_cases`)."""
    return (request.param, *detect_in_process(*request.param))


def test_engine_reports_what_runs(detected):
    (engine, craft_precision, refiner_precision, _), networks, _ = detected
    for network, precision in zip(networks, (craft_precision, refiner_precision)):
        if engine == "onnxruntime":
            assert network.description.startswith("onnxruntime ")
            assert network.description.endswith(" FP32")
        else:
            assert network.description.startswith("openvino ")
            assert f" {precision.upper()} " in network.description


def test_fp32_matches_the_reference_on_every_image(detected):
    (_, _, _, long_side), _, found = detected
    scores = {name: parity_f(found[name], expected)
              for name, (_, expected) in case_images(long_side).items()}
    assert min(scores.values()) >= PARITY_F, scores


def icdar_figures(found: dict[str, list]) -> dict[str, tuple[int, int, int]]:
    """(matched, detections, truths) by the ICDAR 2015 rule on the shared sample and on the
    unseen one, from ``{image name: boxes}``."""
    figures = {}
    for ground_truth in (DATA / "icdar2015_gt.json", UNSEEN / "icdar2015_gt.json"):
        total = evaluation.DetectionScore()
        for image in evaluation.load_mmocr_textdet(ground_truth):
            total.add(evaluation.score_image(found[image.image], image.truths,
                                             image.dont_care))
        figures[ground_truth.parent.name] = (total.matched, total.detections, total.truths)
    return figures


#: FP32's figures, through the served ensemble (tests/ops/test_evaluate_detection.py) and the
#: reference run (UNSEEN_ICDAR_FP32).
FP32_ICDAR = {"data": (7, 8, 8), "unseen": UNSEEN_ICDAR_FP32}


@pytest.fixture(scope="module")
def served(triton) -> dict[str, str]:
    """What the session's Triton runs: ``{"craft": "openvino ... INT8 LATENCY (auto: ...)",
    "refinenet": ...}`` (its ``ocr_engine_info``)."""
    deadline = time.monotonic() + 20
    while not (info := engine_info(triton.metrics_url)) and time.monotonic() < deadline:
        time.sleep(0.5)
    return {network: info[f"{network} v1"] for network in ("craft", "refinenet")}


@pytest.mark.triton
def test_the_served_combination_keeps_fp32s_icdar_figures(api_client, live_triton):
    """The precisions auto chose on this CPU, through POST /api/ocr at the default working
    size: the ICDAR figures of FP32, on the shared sample and on the unseen images (their box
    parity: tests/api/test_served_parity.py, whose requests these repeat, so Triton's response
    cache answers them)."""
    found = {}
    for path in [*IMAGES.glob("img_*.jpg"), *UNSEEN.glob("*.jpg")]:
        response = post_image(api_client, path)
        assert response.status_code == 200, response.json()
        found[path.name] = box_points(response.json())
    assert icdar_figures(found) == FP32_ICDAR


@pytest.mark.triton
def test_every_reduced_precision_is_served_at_parity_refused_or_at_parity_alone(served):
    """Green on every CPU kind, whatever precisions it offers and however they round: a
    reduced precision this CPU offers a network is the one served (its parity at 1280:
    tests/api/test_served_parity.py and the test above), or one ``auto`` does not serve
    (refused on the validation set, failed, or not faster than FP32), or else, agreeing with
    FP32 on the validation set though another was chosen (so an operator may force it), at
    parity alone: that network in it, the other in FP32, on every test image at 1280 with
    FP32's ICDAR figures."""
    checked = {}
    for network, path in (("craft", CRAFT), ("refinenet", REFINENET)):
        description, _, reason = served[network].partition(" (")
        assert description.startswith("openvino "), description
        serving = description.split()[2].lower()
        verdicts = precision_rule.verdicts(reason)
        for candidate in engines.openvino_precisions(path):
            if candidate in ("fp32", serving):
                continue
            checked[(network, candidate)] = verdicts.get(candidate, "")
            if verdicts.get(candidate) != "agrees":
                continue                       # auto never serves it; forcing it says so
            craft_p, refiner_p = (candidate, "fp32") if network == "craft" else ("fp32",
                                                                                 candidate)
            _, found = detect_in_process("openvino", craft_p, refiner_p, 1280)
            scores = {name: parity_f(found[name], expected)
                      for name, (_, expected) in case_images(1280).items()}
            assert min(scores.values()) >= PARITY_F, (network, candidate, scores)
            assert icdar_figures(found) == FP32_ICDAR, (network, candidate)
    # Every offered candidate was met in the decision: timed, or left out as failed.
    assert all(candidate in precision_rule.verdicts(served[network].partition(" (")[2])
               for network, candidate in checked), (checked, served)


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
                 "OCR_ENGINE_THREADS": "3", "OCR_ENGINE_RELEASE_IDLE_S": "5"})
    assert (options.engine, options.precision, options.threads) == ("onnxruntime", "fp32", 3)
    assert options.release_idle_s == 5.0
    assert options.performance_hint == "LATENCY"


@pytest.mark.parametrize("values", [{"engine": "tensorflow"}, {"precision": "int4"},
                                    {"performance_hint": "FAST"}, {"threads": "many"},
                                    {"release_idle_s": "soon"}])
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
