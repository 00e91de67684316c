"""recognize: boxes + the decoded original -> which way up each box's text is and the page's
angle (ocr_pipeline.orientation), the text of every box, the reading order in the text's own
frame, and the whole text (BLS over the recognizer and tesseract models; see config.pbtxt)."""

from functools import cache, partial
from pathlib import Path
from typing import Callable

import numpy as np
import triton_python_backend_utils as pb_utils
from ocr_contract.errors import INVALID_PARAMETER
from ocr_contract.languages import TESSERACT
from ocr_contract.parameters import (DETAIL, DETAIL_CHARACTERS, LANGUAGE, LINK_THRESHOLD,
                                     LONG_SIDE, LOW_TEXT, ORIENTATION, ORIENTATION_AUTO,
                                     RECOGNIZE, REFINE, TEXT_THRESHOLD, ParameterError)
from ocr_contract.tensors import (CRAFT_DETECTOR, RECOGNIZER_INPUT, RECOGNIZER_MODEL,
                                  RECOGNIZER_OUTPUTS, TESSERACT_MODEL)

from ocr_pipeline import (detection, imaging, orientation, params, reading_order, recognition,
                          routing, tesseract, words)
from ocr_pipeline.versions import versions
from ocr_pipeline.recognition import Reading, Span
from ocr_pipeline.triton_python import (RequestCancelled, cancelled, model_parameters,
                                        optional_input, refusal, stop_if_cancelled)


