"""preprocess: encoded image bytes -> the normalised CRAFT input (ocr_pipeline.imaging)."""

import os

import numpy as np
import triton_python_backend_utils as pb_utils

from ocr_pipeline import imaging, params
from ocr_pipeline.triton_python import invalid_argument, model_parameters, optional_input


class TritonPythonModel:
    """``IMAGE_BYTES [1]`` (+ optional ``LONG_SIDE``) -> ``image [1,3,H,W]``,
    ``RESIZE_RATIO [1]``, ``IMAGE_SIZE [2]``. Bad bytes fail only their request (INVALID_ARG)."""

    def initialize(self, args):
        parameters = model_parameters(args)
        # The environment overrides the config, like the engine settings of craft/refinenet.
        self.max_pixels = int(os.environ.get("OCR_MAX_PIXELS")
                              or parameters.get("max_pixels", "40000000"))
        canvas = os.environ.get("OCR_CANVAS") or parameters.get("canvas", "fit")
        if canvas not in ("fit", "square"):
            raise ValueError(f"canvas must be 'fit' or 'square', not {canvas!r}")
        self.square_canvas = canvas == "square"
        self.long_side_bounds = params.long_side_bounds()
        pb_utils.Logger.log_info(f"preprocess: canvas {canvas}, max_pixels {self.max_pixels}, "
                                 f"long_side in {self.long_side_bounds}")

    def execute(self, requests):
        return [self._one(request) for request in requests]

    def _one(self, request):
        data = optional_input(request, "IMAGE_BYTES").reshape(-1)[0]
        try:
            side = params.long_side(optional_input(request, "LONG_SIDE"),
                                    bounds=self.long_side_bounds)
            prepared = imaging.prepare_image(bytes(data), side, max_pixels=self.max_pixels,
                                             square_canvas=self.square_canvas)
        except imaging.ImageTooLargeError as exc:
            return invalid_argument("image_too_large", str(exc))
        except imaging.ImageDecodeError as exc:
            return invalid_argument("image_undecodable", str(exc))
        except ValueError as exc:
            return invalid_argument("invalid_parameter", str(exc))
        return pb_utils.InferenceResponse(output_tensors=[
            pb_utils.Tensor("image", prepared.tensor),
            pb_utils.Tensor("RESIZE_RATIO", np.array([prepared.ratio], dtype=np.float32)),
            pb_utils.Tensor("IMAGE_SIZE", np.array([prepared.width, prepared.height], np.int32)),
        ])
