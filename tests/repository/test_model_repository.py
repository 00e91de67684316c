"""The model repository contract: configs parse, flavours agree, ONNX files match configs."""

from pathlib import Path

import onnxruntime
import pytest
from django.conf import settings
from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2

from ocr_contract.parameters import (LINK_THRESHOLD, LOW_TEXT, PARAMETERS, REFINE,
                                     TEXT_THRESHOLD)
from ocr_contract.tensors import (BLS_CALLS, CHARACTER_OUTPUTS, CRAFT_MODEL, DB_ENSEMBLE,
                                  DB_MODEL, DB_POSTPROCESS_MODEL, DETECTOR_ENSEMBLES, ENSEMBLE,
                                  IMAGE_BYTES, OUTPUTS, PAGE,
                                  POSTPROCESS_MODEL, RECOGNIZE_MODEL, RECOGNIZER_INPUT,
                                  RECOGNIZER_MODEL, RECOGNIZER_OUTPUTS, REFINENET_MODEL)
from ocr_pipeline import detection
from ocr_pipeline.tritonserver import MODELS_AT_START

REPOSITORY = Path(settings.TRITON_MODEL_REPOSITORY)
FLAVOURS = ("cpu", "batched", "gpu")


def load_config(model: str, flavour: str) -> model_config_pb2.ModelConfig:
    """The config Triton uses for ``model`` with ``--model-config-name=<flavour>``.

    Triton reads ``configs/<name>.pbtxt`` when it exists, else ``config.pbtxt``; the cpu
    flavour is the default ``config.pbtxt`` everywhere.
    """
    custom = REPOSITORY / model / "configs" / f"{flavour}.pbtxt"
    path = custom if flavour != "cpu" and custom.exists() else REPOSITORY / model / "config.pbtxt"
    return text_format.Parse(path.read_text(), model_config_pb2.ModelConfig())


def tensor_contract(config) -> dict:
    """``{("input"|"output", name): (dtype, dims, optional)}`` of a model config."""
    contract = {}
    for kind, tensors in (("input", config.input), ("output", config.output)):
        for tensor in tensors:
            contract[(kind, tensor.name)] = (
                model_config_pb2.DataType.Name(tensor.data_type), list(tensor.dims),
                getattr(tensor, "optional", False))
    return contract


def steps(flavour: str, ensemble: str = ENSEMBLE) -> list:
    config = load_config(ensemble, flavour)
    return [(s.model_name, dict(s.input_map), dict(s.output_map))
            for s in config.ensemble_scheduling.step]


def config_type(dtype: str) -> str:
    """A Triton datatype (``FP32``, ``BYTES``) as config.pbtxt spells it."""
    return "TYPE_" + ("STRING" if dtype == "BYTES" else dtype)


