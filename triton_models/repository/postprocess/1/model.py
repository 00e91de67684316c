"""postprocess: CRAFT score maps -> boxes in original-image pixels
(ocr_pipeline.detection.postprocess); their reading order is the recognize step's (it depends
on the page's angle)."""

import numpy as np
import triton_python_backend_utils as pb_utils
from ocr_contract.errors import INVALID_PARAMETER
from ocr_contract.parameters import LINK_THRESHOLD, LOW_TEXT, REFINE, TEXT_THRESHOLD, ParameterError
from ocr_contract.tensors import CRAFT_DETECTOR

from ocr_pipeline import detection, params
from ocr_pipeline.detection import (DETECTOR, POST_BOXES, POST_LINK, POST_MAPS, POST_RATIO,
                                    POST_SCORES, POST_SIZE)
from ocr_pipeline.triton_python import cancelled, is_cancelled, optional_input, refusal


#: The DETECTOR output: these boxes are CRAFT's.
CRAFT = np.array([CRAFT_DETECTOR.encode()], dtype=object)


class TritonPythonModel:
    """``SCORE_MAPS``, ``REFINED_LINK``, ``RESIZE_RATIO``, ``IMAGE_SIZE`` and the optional
    thresholds -> ``BOXES [N,4,2]``, ``SCORES [N]``, ``DETECTOR [1]`` ("craft")."""

    def execute(self, requests):
        return [cancelled() if is_cancelled(request) else self._one(request)
                for request in requests]

    def _one(self, request):
        try:
            text_threshold, link_threshold, low_text = (
                params.read(parameter, optional_input(request, parameter.tensor))
                for parameter in (TEXT_THRESHOLD, LINK_THRESHOLD, LOW_TEXT))
        except ParameterError as exc:
            return refusal(INVALID_PARAMETER, str(exc), exc.field)
        refine = params.read(REFINE, optional_input(request, REFINE.tensor))
        width, height = (int(v) for v in optional_input(request, POST_SIZE))
        found, scores = detection.postprocess(
            optional_input(request, POST_MAPS), optional_input(request, POST_LINK),
            float(optional_input(request, POST_RATIO)[0]), width, height,
            text_threshold, link_threshold, low_text, refine)
        return pb_utils.InferenceResponse(output_tensors=[
            pb_utils.Tensor(POST_BOXES, found), pb_utils.Tensor(POST_SCORES, scores),
            pb_utils.Tensor(DETECTOR, CRAFT)])
