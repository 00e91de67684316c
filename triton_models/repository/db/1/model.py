"""db: PP-OCR's DB text detector on the CPU. ``image [1,H,W,3]`` uint8 -> ``probability
[1,1,H,W]``. Runs ``model.onnx`` beside this file."""

from ocr_pipeline.triton_python import OnnxPythonModel


class TritonPythonModel(OnnxPythonModel):
    """See :class:`ocr_pipeline.triton_python.OnnxPythonModel`."""
