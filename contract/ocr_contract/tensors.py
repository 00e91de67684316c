"""The ensemble the gateway calls and its tensors (besides the parameters' optional inputs,
which :mod:`ocr_contract.parameters` names).

``triton_models/repository/ensemble_ocr/config.pbtxt`` declares the same (tested).
"""

from __future__ import annotations

from dataclasses import dataclass

#: The Triton model the gateway calls: bytes in, boxes (and their text) out.
ENSEMBLE = "ensemble_ocr"

#: The ensemble's detection steps (``ocr_pipeline.detection`` runs them, and names the tensors
#: between them): the CRAFT detector, its link refiner, and the box extraction.
CRAFT_MODEL = "craft"
REFINENET_MODEL = "refinenet"
POSTPROCESS_MODEL = "postprocess"
#: The light detector's steps: PP-OCR's DB network and its box extraction
#: (``ocr_pipeline.db``), in the ensemble :data:`DB_ENSEMBLE`, which shares every other step.
DB_MODEL = "db"
DB_POSTPROCESS_MODEL = "db_postprocess"
DB_ENSEMBLE = "ensemble_ocr_db"
#: The text detectors, by the names the ``detector`` parameter takes: CRAFT with its
#: LinkRefiner (the design's, for a GPU) and PP-OCR's DB (light: a tenth of CRAFT's work), and
#: the ensemble of each. A request's detector picks the ensemble it is sent to.
CRAFT_DETECTOR, DB_DETECTOR = "craft", "db"
DETECTOR_ENSEMBLES = {CRAFT_DETECTOR: ENSEMBLE, DB_DETECTOR: DB_ENSEMBLE}
#: The ensemble's last step: reads the text of every box (a BLS model, below).
RECOGNIZE_MODEL = "recognize"
#: The PP-OCR recognizer and its tensors: ``x`` float32 ``[N, 3, 48, W]`` (BGR crops,
#: ``(p / 255 - 0.5) / 0.5``) in; out, the CTC best path of its per-step softmax (the graph's
#: own ArgMax and ReduceMax, ocr_pipeline.onnx_edits.ctc_best_path): ``best_class`` int64
#: ``[N, W/8]``, the most likely class of each step, and ``best_score`` float32 ``[N, W/8]``, its
#: probability (``recognizer/config.pbtxt``). Named here: ``manage.py evaluate_recognition``
#: calls it directly.
RECOGNIZER_MODEL = "recognizer"
RECOGNIZER_INPUT = "x"
RECOGNIZER_CLASSES = "best_class"
RECOGNIZER_SCORES = "best_score"
RECOGNIZER_OUTPUTS = (RECOGNIZER_CLASSES, RECOGNIZER_SCORES)
#: Tesseract, for the languages PP-OCR does not read.
TESSERACT_MODEL = "tesseract"

#: A request parameter (not a tensor, so outside the response cache's key, which is the model
#: and the input tensors): the gateway's deadline for the request, milliseconds since the
#: epoch. Triton does not tell a step that is already running that its request was cancelled
#: (2.51); the Python steps compare the clock with this between pieces of work
#: (ocr_pipeline.triton_python.is_cancelled). The hosts' clocks must agree (NTP).
DEADLINE_PARAMETER = "ocr_deadline_ms"

#: The models that only ``recognize`` calls (through BLS), none of them a step of the ensemble.
#: Triton loads and unloads an ensemble's steps with it, but knows nothing of BLS calls: these
#: are loaded by name at start (``ocr_pipeline.tritonserver.MODELS_AT_START``).
BLS_ONLY_MODELS = (RECOGNIZER_MODEL, TESSERACT_MODEL)
#: The models each BLS (Python-backend model calls) model calls: ``recognize`` reads crops with
#: the recognizer or Tesseract, and detects a turned page again on its upright pixels with the
#: detection steps. With one of them unloaded the ensemble stays READY while the requests that
#: need it fail (the admin's unload warning says so).
BLS_CALLS: dict[str, tuple[str, ...]] = {
    RECOGNIZE_MODEL: (*BLS_ONLY_MODELS, CRAFT_MODEL, REFINENET_MODEL, POSTPROCESS_MODEL,
                      DB_MODEL, DB_POSTPROCESS_MODEL)}


@dataclass(frozen=True)
class Tensor:
    """One ensemble tensor: name, Triton datatype, dimensions (-1: variable), meaning."""

    name: str
    dtype: str
    dims: tuple[int, ...]
    description: str


#: The encoded file exactly as uploaded; BYTES must be built from ``dtype=object`` arrays
#: (numpy's fixed-width bytes would drop trailing NUL bytes and corrupt the file).
IMAGE_BYTES = Tensor("IMAGE_BYTES", "BYTES", (1,), "the encoded image file")