def test_ensemble_has_the_five_documented_steps():
    assert [name for name, _, _ in steps("cpu")] == ["preprocess", "craft", "refinenet",
                                                     "postprocess", "recognize"]
    # The light pipeline shares every step but the detector's.
    assert [name for name, _, _ in steps("cpu", DB_ENSEMBLE)] == [
        "preprocess", "db", "db_postprocess", "recognize"]
    assert DETECTOR_ENSEMBLES == {"craft": ENSEMBLE, "db": DB_ENSEMBLE}


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_the_ensemble_detects_as_the_chain_that_recognize_runs_again(flavour):
    """ensemble_ocr's craft, refinenet and postprocess steps feed each other as
    ocr_pipeline.detection does (recognize's second detection of a turned page), with its
    tensor names; recognize pads onto the canvas preprocess used."""
    by_model = {name: (inputs, outputs) for name, inputs, outputs in steps(flavour)}
    (preprocess_in, preprocess_out), (craft_in, craft_out), (refine_in, refine_out), \
        (post_in, post_out), (recognize_in, _) = (by_model[name] for name in (
            "preprocess", CRAFT_MODEL, REFINENET_MODEL, POSTPROCESS_MODEL, RECOGNIZE_MODEL))
    assert set(craft_in) == {detection.IMAGE}
    assert set(craft_out) == {detection.MAPS, detection.FEATURES}
    assert refine_in == {name: craft_out[name] for name in (detection.MAPS, detection.FEATURES)}
    assert set(refine_out) == {detection.LINK}
    assert post_in == {detection.POST_MAPS: craft_out[detection.MAPS],
                       detection.POST_LINK: refine_out[detection.LINK],
                       detection.POST_RATIO: preprocess_out["RESIZE_RATIO"],
                       detection.POST_SIZE: preprocess_out["DETECTION_SIZE"],
                       **{p.tensor: p.tensor for p in (TEXT_THRESHOLD, LINK_THRESHOLD,
                                                       LOW_TEXT, REFINE)}}
    assert set(post_out) == {detection.POST_BOXES, detection.POST_SCORES, detection.DETECTOR}
    assert recognize_in["CANVAS"] == preprocess_out["CANVAS"]
    # recognize detects again with the chain that found its boxes.
    assert recognize_in[detection.DETECTOR] == post_out[detection.DETECTOR]
    # A page preprocess turned upright (ocr_pipeline.page_turn) is mapped back by recognize.
    assert recognize_in["PAGE_TURN"] == preprocess_out["PAGE_TURN"]
    assert preprocess_in["ORIENTATION"] == recognize_in["ORIENTATION"] == "ORIENTATION"
    # The models' own configs declare the same names (detection's calls through BLS).
    declared = {model: ([t.name for t in load_config(model, flavour).input],
                        [t.name for t in load_config(model, flavour).output])
                for model in (CRAFT_MODEL, REFINENET_MODEL, POSTPROCESS_MODEL,
                              RECOGNIZER_MODEL)}
    assert declared[CRAFT_MODEL] == ([detection.IMAGE], [detection.MAPS, detection.FEATURES])
    assert declared[REFINENET_MODEL] == ([detection.MAPS, detection.FEATURES], [detection.LINK])
    assert (sorted(declared[POSTPROCESS_MODEL][0]), declared[POSTPROCESS_MODEL][1]) == (
        sorted(post_in), [detection.POST_BOXES, detection.POST_SCORES, detection.DETECTOR])
    assert declared[RECOGNIZER_MODEL] == ([RECOGNIZER_INPUT], list(RECOGNIZER_OUTPUTS))


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_the_db_ensemble_detects_as_the_db_chain_and_shares_the_other_steps(flavour):
    """ensemble_ocr_db's db and db_postprocess feed each other as ocr_pipeline.detection's
    DB chain does, and preprocess and recognize are mapped exactly as in ensemble_ocr."""
    craft_steps = {name: (inputs, outputs) for name, inputs, outputs in steps(flavour)}
    by_model = {name: (inputs, outputs) for name, inputs, outputs in steps(flavour, DB_ENSEMBLE)}
    (db_in, db_out), (post_in, post_out) = by_model[DB_MODEL], by_model[DB_POSTPROCESS_MODEL]
    preprocess_out = by_model["preprocess"][1]
    assert db_in == {detection.IMAGE: preprocess_out["image"]}
    assert set(db_out) == {detection.DB_PROBABILITY}
    assert post_in == {detection.DB_PROBABILITY: db_out[detection.DB_PROBABILITY],
                       detection.POST_RATIO: preprocess_out["RESIZE_RATIO"],
                       detection.POST_SIZE: preprocess_out["DETECTION_SIZE"]}
    assert set(post_out) == {detection.POST_BOXES, detection.POST_SCORES, detection.DETECTOR}
    for shared in ("preprocess", RECOGNIZE_MODEL):
        assert by_model[shared] == craft_steps[shared], shared
    declared = {model: ([t.name for t in load_config(model, flavour).input],
                        [t.name for t in load_config(model, flavour).output])
                for model in (DB_MODEL, DB_POSTPROCESS_MODEL)}
    assert declared[DB_MODEL] == ([detection.IMAGE], [detection.DB_PROBABILITY])
    assert (sorted(declared[DB_POSTPROCESS_MODEL][0]), declared[DB_POSTPROCESS_MODEL][1]) == (
        sorted(post_in), [detection.POST_BOXES, detection.POST_SCORES, detection.DETECTOR])


