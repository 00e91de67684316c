"""The model repository contract: configs parse, flavours agree, ONNX files match configs."""

from pathlib import Path

import onnxruntime
import pytest
from django.conf import settings
from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2

REPOSITORY = Path(settings.TRITON_MODEL_REPOSITORY)
ENSEMBLE = "ensemble_ocr"
FLAVOURS = ("cpu", "gpu")


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


def steps(flavour: str) -> list:
    config = load_config(ENSEMBLE, flavour)
    return [(s.model_name, dict(s.input_map), dict(s.output_map))
            for s in config.ensemble_scheduling.step]


def test_ensemble_has_the_four_documented_steps():
    assert [name for name, _, _ in steps("cpu")] == ["preprocess", "craft", "refinenet",
                                                     "postprocess"]
    contract = tensor_contract(load_config(ENSEMBLE, "cpu"))
    assert contract[("input", "IMAGE_BYTES")] == ("TYPE_STRING", [1], False)
    assert contract[("output", "BOXES")] == ("TYPE_FP32", [-1, 4, 2], False)
    assert contract[("output", "SCORES")] == ("TYPE_FP32", [-1], False)
    for name in ("LONG_SIDE", "TEXT_THRESHOLD", "LINK_THRESHOLD", "LOW_TEXT", "REFINE"):
        assert contract[("input", name)][2] is True, name


def test_flavours_declare_the_same_graph_and_tensor_contract():
    assert steps("cpu") == steps("gpu")
    models = [ENSEMBLE] + [name for name, _, _ in steps("cpu")]
    for model in models:
        assert tensor_contract(load_config(model, "cpu")) == \
            tensor_contract(load_config(model, "gpu")), model
        assert load_config(model, "cpu").max_batch_size == \
            load_config(model, "gpu").max_batch_size, model


@pytest.mark.parametrize("model", ["craft", "refinenet"])
def test_flavours_differ_only_in_how_the_networks_run(model):
    cpu, gpu = load_config(model, "cpu"), load_config(model, "gpu")
    assert cpu.backend == "python"
    assert [g.kind for g in cpu.instance_group] == [model_config_pb2.ModelInstanceGroup.KIND_CPU]
    assert gpu.platform == "onnxruntime_onnx"
    assert [g.kind for g in gpu.instance_group] == [model_config_pb2.ModelInstanceGroup.KIND_GPU]


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_every_step_mapping_names_real_tensors_of_matching_type(flavour):
    ensemble = tensor_contract(load_config(ENSEMBLE, flavour))
    produced = {name: spec for (kind, name), spec in ensemble.items() if kind == "input"}
    for model, inputs, outputs in steps(flavour):
        contract = tensor_contract(load_config(model, flavour))
        for model_tensor, ensemble_tensor in inputs.items():
            assert ("input", model_tensor) in contract, (model, model_tensor)
            dtype, dims, _ = contract[("input", model_tensor)]
            assert produced[ensemble_tensor][:2] == (dtype, dims), (model, model_tensor)
        for model_tensor, ensemble_tensor in outputs.items():
            assert ("output", model_tensor) in contract, (model, model_tensor)
            produced[ensemble_tensor] = contract[("output", model_tensor)]
    for (kind, name), spec in ensemble.items():
        if kind == "output":
            assert produced[name][:2] == spec[:2], name


@pytest.mark.parametrize("model", ["craft", "refinenet"])
def test_onnx_files_match_their_configs(model):
    onnx = REPOSITORY / model / "1" / "model.onnx"
    session = onnxruntime.InferenceSession(str(onnx), providers=["CPUExecutionProvider"])
    config = load_config(model, "gpu")
    assert [i.name for i in session.get_inputs()] == [t.name for t in config.input]
    assert [o.name for o in session.get_outputs()] == [t.name for t in config.output]
    for declared, actual in zip(list(config.input) + list(config.output),
                                session.get_inputs() + session.get_outputs()):
        assert len(declared.dims) == len(actual.shape)
        assert [d for d in declared.dims[:2]] == actual.shape[:2]
