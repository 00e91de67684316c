"""craft: CRAFT (MLT-25k) on the CPU. ``image [1,H,W,3]`` uint8 -> ``y [1,2,H/2,W/2]``
(region, affinity scores) and ``feature [1,32,H/2,W/2]``. Runs ``model.onnx`` beside this file."""

from ocr_pipeline.triton_python import OnnxPythonModel


class TritonPythonModel(OnnxPythonModel):
    """See :class:`ocr_pipeline.triton_python.OnnxPythonModel`."""