def test_every_model_called_through_bls_is_in_the_repository_and_loaded_at_start():
    ensembles = [ensemble for ensemble in MODELS_AT_START if ensemble in DETECTOR_ENSEMBLES.values()]
    assert sorted(ensembles) == sorted(DETECTOR_ENSEMBLES.values())
    stepped = [name for ensemble in ensembles for name, _, _ in steps("cpu", ensemble)]
    for caller, called in BLS_CALLS.items():
        assert caller in stepped
        for model in called:
            assert (REPOSITORY / model / "config.pbtxt").exists(), model
            # Loaded at start: by name, or as a step of an ensemble.
            assert model in MODELS_AT_START or model in stepped, model


def served_models() -> list[str]:
    """Every model a request reaches: the ensembles, their steps, and what their BLS step
    calls (the models loaded at start besides the ensembles)."""
    ensembles = list(DETECTOR_ENSEMBLES.values())
    return list(dict.fromkeys(
        ensembles + [name for ensemble in ensembles for name, _, _ in steps("cpu", ensemble)]
        + [name for name in MODELS_AT_START if name not in ensembles]))


@pytest.mark.parametrize("ensemble", [ENSEMBLE, DB_ENSEMBLE])
def test_ensemble_declares_the_contracts_tensors(ensemble):
    expected = {("input", IMAGE_BYTES.name): (config_type(IMAGE_BYTES.dtype),
                                              list(IMAGE_BYTES.dims), False)}
    for parameter in PARAMETERS:   # every parameter but the detector is an optional [1] input
        if parameter.tensor:
            expected[("input", parameter.tensor)] = (config_type(parameter.dtype), [1], True)
    expected[("input", PAGE.name)] = (config_type(PAGE.dtype), list(PAGE.dims), True)
    for tensor in OUTPUTS + CHARACTER_OUTPUTS:
        expected[("output", tensor.name)] = (config_type(tensor.dtype), list(tensor.dims), False)
    assert tensor_contract(load_config(ensemble, "cpu")) == expected


@pytest.mark.parametrize("flavour", ["batched", "gpu"])
def test_flavours_declare_the_same_graph_and_tensor_contract(flavour):
    assert steps(flavour) == steps("cpu")
    assert steps(flavour, DB_ENSEMBLE) == steps("cpu", DB_ENSEMBLE)
    for model in served_models():
        assert tensor_contract(load_config(model, flavour)) == \
            tensor_contract(load_config(model, "cpu")), model
        assert load_config(model, flavour).max_batch_size == \
            load_config(model, "cpu").max_batch_size, model


@pytest.mark.parametrize("model", ["craft", "refinenet", "db", "recognizer"])
def test_flavours_differ_only_in_how_the_networks_run(model):
    cpu, batched, gpu = (load_config(model, f) for f in ("cpu", "batched", "gpu"))
    kind = model_config_pb2.ModelInstanceGroup
    for config in (cpu, batched):
        assert config.backend == "python"
        assert [g.kind for g in config.instance_group] == [kind.KIND_CPU]
        # Rate limiter: both networks need the one "ocr_engine" unit.
        resources = config.instance_group[0].rate_limiter.resources
        assert [(r.name, r.count, getattr(r, "global")) for r in resources] == \
            [("ocr_engine", 1, True)]
    assert gpu.platform == "onnxruntime_onnx"
    assert [g.kind for g in gpu.instance_group] == [kind.KIND_GPU]
    assert not cpu.HasField("dynamic_batching")
    assert gpu.HasField("dynamic_batching")
    if model != "recognizer":  # the detector's batched flavour; the recognizer batches itself
        assert cpu.max_batch_size == 4
        for config in (batched, gpu):
            assert config.dynamic_batching.max_queue_delay_microseconds == 5000


