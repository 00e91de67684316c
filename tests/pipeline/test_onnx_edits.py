"""The graph edits fetch_models makes (ocr_pipeline.onnx_edits), on a small graph and on the
real CRAFT file."""

import numpy as np
import onnx
import onnxruntime
from django.conf import settings
from onnx import TensorProto, helper

from ocr_pipeline import onnx_edits
from ocr_pipeline.params import IMAGENET_MEAN, IMAGENET_STD


def identity_image_model() -> onnx.ModelProto:
    """float32 [1, 3, H, W] in, the same out (what CRAFT's first layer reads)."""
    graph = helper.make_graph(
        [helper.make_node("Identity", ["image"], ["out"])], "identity",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, "height", "width"])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 3, "height", "width"])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])


def test_uint8_input_is_normalised_like_the_reference_pipeline():
    model = identity_image_model()
    onnx_edits.dynamic_batch(model)
    onnx_edits.uint8_image_input(model, IMAGENET_MEAN, IMAGENET_STD)
    onnx.checker.check_model(model)
    session = onnxruntime.InferenceSession(model.SerializeToString(),
                                           providers=["CPUExecutionProvider"])
    [image] = session.get_inputs()
    assert (image.type, image.shape) == ("tensor(uint8)", ["batch", "height", "width", 3])
    pixels = np.random.default_rng(1).integers(0, 256, (2, 5, 7, 3), dtype=np.uint8)
    pixels[:, -1] = 0                                    # a padded row
    out = session.run(None, {"image": pixels})[0]
    # clovaai/CRAFT-pytorch imgproc.normalizeMeanVariance, then HWC -> CHW
    mean = np.array(IMAGENET_MEAN, np.float32) * 255
    std = np.array(IMAGENET_STD, np.float32) * 255
    expected = ((pixels.astype(np.float32) - mean) / std).transpose(0, 3, 1, 2)
    assert out.shape == (2, 3, 5, 7)
    np.testing.assert_allclose(out, expected, rtol=1e-6, atol=1e-6)


def test_the_installed_craft_takes_uint8_images_of_any_batch():
    path = settings.TRITON_MODEL_REPOSITORY / "craft" / "1" / "model.onnx"
    [image] = onnx.load(str(path), load_external_data=False).graph.input
    dims = [d.dim_param or d.dim_value for d in image.type.tensor_type.shape.dim]
    assert (image.type.tensor_type.elem_type, dims) == (TensorProto.UINT8,
                                                        ["batch", "height", "width", 3])
