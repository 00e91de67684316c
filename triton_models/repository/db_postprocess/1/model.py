"""db_postprocess: DB's probability map -> boxes in original-image pixels
(ocr_pipeline.detection.db_postprocess)."""

import numpy as np
import triton_python_backend_utils as pb_utils
from ocr_contract.tensors import DB_DETECTOR

from ocr_pipeline import detection
from ocr_pipeline.detection import (DB_PROBABILITY, DETECTOR, POST_BOXES, POST_RATIO,
                                    POST_SCORES, POST_SIZE)
from ocr_pipeline.triton_python import cancelled, is_cancelled, optional_input

#: The DETECTOR output: these boxes are DB's.
DB = np.array([DB_DETECTOR.encode()], dtype=object)


class TritonPythonModel:
    """``probability``, ``RESIZE_RATIO``, ``IMAGE_SIZE`` -> ``BOXES [N,4,2]``, ``SCORES [N]``,
    ``DETECTOR [1]`` ("db")."""

    def execute(self, requests):
        return [cancelled() if is_cancelled(request) else self._one(request)
                for request in requests]

    def _one(self, request):
        width, height = (int(v) for v in optional_input(request, POST_SIZE))
        found, scores = detection.db_postprocess(
            optional_input(request, DB_PROBABILITY), float(optional_input(request, POST_RATIO)[0]),
            width, height)
        return pb_utils.InferenceResponse(output_tensors=[
            pb_utils.Tensor(POST_BOXES, found), pb_utils.Tensor(POST_SCORES, scores),
            pb_utils.Tensor(DETECTOR, DB)])
