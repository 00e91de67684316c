"""recognizer: PP-OCRv6 small text recognition on the CPU. ``x [B,3,48,W]`` ->
``best_class [B,W/8]``, ``best_score [B,W/8]`` (the CTC best path). Runs ``model.onnx``
beside this file."""

from ocr_pipeline.triton_python import OnnxPythonModel


class TritonPythonModel(OnnxPythonModel):
    """See :class:`ocr_pipeline.triton_python.OnnxPythonModel`."""