def test_recognize_never_sends_the_recognizer_more_than_it_takes():
    recognize = load_config("recognize", "cpu")
    batch = int(recognize.parameters["recognizer_batch"].string_value)
    for flavour in FLAVOURS:
        assert 1 <= batch <= load_config("recognizer", flavour).max_batch_size, flavour


def test_batched_flavour_pads_to_a_square_canvas_and_runs_two_pre_post_instances():
    def parameter(config, key):
        return config.parameters[key].string_value

    assert parameter(load_config("preprocess", "cpu"), "canvas") == "fit"
    assert parameter(load_config("preprocess", "batched"), "canvas") == "square"
    for model in ("preprocess", "postprocess"):
        assert load_config(model, "batched").instance_group[0].count == 2


def full_shape(config, dims: list) -> list:
    """The shape a tensor really has: batching models (max_batch_size > 0) add dimension 0."""
    return ([-1] if config.max_batch_size > 0 else []) + list(dims)


def compatible(shape_a: list, shape_b: list) -> bool:
    """Same rank, and every dimension equal or variable (-1) on one side."""
    return len(shape_a) == len(shape_b) and all(
        a == b or -1 in (a, b) for a, b in zip(shape_a, shape_b))


@pytest.mark.parametrize("ensemble", [ENSEMBLE, DB_ENSEMBLE])
@pytest.mark.parametrize("flavour", FLAVOURS)
def test_every_step_mapping_names_real_tensors_of_matching_type(flavour, ensemble):
    ensemble_config = load_config(ensemble, flavour)
    produced = {t.name: (t.data_type, full_shape(ensemble_config, t.dims))
                for t in ensemble_config.input}
    for model, inputs, outputs in steps(flavour, ensemble):
        config = load_config(model, flavour)
        declared_inputs = {t.name: t for t in config.input}
        declared_outputs = {t.name: t for t in config.output}
        for model_tensor, ensemble_tensor in inputs.items():
            tensor = declared_inputs[model_tensor]
            dtype, shape = produced[ensemble_tensor]
            assert tensor.data_type == dtype, (model, model_tensor)
            assert compatible(full_shape(config, tensor.dims), shape), (model, model_tensor)
        for model_tensor, ensemble_tensor in outputs.items():
            tensor = declared_outputs[model_tensor]
            produced[ensemble_tensor] = (tensor.data_type, full_shape(config, tensor.dims))
    for tensor in ensemble_config.output:
        assert produced[tensor.name] == (tensor.data_type, list(tensor.dims)), tensor.name


@pytest.mark.parametrize("model", ["craft", "refinenet", "db", "recognizer"])
def test_onnx_files_match_their_configs(model):
    onnx = REPOSITORY / model / "1" / "model.onnx"
    session = onnxruntime.InferenceSession(str(onnx), providers=["CPUExecutionProvider"])
    config = load_config(model, "gpu")
    assert [i.name for i in session.get_inputs()] == [t.name for t in config.input]
    assert [o.name for o in session.get_outputs()] == [t.name for t in config.output]
    for declared, actual in zip(list(config.input) + list(config.output),
                                session.get_inputs() + session.get_outputs()):
        # Dimension 0 is symbolic (fetch_models named it "batch" in the detector's graphs);
        # the config declares the rest.
        assert isinstance(actual.shape[0], str)
        assert len(declared.dims) == len(actual.shape) - 1
        for dim, real in zip(declared.dims, actual.shape[1:]):
            assert dim == real or (dim == -1 and isinstance(real, str)), (declared.name, real)
