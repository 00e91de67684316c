"""Where the INT8 model of a network lives, and whether it is still valid.

``manage.py quantize_models`` (:mod:`ocr_pipeline.quantization`) writes ``model_int8.xml`` /
``model_int8.bin`` beside a network's ``model.onnx``, with a record ``model_int8.xml.sha256``
(the files' hashes, the source ONNX's, the recipe's version, the calibration images'). The
engines offer ``int8`` for a network only while that record matches
(:func:`read_int8_record`).
"""

from __future__ import annotations

from pathlib import Path

from ocr_contract.tensors import CRAFT_MODEL, REFINENET_MODEL

from .weights import sha256_of

#: The networks with an INT8 recipe (model repository folder -> the recipe's version, which a
#: record must name: a model made by an older recipe is made again).
RECIPE_VERSIONS = {
    CRAFT_MODEL: "craft-backbone-int8-2",
    REFINENET_MODEL: "refinenet-int8-1",
}


def network_of(onnx_path: str | Path) -> str:
    """The model repository folder an ONNX file belongs to (``.../craft/1/model.onnx`` ->
    ``craft``)."""
    return Path(onnx_path).parent.parent.name


def int8_path(onnx_path: str | Path) -> Path:
    """Where the quantised model of ``model.onnx`` lives: ``model_int8.xml`` (+ ``.bin``)."""
    path = Path(onnx_path)
    return path.with_name(f"{path.stem}_int8.xml")


def int8_record(onnx_path: str | Path) -> Path:
    """The record of how the quantised model was made: ``model_int8.xml.sha256``."""
    target = int8_path(onnx_path)
    return target.with_name(target.name + ".sha256")


def read_int8_record(onnx_path: str | Path) -> dict | None:
    """The quantised model's record as ``{key: value}`` when the model's files and source still
    match it and it was made by the network's current recipe; None otherwise (missing,
    partial, made from another ONNX, by an older recipe, or a network without a recipe)."""
    record, target = int8_record(onnx_path), int8_path(onnx_path)
    recipe = RECIPE_VERSIONS.get(network_of(onnx_path))
    if recipe is None or not (record.exists() and target.exists()
                              and target.with_suffix(".bin").exists()):
        return None
    values = dict(line.split(": ", 1) for line in record.read_text().splitlines() if ": " in line)
    current = {"xml": sha256_of(target), "bin": sha256_of(target.with_suffix(".bin")),
               "source": sha256_of(Path(onnx_path)), "recipe": recipe}
    return values if all(values.get(k) == v for k, v in current.items()) else None
