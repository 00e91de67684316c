"""refinenet: CRAFT's LinkRefiner (CTW1500) on the CPU. ``y [1,2,h,w]``, ``feature [1,32,h,w]``
-> ``y_refined [1,1,h,w]`` (refined link score). Runs ``model.onnx`` beside this file."""

from ocr_pipeline.triton_python import OnnxPythonModel


class TritonPythonModel(OnnxPythonModel):
    """See :class:`ocr_pipeline.triton_python.OnnxPythonModel`."""
