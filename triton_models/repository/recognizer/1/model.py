"""recognizer: PP-OCRv6 small text recognition on the CPU. ``x [B,3,48,W]`` ->
``fetch_name_0 [B,W/8,18710]``. Runs ``model.onnx`` beside this file."""

from ocr_pipeline.triton_python import OnnxPythonModel


class TritonPythonModel(OnnxPythonModel):
    """See :class:`ocr_pipeline.triton_python.OnnxPythonModel`."""
