"""Pre- and post-processing for the CRAFT text detector, shared by the Triton Python models.

This package never imports Django or tritonclient: it is the numeric half of the OCR
pipeline, importable and unit-testable without a running Triton.

Modules:
    params   -- default thresholds, bounds and the ImageNet normalisation constants.
    imaging  -- encoded bytes -> upright RGB -> resized, padded, normalised CRAFT input.
    boxes    -- region/link score maps -> 4-point text boxes in original-image pixels.
    engines  -- onnxruntime / OpenVINO sessions that run craftnet.onnx and refinenet.onnx.
"""