class TritonPythonModel:
    """``ORIGINAL_IMAGE``, ``BOXES``, ``SCORES``, ``CANVAS`` (+ optional ``PAGE_TURN``,
    ``RECOGNIZE``, ``LANGUAGE``, ``ORIENTATION``, ``DETAIL`` and the detection parameters) ->
    ``ORIENTED_BOXES``, ``ANGLE``, ``TEXTS``, ``TEXT_SCORES``, ``TEXT``, the reading order
    (``READING_ORDER``, ``LINE_OF_BOX``, ``LINE_BOXES``, ``PARAGRAPH_OF_LINE``) and the words
    (``WORD_*``, ``BOX_OF_WORD``; ``CHARACTER_*``, ``WORD_OF_CHARACTER``)."""

    def initialize(self, args):
        self.batch = int(model_parameters(args)["recognizer_batch"])
        # The recognizer's versions live beside this model; each holds its dictionary.
        self.recognizer_dir = Path(args["model_repository"]).parent / RECOGNIZER_MODEL
        self.dictionaries: dict[int, list[str]] = {}

    def execute(self, requests):
        """One response per request; a request its client gave up on is answered CANCELLED
        instead of being read (ocr_pipeline.triton_python.is_cancelled): at once, or before
        its next BLS call. As an ensemble step, its request is marked only when the ensemble
        was cancelled before this step was scheduled (Triton 2.51)."""
        responses = []
        for request in requests:
            try:
                responses.append(self._one(request))
            except RequestCancelled:
                responses.append(cancelled())
        return responses

    def _one(self, request):
        stop_if_cancelled(request)
        try:
            wanted = params.read(RECOGNIZE, optional_input(request, RECOGNIZE.tensor))
            codes = params.read(LANGUAGE, optional_input(request, LANGUAGE.tensor))
            auto = params.read(ORIENTATION, optional_input(request, ORIENTATION.tensor)) \
                == ORIENTATION_AUTO
            characters = params.read(DETAIL, optional_input(request, DETAIL.tensor)) \
                == DETAIL_CHARACTERS
        except ParameterError as exc:
            return refusal(INVALID_PARAMETER, str(exc), exc.field)
        boxes = optional_input(request, "BOXES").reshape(-1, 4, 2)
        scores = optional_input(request, "SCORES").reshape(-1)
        if not wanted or len(boxes) == 0:
            # (preprocess turns a page only when text is read: then it knows its angle.)
            return _response(boxes, scores, _page_turn(request), [], [], "",
                             *reading_order.layout(boxes), [])
        image = optional_input(request, "ORIGINAL_IMAGE")
        height, width = image.shape[:2]
        route = routing.route(codes)
        # The served recognizer version is looked up once per request, on first use.
        read = partial(self._recognizer, parent=request,
                       served=cache(self._served_recognizer))
        try:
            # A page of print too small for the default working size is found again larger,
            # judged on upright boxes.
            explicit = optional_input(request, LONG_SIDE.tensor) is not None
            side = None if explicit else \
                imaging.small_print_side(reading_order.box_sides(boxes)[1], width, height)
            angle, flipped, known = 0, None, None
            if auto:
                voted = orientation.vote(image, boxes, read, recognition.CROP_MARGIN)
                angle = voted[0]
                if angle:
                    # A turned page: found again on the page turned upright (CRAFT is not
                    # rotation-invariant), read there, and the boxes turned back. Its size is
                    # chosen there as for an upright page: on the turned page CRAFT finds
                    # fragments (linn.pdf turned 90: 143 boxes, median height 14.0 px, against
                    # 82 and 15.9 upright), which called for small print's larger size.
                    upright = np.ascontiguousarray(np.rot90(image, k=angle // 90))
                    boxes, scores = self._detect(request, upright)
                    side = None if explicit else imaging.small_print_side(
                        reading_order.box_sides(boxes)[1], upright.shape[1], upright.shape[0])
                    if side:
                        boxes, scores = self._detect(request, upright, side)
                    decision = orientation.decide(upright, boxes, read,
                                                  recognition.CROP_MARGIN)
                    image = upright
                else:
                    if side:
                        boxes, scores = self._detect(request, image, side)
                    decision = orientation.decide(image, boxes, read, recognition.CROP_MARGIN,
                                                  None if side else voted)
                known = decision.readings
                # A line upside down on the page read; a turned page's second vote is 0 unless
                # the first took 90 for 270 or the reverse (then 180: the page's angle is that).
                flipped = [(a - decision.page) % 360 == 180 for a in decision.angles]
                boxes = np.stack([orientation.oriented(box, a)
                                  for box, a in zip(boxes, decision.angles)]) \
                    if len(boxes) else boxes.reshape(0, 4, 2)
            elif side:
                boxes, scores = self._detect(request, image, side)
            readings = self._read(request, image, boxes, route, read, known) \
                if len(boxes) else []
        except pb_utils.TritonModelException as exc:
            return pb_utils.InferenceResponse(error=pb_utils.TritonError(str(exc)))
        found = _words(image, boxes, readings, characters)
        if angle:
            boxes = orientation.from_upright(boxes, angle, width, height)
            found = [[_turned_back(word, angle, width, height) for word in box_words]
                     for box_words in found]
            angle = (angle + decision.page) % 360
        turn = _page_turn(request)
        if turn:
            # preprocess turned the page upright before detection (ocr_pipeline.page_turn):
            # everything so far is in that page's pixels; the answer is in the uploaded one's.
            width, height = height, width
            boxes = orientation.from_upright(boxes, turn, width, height)
            found = [[_turned_back(word, turn, width, height) for word in box_words]
                     for box_words in found]
            angle = (angle + turn) % 360
        lines, polygons, paragraphs = reading_order.layout(boxes, angle, width, height, flipped)
        texts, found = words.without_repeats(lines, [reading.text for reading in readings],
                                             found)
        return _response(boxes, scores, angle, texts, [reading.score for reading in readings],
                         reading_order.full_text(texts, lines), lines, polygons, paragraphs,
                         found)

    def _detect(self, request, image: np.ndarray, side: int | None = None
                ) -> tuple[np.ndarray, np.ndarray]:
        """The detection chain again (:func:`ocr_pipeline.detection.detect`, through BLS: the
        one that found the boxes, the request's ``DETECTOR``) on ``image`` (uint8 ``[H, W,
        3]``), at the request's working size (or long side ``side``, pixels) and thresholds,
        on the canvas preprocess used (its ``CANVAS``).

        Returns:
            float32 ``[N, 4, 2]`` boxes in ``image``'s pixels, float32 ``[N]`` their scores.
        """
        sent_side = optional_input(request, LONG_SIDE.tensor)
        if side is None and sent_side is not None:
            side = params.read(LONG_SIDE, sent_side)
        canvas = bytes(optional_input(request, "CANVAS").reshape(-1)[0]).decode()
        prepared = imaging.prepare_pixels(image, side, canvas == imaging.SQUARE_CANVAS)
        sent = {parameter.tensor: optional_input(request, parameter.tensor)
                for parameter in (TEXT_THRESHOLD, LINK_THRESHOLD, LOW_TEXT, REFINE)}
        refine = params.read(REFINE, sent[REFINE.tensor])
        detector = optional_input(request, detection.DETECTOR)
        return detection.detect(partial(_run, parent=request), prepared, refine,
                                {name: value for name, value in sent.items() if value is not None},
                                CRAFT_DETECTOR if detector is None
                                else bytes(detector.reshape(-1)[0]).decode())

    def _read(self, request, image: np.ndarray, boxes: np.ndarray, route: routing.Route,
              read, known: list[Reading] | None = None) -> list[Reading]:
        """Each box's reading, by the route's recognizer (see ocr_pipeline.routing): ``read``
        is the request's PP-OCR (:meth:`_recognizer`); ``known``: its readings of these boxes,
        when already read."""
        if route.recognizer == TESSERACT:
            return self._tesseract(_crops(image, boxes, tesseract.CROP_MARGIN),
                                   route.tesseract_languages, request)
        readings = known if known is not None else \
            read(_crops(image, boxes, recognition.CROP_MARGIN))
        if route.auto:
            readings = routing.second_opinion(readings, lambda indices, languages: self._tesseract(
                _crops(image, boxes[indices], tesseract.CROP_MARGIN), languages, request))
        return readings

    def _recognizer(self, crops: list[np.ndarray], parent,
                    served: Callable[[], tuple[int, list[str]]]) -> list[Reading]:
        """PP-OCR on the crops, in batches of similar width, for request ``parent``;
        ``served``: :meth:`_served_recognizer`, its answer kept for the request."""
        readings: list[Reading] = [Reading("", 0.0)] * len(crops)
        widths = [recognition.resized_width(crop) for crop in crops]
        version, classes = served()
        for batch in recognition.plan_batches(widths, self.batch):
            tensor = recognition.batch_tensor([crops[i] for i in batch])
            best, confidence = _call(RECOGNIZER_MODEL,
                                     [pb_utils.Tensor(RECOGNIZER_INPUT, tensor)],
                                     list(RECOGNIZER_OUTPUTS), parent, version)
            try:
                found = recognition.ctc_greedy(best, confidence, classes)
            except ValueError as exc:  # that version's graph and dict.txt do not agree
                raise pb_utils.TritonModelException(f"{RECOGNIZER_MODEL}: {exc}") from exc
            for i, reading in zip(batch, found):
                readings[i] = reading
        return readings

    def _tesseract(self, crops: list[np.ndarray], languages: str, parent) -> list[Reading]:
        """Tesseract on the crops (one call, lines padded to the widest), for ``parent``."""
        lines = [tesseract.line_image(crop) for crop in crops]
        widest = max(line.shape[1] for line in lines)
        stacked = np.full((len(lines), tesseract.HEIGHT, widest), 255, dtype=np.uint8)
        for row, line in enumerate(lines):
            stacked[row, :, :line.shape[1]] = line
        outputs = _call(TESSERACT_MODEL, [
            pb_utils.Tensor("LINES", stacked),
            pb_utils.Tensor("WIDTHS", np.array([line.shape[1] for line in lines], np.int32)),
            pb_utils.Tensor("LANGUAGES", np.array([languages.encode()], dtype=object))],
            ["TEXTS", "TEXT_SCORES", "WORD_BOXES", "WORD_TEXTS", "WORD_SCORES", "LINE_OF_WORD",
             "SYMBOL_BOXES", "SYMBOL_TEXTS", "SYMBOL_SCORES", "WORD_OF_SYMBOL"], parent)
        texts, scores = outputs[:2]
        # Tesseract's boxes are in the pixels of the line images: scaled back to the crops'.
        scales = [(crop.shape[1] / line.shape[1], crop.shape[0] / line.shape[0])
                  for crop, line in zip(crops, lines)]
        found = _spans(*outputs[2:6], [scales[i] for i in outputs[5]])
        line_of_word = outputs[5]
        symbols = _spans(*outputs[6:10], [scales[line_of_word[w]] for w in outputs[9]])
        return [Reading(bytes(text).decode("utf-8"), float(score),
                        words=tuple(span for span, line in found if line == row),
                        characters=tuple(tuple(s for s, w in symbols if w == word)
                                         for word in np.flatnonzero(line_of_word == row)))
                for row, (text, score) in enumerate(zip(texts, scores))]

    def _served_recognizer(self) -> tuple[int, list[str]]:
        """The newest recognizer version Triton has ready, and its dictionary (loaded once per
        version): the BLS calls name that version, so that its output is decoded with its own
        ``dict.txt`` while a newer folder is copied in but not loaded yet (explicit model
        control: deploy/README.md, "Rolling out a model").

        Raises:
            pb_utils.TritonModelException: no version folder with a ``dict.txt`` is ready.
        """
        held = versions(self.recognizer_dir, "dict.txt")
        for version in held:
            if pb_utils.is_model_ready(model_name=RECOGNIZER_MODEL, model_version=str(version)):
                if version not in self.dictionaries:
                    self.dictionaries[version] = recognition.load_dictionary(
                        self.recognizer_dir / str(version) / "dict.txt")
                return version, self.dictionaries[version]
        raise pb_utils.TritonModelException(
            f"no version of {RECOGNIZER_MODEL} with a dict.txt is ready ({held})")


def _page_turn(request) -> int:
    """preprocess's turn of the page (``PAGE_TURN``, clockwise degrees; 0 when not sent)."""
    turn = optional_input(request, "PAGE_TURN")
    return 0 if turn is None else int(turn.reshape(-1)[0])


def _crops(image: np.ndarray, boxes: np.ndarray, margin: float) -> list[np.ndarray]:
    """Each box cut out of the full-resolution original, grown by ``margin`` of its height."""
    height, width = image.shape[:2]
    return [recognition.crop_box(image, recognition.expand_box(box, width, height, margin))
            for box in boxes]


def _spans(boxes: np.ndarray, texts: np.ndarray, scores: np.ndarray, owners: np.ndarray,
           scales: list[tuple[float, float]]) -> list[tuple[Span, int]]:
    """The tesseract model's word or symbol outputs as ``(Span, owner)`` pairs, each box
    (left, top, right, bottom) scaled by its ``(x, y)`` scale to its crop's pixels."""
    return [(Span(bytes(text).decode("utf-8"), float(box[0] * sx), float(box[2] * sx),
                  float(score), float(box[1] * sy), float(box[3] * sy)), int(owner))
            for box, text, score, owner, (sx, sy) in zip(boxes, texts, scores, owners, scales)]


def _words(image: np.ndarray, boxes: np.ndarray, readings: list[Reading],
           characters: bool) -> list[list[words.Word]]:
    """Each box's words (:func:`ocr_pipeline.words.line_words`), placed in ``image``'s
    pixels from the crop that was read: a Tesseract reading's (it has ``words``) with
    Tesseract's margin, the recognizer's with its own."""
    height, width = image.shape[:2]
    found = []
    for box, reading in zip(boxes, readings):
        if not reading.text:
            found.append([])
            continue
        margin = tesseract.CROP_MARGIN if reading.words else recognition.CROP_MARGIN
        grown = recognition.expand_box(box, width, height, margin)
        found.append(words.line_words(recognition.crop_box(image, grown), grown, reading,
                                      characters))
    return found


def _turned_back(word: words.Word, angle: int, width: int, height: int) -> words.Word:
    """A word found on the page turned upright, in the uploaded image's pixels."""
    return words.Word(orientation.from_upright(word.points, angle, width, height), word.text,
                      word.score, tuple((orientation.from_upright(points, angle, width, height),
                                         text, score) for points, text, score in word.characters))


def _call(model: str, inputs: list, outputs: list[str], parent, version: int = -1
          ) -> list[np.ndarray]:
    """One BLS request for request ``parent`` to ``model`` (``version``; -1: the one its
    version policy picks); the named outputs as numpy.

    Raises:
        RequestCancelled: ``parent``'s client gave up on it (checked before the call: a BLS
            request is never cancelled with its parent, so this is where the work stops).
        pb_utils.TritonModelException: the model failed or is not loaded.
    """
    stop_if_cancelled(parent)
    response = pb_utils.InferenceRequest(model_name=model, model_version=version, inputs=inputs,
                                         requested_output_names=outputs).exec()
    if response.has_error():
        raise pb_utils.TritonModelException(f"{model}: {response.error().message()}")
    return [pb_utils.get_output_tensor_by_name(response, name).as_numpy() for name in outputs]


def _run(model: str, inputs: dict[str, np.ndarray], outputs: tuple[str, ...], parent
         ) -> dict[str, np.ndarray]:
    """:data:`ocr_pipeline.detection.RunModel` through BLS (:func:`_call`), for ``parent``."""
    arrays = _call(model, [pb_utils.Tensor(name, value) for name, value in inputs.items()],
                   list(outputs), parent)
    return dict(zip(outputs, arrays))


def _response(boxes: np.ndarray, scores: np.ndarray, angle: int, texts: list[str],
              text_scores: list[float], text: str, lines: list[list[int]], polygons: np.ndarray,
              paragraphs: list[int], found: list[list[words.Word]]):
    """The step's outputs (config.pbtxt): boxes with their corners from their text's
    top-left, the page angle, the texts, the reading order (:func:`reading_order.layout`),
    and each box's words (``found``) with their characters (present when asked)."""
    placed = [(box, word) for box, box_words in enumerate(found) for word in box_words]
    letters = [(w, c) for w, (_, word) in enumerate(placed) for c in word.characters]
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
        pb_utils.Tensor("WORD_BOXES", np.array([w.points for _, w in placed],
                                               np.float32).reshape(-1, 4, 2)),
        pb_utils.Tensor("WORD_TEXTS", _utf8([w.text for _, w in placed])),
        pb_utils.Tensor("WORD_SCORES", np.array([w.score for _, w in placed], np.float32)),
        pb_utils.Tensor("BOX_OF_WORD", np.array([box for box, _ in placed], np.int32)),
        pb_utils.Tensor("CHARACTER_BOXES", np.array([c[0] for _, c in letters],
                                                    np.float32).reshape(-1, 4, 2)),
        pb_utils.Tensor("CHARACTER_TEXTS", _utf8([c[1] for _, c in letters])),
        pb_utils.Tensor("CHARACTER_SCORES", np.array([c[2] for _, c in letters], np.float32)),
        pb_utils.Tensor("WORD_OF_CHARACTER", np.array([w for w, _ in letters], np.int32)),
    ])


def _utf8(texts: list[str]) -> np.ndarray:
    """A BYTES ``[N]`` tensor of UTF-8 texts (``dtype=object``)."""
    return np.array([t.encode("utf-8") for t in texts], dtype=object).reshape(-1)
