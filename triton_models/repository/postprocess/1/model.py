"""postprocess: CRAFT score maps -> boxes in original-image pixels (ocr_pipeline.boxes)."""

import numpy as np
import triton_python_backend_utils as pb_utils

from ocr_pipeline import boxes, params
from ocr_pipeline.triton_python import invalid_argument, optional_input


class TritonPythonModel:
    """``SCORE_MAPS``, ``REFINED_LINK``, ``RESIZE_RATIO``, ``IMAGE_SIZE`` and the optional
    thresholds -> ``BOXES [N,4,2]`` and ``SCORES [N]``."""

    def execute(self, requests):
        return [self._one(request) for request in requests]

    def _one(self, request):
        try:
            text_threshold = params.threshold(optional_input(request, "TEXT_THRESHOLD"),
                                              params.DEFAULT_TEXT_THRESHOLD, "text_threshold")
            link_threshold = params.threshold(optional_input(request, "LINK_THRESHOLD"),
                                              params.DEFAULT_LINK_THRESHOLD, "link_threshold")
            low_text = params.threshold(optional_input(request, "LOW_TEXT"),
                                        params.DEFAULT_LOW_TEXT, "low_text")
        except ValueError as exc:
            return invalid_argument("invalid_parameter", str(exc))
        refine = params.flag(optional_input(request, "REFINE"), params.DEFAULT_REFINE)

        score_maps = optional_input(request, "SCORE_MAPS")[0]
        link = optional_input(request, "REFINED_LINK")[0, 0] if refine else score_maps[1]
        ratio = float(optional_input(request, "RESIZE_RATIO")[0])
        width, height = (int(v) for v in optional_input(request, "IMAGE_SIZE"))

        found, scores = boxes.detect_boxes(score_maps[0], link, text_threshold,
                                           link_threshold, low_text)
        found = boxes.to_image_coordinates(found, ratio, width, height)
        return pb_utils.InferenceResponse(output_tensors=[
            pb_utils.Tensor("BOXES", found), pb_utils.Tensor("SCORES", scores)])
