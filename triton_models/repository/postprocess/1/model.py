"""postprocess: CRAFT score maps -> boxes in original-image pixels (ocr_pipeline.boxes); their
reading order is the recognize step's (it depends on the page's angle)."""

import triton_python_backend_utils as pb_utils
from ocr_contract.errors import INVALID_PARAMETER
from ocr_contract.parameters import LINK_THRESHOLD, LOW_TEXT, REFINE, TEXT_THRESHOLD, ParameterError

from ocr_pipeline import boxes, params
from ocr_pipeline.triton_python import optional_input, refusal


class TritonPythonModel:
    """``SCORE_MAPS``, ``REFINED_LINK``, ``RESIZE_RATIO``, ``IMAGE_SIZE`` and the optional
    thresholds -> ``BOXES [N,4,2]``, ``SCORES [N]``."""

    def execute(self, requests):
        return [self._one(request) for request in requests]

    def _one(self, request):
        try:
            text_threshold, link_threshold, low_text = (
                params.read(parameter, optional_input(request, parameter.tensor))
                for parameter in (TEXT_THRESHOLD, LINK_THRESHOLD, LOW_TEXT))
        except ParameterError as exc:
            return refusal(INVALID_PARAMETER, str(exc), exc.field)
        refine = params.read(REFINE, optional_input(request, REFINE.tensor))

        score_maps = optional_input(request, "SCORE_MAPS")[0]
        link = optional_input(request, "REFINED_LINK")[0, 0] if refine else score_maps[1]
        ratio = float(optional_input(request, "RESIZE_RATIO")[0])
        width, height = (int(v) for v in optional_input(request, "IMAGE_SIZE"))

        found, scores = boxes.detect_boxes(score_maps[0], link, text_threshold,
                                           link_threshold, low_text)
        found = boxes.to_image_coordinates(found, ratio, width, height)
        return pb_utils.InferenceResponse(output_tensors=[
            pb_utils.Tensor("BOXES", found), pb_utils.Tensor("SCORES", scores)])
