"""The ensemble's inputs and requested outputs for one image (names and dtypes from
:mod:`ocr_contract`)."""

from __future__ import annotations

import numpy as np
import tritonclient.grpc as grpcclient
from ocr_contract.parameters import BY_NAME, DETAIL, DETAIL_CHARACTERS
from ocr_contract.tensors import CHARACTER_OUTPUTS, IMAGE_BYTES, OUTPUTS, PAGE
from tritonclient.utils import triton_to_np_dtype


def bytes_array(value: bytes) -> np.ndarray:
    """A ``[1]`` BYTES array holding ``value``.

    ``dtype=object``, never numpy's fixed-width ``bytes_``: that one drops trailing NUL bytes
    and would corrupt every image file that ends in zeros.
    """
    return np.array([value], dtype=object)


def image_input(image: bytes) -> grpcclient.InferInput:
    """``IMAGE_BYTES [1]``: the encoded file, in the gRPC message."""
    tensor = grpcclient.InferInput(IMAGE_BYTES.name, list(IMAGE_BYTES.dims), IMAGE_BYTES.dtype)
    tensor.set_data_from_numpy(bytes_array(image))
    return tensor


def parameter_inputs(parameters: dict) -> list[grpcclient.InferInput]:
    """One ``[1]`` input per parameter that is set (None or absent: the model's default).

    Args:
        parameters: ``{API name: value}``; text values are sent UTF-8 encoded. The key
            ``"PAGE"`` (:data:`ocr_contract.tensors.PAGE`, never a client parameter) picks the
            page of a multi-page file.

    Raises:
        KeyError: a name that is not a parameter of :mod:`ocr_contract.parameters`.
    """
    inputs = []
    for name, value in parameters.items():
        if value is None:
            continue
        if name == PAGE.name:
            tensor = grpcclient.InferInput(PAGE.name, list(PAGE.dims), PAGE.dtype)
            tensor.set_data_from_numpy(np.array([value], dtype=np.int32))
            inputs.append(tensor)
            continue
        parameter = BY_NAME[name]
        if not parameter.tensor:            # it picks the ensemble (detector): not an input
            continue
        tensor = grpcclient.InferInput(parameter.tensor, [1], parameter.dtype)
        if parameter.dtype == "BYTES":
            tensor.set_data_from_numpy(bytes_array(str(value).encode("utf-8")))
        else:
            tensor.set_data_from_numpy(np.array([value], dtype=triton_to_np_dtype(parameter.dtype)))
        inputs.append(tensor)
    return inputs


def build_inputs(image: bytes, parameters: dict) -> list[grpcclient.InferInput]:
    """Every input of one request: the image in the message, then the parameters."""
    return [image_input(image), *parameter_inputs(parameters)]


def wants_characters(parameters: dict) -> bool:
    """The request asks for each word's characters (``detail=characters``)."""
    return parameters.get(DETAIL.name) == DETAIL_CHARACTERS


def requested_outputs(parameters: dict | None = None) -> list[grpcclient.InferRequestedOutput]:
    """The ensemble outputs the gateway reads (:data:`ocr_contract.tensors.OUTPUTS`, and
    :data:`~ocr_contract.tensors.CHARACTER_OUTPUTS` when ``parameters`` ask for characters:
    only then, since they are empty otherwise and Triton's response cache skips an answer with
    an empty tensor)."""
    tensors = OUTPUTS + (CHARACTER_OUTPUTS if wants_characters(parameters or {}) else ())
    return [grpcclient.InferRequestedOutput(tensor.name) for tensor in tensors]
