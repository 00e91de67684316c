"""postprocess: CRAFT score maps -> boxes in original-image pixels (ocr_pipeline.boxes), and
their lines and paragraphs in reading order (ocr_pipeline.reading_order)."""

import numpy as np
import triton_python_backend_utils as pb_utils
from ocr_contract.errors import INVALID_PARAMETER
from ocr_contract.parameters import LINK_THRESHOLD, LOW_TEXT, REFINE, TEXT_THRESHOLD, ParameterError

from ocr_pipeline import boxes, params, reading_order
from ocr_pipeline.triton_python import optional_input, refusal


class TritonPythonModel:
    """``SCORE_MAPS``, ``REFINED_LINK``, ``RESIZE_RATIO``, ``IMAGE_SIZE`` and the optional
    thresholds -> ``BOXES [N,4,2]``, ``SCORES [N]``, ``READING_ORDER [N]``, ``LINE_OF_BOX
    [N]``, ``LINE_BOXES [L,4,2]``, ``PARAGRAPH_OF_LINE [L]``."""

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
        lines = reading_order.lines_of(found)
        return pb_utils.InferenceResponse(output_tensors=[
            pb_utils.Tensor("BOXES", found), pb_utils.Tensor("SCORES", scores),
            pb_utils.Tensor("READING_ORDER", np.array(reading_order.reading_order(lines),
                                                      np.int32)),
            pb_utils.Tensor("LINE_OF_BOX", np.array(reading_order.line_of_box(lines, len(found)),
                                                    np.int32)),
            pb_utils.Tensor("LINE_BOXES", reading_order.line_polygons(found, lines)),
            pb_utils.Tensor("PARAGRAPH_OF_LINE", np.array(
                reading_order.paragraphs_of(found, lines), np.int32))])