#: Which page of a multi-page file to read (a TIFF's frame; 0 for an image, and for a PDF, which
#: the gateway sends one page at a time); absent means 0. Not a client parameter.
PAGE = Tensor("PAGE", "INT32", (1,), "0-based page of a multi-page file")

BOXES = Tensor("BOXES", "FP32", (-1, 4, 2),
               "corners (x, y) in the (EXIF-transposed) uploaded image's pixels, clockwise "
               "from the top-left of the box's own text")
SCORES = Tensor("SCORES", "FP32", (-1,), "peak region score of each box, 0..1")
IMAGE_SIZE = Tensor("IMAGE_SIZE", "INT32", (2,), "(width, height) after EXIF transpose")
TEXTS = Tensor("TEXTS", "BYTES", (-1,),
               "UTF-8 text read in each box, in BOXES order (none when RECOGNIZE is false)")
TEXT_SCORES = Tensor("TEXT_SCORES", "FP32", (-1,), "confidence of each box's text, 0..1")
TEXT = Tensor("TEXT", "BYTES", (1,),
              "the whole text in reading order: a line's words joined by spaces, lines by "
              "newlines (empty when RECOGNIZE is false)")

READING_ORDER = Tensor("READING_ORDER", "INT32", (-1,),
                       "box indices in reading order: lines in order, each line's boxes in "
                       "order (ocr_pipeline.reading_order)")
LINE_OF_BOX = Tensor("LINE_OF_BOX", "INT32", (-1,),
                     "the line (0-based, reading order) of each box, in BOXES order")
LINE_BOXES = Tensor("LINE_BOXES", "FP32", (-1, 4, 2),
                    "each line's polygon: the minimum-area rectangle of its boxes, corners "
                    "clockwise from the top-left, original-image pixels")
PARAGRAPH_OF_LINE = Tensor("PARAGRAPH_OF_LINE", "INT32", (-1,),
                           "the paragraph (0-based, reading order) of each line")

ANGLE = Tensor("ANGLE", "INT32", (1,),
               "the page's angle, clockwise degrees (0, 90, 180, 270): the image is the upright "
               "page turned this far (0 when orientation is upright or nothing was read)")

WORD_BOXES = Tensor("WORD_BOXES", "FP32", (-1, 4, 2),
                    "each word's corners (x, y), original-image pixels, clockwise from the "
                    "word's own top-left (ocr_pipeline.words): words in BOXES order, each "
                    "box's in reading order")
WORD_TEXTS = Tensor("WORD_TEXTS", "BYTES", (-1,), "UTF-8 text of each word")
WORD_SCORES = Tensor("WORD_SCORES", "FP32", (-1,),
                     "confidence of each word, 0..1: its characters' lowest probability")
BOX_OF_WORD = Tensor("BOX_OF_WORD", "INT32", (-1,), "the box (BOXES index) of each word")
CHARACTER_BOXES = Tensor("CHARACTER_BOXES", "FP32", (-1, 4, 2),
                         "each character's corners, as WORD_BOXES (empty unless DETAIL is "
                         "characters); characters in WORD_BOXES order, each word's in order")
CHARACTER_TEXTS = Tensor("CHARACTER_TEXTS", "BYTES", (-1,), "UTF-8 text of each character")
CHARACTER_SCORES = Tensor("CHARACTER_SCORES", "FP32", (-1,),
                          "probability of each character, 0..1")
WORD_OF_CHARACTER = Tensor("WORD_OF_CHARACTER", "INT32", (-1,),
                           "the word (WORD_BOXES index) of each character")

#: The request an answer was computed for: its DEADLINE_PARAMETER. Triton's response cache
#: keeps the whole answer of the request that computed it, so an answer from the cache carries
#: another request's value: the gateway tells a cached answer (milliseconds, whatever the
#: page) from a computed one, whose time is what the page cost (ocr_api.admission).
COMPUTED_FOR = Tensor("COMPUTED_FOR", "INT64", (1,),
                      f"the {DEADLINE_PARAMETER} request parameter of the request the answer "
                      "was computed for (0 without one): another request's when it came from "
                      "the response cache")

#: The outputs the gateway requests, in order.
OUTPUTS = (BOXES, SCORES, IMAGE_SIZE, TEXTS, TEXT_SCORES, TEXT, READING_ORDER, LINE_OF_BOX,
           LINE_BOXES, PARAGRAPH_OF_LINE, ANGLE, WORD_BOXES, WORD_TEXTS, WORD_SCORES,
           BOX_OF_WORD, COMPUTED_FOR)
#: The outputs it requests too when characters are asked for (``detail=characters``).
CHARACTER_OUTPUTS = (CHARACTER_BOXES, CHARACTER_TEXTS, CHARACTER_SCORES, WORD_OF_CHARACTER)
