"""recognize: boxes + the decoded original -> which way up each box's text is and the page's
angle (ocr_pipeline.orientation), the text of every box, the reading order in the text's own
frame, and the whole text (BLS over the recognizer and tesseract models; see config.pbtxt)."""

from pathlib import Path

import numpy as np
import triton_python_backend_utils as pb_utils
from ocr_contract.errors import INVALID_PARAMETER
from ocr_contract.languages import TESSERACT
from ocr_contract.parameters import (LANGUAGE, LINK_THRESHOLD, LONG_SIDE, LOW_TEXT,
                                     ORIENTATION, ORIENTATION_AUTO, RECOGNIZE, REFINE,
                                     TEXT_THRESHOLD, ParameterError)
from ocr_contract.tensors import RECOGNIZER_INPUT, RECOGNIZER_MODEL, RECOGNIZER_OUTPUT
from ocr_contract.tensors import TESSERACT_MODEL

from ocr_pipeline import (detection, imaging, orientation, params, reading_order, recognition,
                          routing, tesseract)
from ocr_pipeline.recognition import Reading
from ocr_pipeline.triton_python import model_parameters, optional_input, refusal


class TritonPythonModel:
    """``ORIGINAL_IMAGE``, ``BOXES``, ``SCORES``, ``CANVAS`` (+ optional ``RECOGNIZE``,
    ``LANGUAGE``, ``ORIENTATION`` and the detection parameters) -> ``ORIENTED_BOXES``,
    ``ANGLE``, ``TEXTS``, ``TEXT_SCORES``, ``TEXT`` and the reading order (``READING_ORDER``,
    ``LINE_OF_BOX``, ``LINE_BOXES``, ``PARAGRAPH_OF_LINE``)."""

    def initialize(self, args):
        self.batch = int(model_parameters(args)["recognizer_batch"])
        # The recognizer's versions live beside this model; each holds its dictionary.
        self.recognizer_dir = Path(args["model_repository"]).parent / RECOGNIZER_MODEL
        self.dictionaries: dict[int, list[str]] = {}

    def execute(self, requests):
        return [self._one(request) for request in requests]

    def _one(self, request):
        try:
            wanted = params.read(RECOGNIZE, optional_input(request, RECOGNIZE.tensor))
            codes = params.read(LANGUAGE, optional_input(request, LANGUAGE.tensor))
            auto = params.read(ORIENTATION, optional_input(request, ORIENTATION.tensor)) \
                == ORIENTATION_AUTO
        except ParameterError as exc:
            return refusal(INVALID_PARAMETER, str(exc), exc.field)
        boxes = optional_input(request, "BOXES").reshape(-1, 4, 2)
        scores = optional_input(request, "SCORES").reshape(-1)
        if not wanted or len(boxes) == 0:
            return _response(boxes, scores, 0, [], [], "", *reading_order.layout(boxes))
        image = optional_input(request, "ORIGINAL_IMAGE")
        height, width = image.shape[:2]
        route = routing.route(codes)
        try:
            angle, flipped, known = 0, None, None
            if auto:
                voted = orientation.vote(image, boxes, self._recognizer, recognition.CROP_MARGIN)
                angle = voted[0]
                if angle:
                    # A turned page: found again on the page turned upright (CRAFT is not
                    # rotation-invariant), read there, and the boxes turned back.
                    upright = np.ascontiguousarray(np.rot90(image, k=angle // 90))
                    boxes, scores = self._detect(request, upright)
                    decision = orientation.decide(upright, boxes, self._recognizer,
                                                  recognition.CROP_MARGIN)
                    image = upright
                else:
                    decision = orientation.decide(image, boxes, self._recognizer,
                                                  recognition.CROP_MARGIN, voted)
                known = decision.readings
                # A line upside down on the page read; a turned page's second vote is 0 unless
                # the first took 90 for 270 or the reverse (then 180: the page's angle is that).
                flipped = [(a - decision.page) % 360 == 180 for a in decision.angles]
                boxes = np.stack([orientation.oriented(box, a)
                                  for box, a in zip(boxes, decision.angles)]) \
                    if len(boxes) else boxes.reshape(0, 4, 2)
            readings = self._read(image, boxes, route, known) if len(boxes) else []
        except pb_utils.TritonModelException as exc:
            return pb_utils.InferenceResponse(error=pb_utils.TritonError(str(exc)))
        if angle:
            boxes = orientation.from_upright(boxes, angle, width, height)
            angle = (angle + decision.page) % 360
        texts = [reading.text for reading in readings]
        lines, polygons, paragraphs = reading_order.layout(boxes, angle, width, height, flipped)
        return _response(boxes, scores, angle, texts, [reading.score for reading in readings],
                         reading_order.full_text(texts, lines), lines, polygons, paragraphs)

    def _detect(self, request, image: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The detection chain again (:func:`ocr_pipeline.detection.detect`: craft, refinenet
        when REFINE, postprocess, through BLS) on ``image`` (uint8 ``[H, W, 3]``), at the
        request's working size and thresholds, on the canvas preprocess used (its ``CANVAS``).

        Returns:
            float32 ``[N, 4, 2]`` boxes in ``image``'s pixels, float32 ``[N]`` their scores.
        """
        sent_side = optional_input(request, LONG_SIDE.tensor)
        side = None if sent_side is None else params.read(LONG_SIDE, sent_side)
        canvas = bytes(optional_input(request, "CANVAS").reshape(-1)[0]).decode()
        prepared = imaging.prepare_pixels(image, side, canvas == imaging.SQUARE_CANVAS)
        sent = {parameter.tensor: optional_input(request, parameter.tensor)
                for parameter in (TEXT_THRESHOLD, LINK_THRESHOLD, LOW_TEXT, REFINE)}
        refine = params.read(REFINE, sent[REFINE.tensor])
        return detection.detect(_run, prepared, refine,
                                {name: value for name, value in sent.items() if value is not None})

    def _read(self, image: np.ndarray, boxes: np.ndarray, route: routing.Route,
              known: list[Reading] | None = None) -> list[Reading]:
        """Each box's reading, by the route's recognizer (see ocr_pipeline.routing);
        ``known``: the recognizer's readings of these boxes, when already read."""
        if route.recognizer == TESSERACT:
            return self._tesseract(_crops(image, boxes, tesseract.CROP_MARGIN),
                                   route.tesseract_languages)
        readings = known if known is not None else \
            self._recognizer(_crops(image, boxes, recognition.CROP_MARGIN))
        if route.auto:
            readings = routing.second_opinion(readings, lambda indices, languages: self._tesseract(
                _crops(image, boxes[indices], tesseract.CROP_MARGIN), languages))
        return readings

    def _recognizer(self, crops: list[np.ndarray]) -> list[Reading]:
        """PP-OCR on the crops, in batches of similar width."""
        readings: list[Reading] = [Reading("", 0.0)] * len(crops)
        widths = [recognition.resized_width(crop) for crop in crops]
        for batch in recognition.plan_batches(widths, self.batch):
            tensor = recognition.batch_tensor([crops[i] for i in batch])
            probabilities = _call(RECOGNIZER_MODEL, [pb_utils.Tensor(RECOGNIZER_INPUT, tensor)],
                                  [RECOGNIZER_OUTPUT])[0]
            classes = self._dictionary(probabilities.shape[-1])
            for i, reading in zip(batch, recognition.ctc_greedy(probabilities, classes)):
                readings[i] = reading
        return readings

    def _tesseract(self, crops: list[np.ndarray], languages: str) -> list[Reading]:
        """Tesseract on the crops (one call, lines padded to the widest)."""
        lines = [tesseract.line_image(crop) for crop in crops]
        widest = max(line.shape[1] for line in lines)
        stacked = np.full((len(lines), tesseract.HEIGHT, widest), 255, dtype=np.uint8)
        for row, line in enumerate(lines):
            stacked[row, :, :line.shape[1]] = line
        texts, scores = _call(TESSERACT_MODEL, [
            pb_utils.Tensor("LINES", stacked),
            pb_utils.Tensor("WIDTHS", np.array([line.shape[1] for line in lines], np.int32)),
            pb_utils.Tensor("LANGUAGES", np.array([languages.encode()], dtype=object))],
            ["TEXTS", "TEXT_SCORES"])
        return [Reading(bytes(text).decode("utf-8"), float(score))
                for text, score in zip(texts, scores)]

    def _dictionary(self, classes: int) -> list[str]:
        """The dictionary of the recognizer version whose output has ``classes`` classes
        (loaded once; rescanned when a new version appears)."""
        if classes not in self.dictionaries:
            for path in sorted(self.recognizer_dir.glob("*/dict.txt")):
                dictionary = recognition.load_dictionary(path)
                self.dictionaries.setdefault(len(dictionary), dictionary)
        if classes not in self.dictionaries:
            raise pb_utils.TritonModelException(
                f"no recognizer dictionary with {classes} classes in {self.recognizer_dir}")
        return self.dictionaries[classes]


def _crops(image: np.ndarray, boxes: np.ndarray, margin: float) -> list[np.ndarray]:
    """Each box cut out of the full-resolution original, grown by ``margin`` of its height."""
    height, width = image.shape[:2]
    return [recognition.crop_box(image, recognition.expand_box(box, width, height, margin))
            for box in boxes]


def _call(model: str, inputs: list, outputs: list[str]) -> list[np.ndarray]:
    """One BLS request; the named outputs as numpy.

    Raises:
        pb_utils.TritonModelException: the model failed or is not loaded.
    """
    response = pb_utils.InferenceRequest(model_name=model, inputs=inputs,
                                         requested_output_names=outputs).exec()
    if response.has_error():
        raise pb_utils.TritonModelException(f"{model}: {response.error().message()}")
    return [pb_utils.get_output_tensor_by_name(response, name).as_numpy() for name in outputs]


def _run(model: str, inputs: dict[str, np.ndarray], outputs: tuple[str, ...]
         ) -> dict[str, np.ndarray]:
    """:data:`ocr_pipeline.detection.RunModel` through BLS (:func:`_call`)."""
    arrays = _call(model, [pb_utils.Tensor(name, value) for name, value in inputs.items()],
                   list(outputs))
    return dict(zip(outputs, arrays))


def _response(boxes: np.ndarray, scores: np.ndarray, angle: int, texts: list[str],
              text_scores: list[float], text: str, lines: list[list[int]], polygons: np.ndarray,
              paragraphs: list[int]):
    """The step's outputs (config.pbtxt): boxes with their corners from their text's
    top-left, the page angle, the texts, and the reading order (:func:`reading_order.layout`)."""
    return pb_utils.InferenceResponse(output_tensors=[
        pb_utils.Tensor("ORIENTED_BOXES", np.asarray(boxes, np.float32).reshape(-1, 4, 2)),
        pb_utils.Tensor("ORIENTED_SCORES", np.asarray(scores, np.float32).reshape(-1)),
        pb_utils.Tensor("ANGLE", np.array([angle], np.int32)),
        pb_utils.Tensor("TEXTS", np.array([t.encode("utf-8") for t in texts], dtype=object)),
        pb_utils.Tensor("TEXT_SCORES", np.array(text_scores, dtype=np.float32)),
        pb_utils.Tensor("TEXT", np.array([text.encode("utf-8")], dtype=object)),
        pb_utils.Tensor("READING_ORDER", np.array(reading_order.reading_order(lines), np.int32)),
        pb_utils.Tensor("LINE_OF_BOX", np.array(reading_order.line_of_box(lines, len(boxes)),
                                                np.int32)),
        pb_utils.Tensor("LINE_BOXES", np.asarray(polygons, np.float32).reshape(-1, 4, 2)),
        pb_utils.Tensor("PARAGRAPH_OF_LINE", np.array(paragraphs, np.int32)),
    ])
