"""Request parameters and the response shapes of the OCR API (also the OpenAPI schema).

The parameters, their bounds and defaults, and the error codes come from :mod:`ocr_contract`.
"""

import math
import re

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema_field
from ocr_contract.errors import ERROR_CODES
from ocr_contract.limits import Limit
from ocr_contract.parameters import LANGUAGE, PARAMETERS, Parameter, ParameterError
from rest_framework import serializers


#: Plain decimal notation, ASCII digits only (Python's float() would also take "1_0", "nan",
#: full-width digits...).
_DECIMAL = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?")
_INTEGER = re.compile(r"[+-]?[0-9]+")


class BoundedFloatField(serializers.FloatField):
    """A decimal number strictly between ``low`` and ``high`` (NaN and infinities refused)."""

    default_error_messages = {"range": "Must be a number strictly between {low:g} and {high:g}."}

    def __init__(self, low: float, high: float, **kwargs):
        super().__init__(**kwargs)
        self.low, self.high = low, high

    def to_internal_value(self, data):
        if isinstance(data, str) and not _DECIMAL.fullmatch(data.strip()):
            self.fail("invalid")
        value = super().to_internal_value(data)
        if not math.isfinite(value) or not self.low < value < self.high:
            self.fail("range", low=self.low, high=self.high)
        return value


class StrictIntegerField(serializers.IntegerField):
    """An integer written with ASCII digits only (no "12.0", "1_280" or full-width digits)."""

    def to_internal_value(self, data):
        if isinstance(data, str) and not _INTEGER.fullmatch(data.strip()):
            self.fail("invalid")
        return super().to_internal_value(data)


@extend_schema_field(OpenApiTypes.BOOL)
class StrictBooleanField(serializers.Field):
    """``true``/``false`` (JSON booleans, or the strings true, false, 1, 0; any case)."""

    default_error_messages = {"invalid": "Must be true or false."}
    _VALUES = {"true": True, "1": True, "false": False, "0": False}

    def to_internal_value(self, data):
        if isinstance(data, bool):
            return data
        if isinstance(data, str) and data.strip().lower() in self._VALUES:
            return self._VALUES[data.strip().lower()]
        self.fail("invalid")

    def to_representation(self, value):
        return bool(value)


class LanguageField(serializers.CharField):
    """``auto`` or ISO 639-1 codes separated by commas (:func:`ocr_contract.languages.parse`);
    the value becomes the normalised codes joined by commas (``"KO, en"`` -> ``"ko,en"``)."""

    def to_internal_value(self, data):
        text = super().to_internal_value(data)
        try:
            return ",".join(LANGUAGE.check(text))
        except ParameterError as exc:
            raise serializers.ValidationError(str(exc).split(": ", 1)[1]) from None


def _parameter_field(parameter: Parameter) -> serializers.Field:
    """The serializer field for one parameter of :mod:`ocr_contract.parameters`: strict text
    parsing by dtype, bounds from the contract, the contract's description and default."""
    help_text = f"{parameter.description} Default {_shown(parameter.default)}."
    if parameter.dtype == "FP32":
        low, high = parameter.bounds(_setting)
        return BoundedFloatField(low, high, required=False, help_text=help_text)
    if parameter.dtype == "INT32":
        low, high = parameter.bounds(_setting)
        return StrictIntegerField(required=False, min_value=low, max_value=high,
                                  help_text=help_text)
    if parameter.dtype == "BOOL":
        return StrictBooleanField(required=False, help_text=help_text)
    if parameter is LANGUAGE:
        return LanguageField(required=False, max_length=200, help_text=help_text)
    if parameter.choices:
        return serializers.ChoiceField(
            choices=parameter.choices, required=False, help_text=help_text,
            error_messages={"invalid_choice": f'"{{input}}" is not one of '
                                              f'{", ".join(parameter.choices)}.'})
    raise TypeError(f"no serializer field for {parameter.name} ({parameter.dtype})")


def _setting(limit: Limit) -> int:
    """A limit's value in this gateway: the Django setting of the same name."""
    return getattr(settings, limit.setting)


def _shown(value) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


class OcrParametersSerializer(serializers.Serializer):
    """Optional OCR parameters, from the query string or form fields: one field per parameter
    of :data:`ocr_contract.parameters.PARAMETERS`.

    Unset parameters are not sent: the model uses the contract's default. Unknown parameter
    names are refused so that a typo does not silently fall back to a default. Bounds that are
    limits (``long_side``) are the Django settings of the limits' names, read when the
    serializer is made.
    """

    def get_fields(self):
        return {parameter.name: _parameter_field(parameter) for parameter in PARAMETERS}

    def to_internal_value(self, data):
        unknown = sorted(set(data) - set(self.fields))
        if unknown:
            raise serializers.ValidationError({unknown[0]: ["Unknown parameter."]})
        return super().to_internal_value(data)


#: The request body of a route that takes one upload (``POST /api/ocr``, ``POST /api/jobs``):
#: multipart field ``image``, or the raw body.
SINGLE_UPLOAD_REQUEST = {
    "multipart/form-data": {"type": "object", "properties": {
        "image": {"type": "string", "format": "binary"}}, "required": ["image"]},
    "image/*": OpenApiTypes.BINARY,
    "application/pdf": OpenApiTypes.BINARY,
    # The same raw body for clients generated from the schema (openapi-python-client skips
    # "image/*" as an unsupported content type).
    "application/octet-stream": OpenApiTypes.BINARY,
}


def jobs_link_header(*statuses: int) -> OpenApiParameter:
    """The ``Link: </api/jobs>; rel="alternate"`` response header of a ``too_many_pages``
    refusal (:func:`ocr_api.views.base.refusal_for_sync`) or a ``page_too_slow`` one
    (:func:`ocr_api.admission.refused`), documented on the responses with ``statuses`` (413
    for ``POST /api/ocr``; for a batch 200 with a ``too_many_pages`` item, 413 for a
    ``page_too_slow`` one)."""
    return OpenApiParameter("Link", str, OpenApiParameter.HEADER, response=list(statuses),
                            description='With `too_many_pages` or `page_too_slow`: '
                                        '`</api/jobs>; rel="alternate"`, where a longer '
                                        'document or a slower page goes.')


def error_responses(*statuses: int, notes: dict[int, str] | None = None) -> dict:
    """OpenAPI responses for these HTTP statuses and 406 (any endpoint, for an ``Accept`` or
    ``?format=`` it cannot answer), each listing the error codes it carries, then its ``notes``
    (per status) if any. Under ``application/json`` only: an error is JSON whatever format was
    asked (``ocr_api.formats.renderers``)."""
    notes = notes or {}
    return {(code, "application/json"): OpenApiResponse(ErrorSerializer, description=", ".join(
        name for name, st in ERROR_CODES.items() if st == code)
        + (f". {notes[code]}" if code in notes else "")) for code in sorted({*statuses, 406})}


#: What a 413 of the synchronous endpoints says about a document over OCR_MAX_PAGES.
TOO_MANY_PAGES_NOTE = (
    "A document over OCR_MAX_PAGES pages is refused at once with `too_many_pages`, before any "
    "page is read: its message names `POST /api/jobs` (up to OCR_JOB_MAX_PAGES pages, read in "
    "the background) and the `Link` header points there.")


class ModelSerializer(serializers.Serializer):
    name = serializers.CharField(help_text="Triton model (the ensemble) that answered.")
    version = serializers.CharField()


_ANGLE_HELP = ("The page's angle found, degrees clockwise (0, 90, 180 or 270): the image is the "
               "upright page turned this far. Points stay in the uploaded image's pixels. 0 with "
               "orientation=upright or recognize=false.")


class ImageSerializer(serializers.Serializer):
    width = serializers.IntegerField(help_text="Upright (EXIF-transposed) width, pixels.")
    height = serializers.IntegerField(help_text="Upright (EXIF-transposed) height, pixels.")
    format = serializers.CharField(help_text="Format sniffed from the bytes, e.g. JPEG.")
    angle = serializers.IntegerField(help_text=_ANGLE_HELP)


def _points(help_text: str) -> serializers.ListField:
    return serializers.ListField(
        child=serializers.ListField(child=serializers.FloatField(), min_length=2, max_length=2),
        min_length=4, max_length=4, help_text=help_text)


class BoxSerializer(serializers.Serializer):
    points = _points("4 corners [x, y] in the page's pixels, clockwise from the top-left of the "
                     "box's own text (the first two run along the text, whichever way up).")
    score = serializers.FloatField(help_text="Peak region score of the word, 0..1.")
    text = serializers.CharField(required=False,
                                 help_text="The text read in the box (absent with recognize=false).")
    text_score = serializers.FloatField(required=False,
                                        help_text="Confidence of the text, 0..1.")


_CONFIDENCE_HELP = "Confidence, 0..1"


class CharacterSerializer(serializers.Serializer):
    points = _points("4 corners [x, y] of the character in the page's pixels, clockwise from "
                     "its own top-left (as a word's).")
    text = serializers.CharField(help_text="The character.")
    confidence = serializers.FloatField(
        help_text=f"{_CONFIDENCE_HELP}: the recognizer's probability of the character "
                  f"(Tesseract's symbol confidence for lines it read).")


class WordSerializer(serializers.Serializer):
    points = _points("4 corners [x, y] of the word's ink in the page's pixels, clockwise from "
                     "the word's own top-left (the first two run along its text, whichever "
                     "way up): where the recognizer emitted its characters along the line's "
                     "crop, carried back through the crop's warp and turn (Tesseract's own word "
                     "box for lines it read).")
    text = serializers.CharField(help_text="The word: characters between spaces (each Chinese "
                                           "or Japanese character is a word of its own).")
    confidence = serializers.FloatField(
        help_text=f"{_CONFIDENCE_HELP}: the lowest of its characters' probabilities (a word is "
                  f"right only if every character is).")
    box = serializers.IntegerField(help_text="Index in `boxes` of the box it was read in.")
    characters = CharacterSerializer(many=True, required=False,
                                     help_text="Its characters, in order (with "
                                               "detail=characters).")


class LineSerializer(serializers.Serializer):
    points = _points("The line's rectangle (the smallest around its boxes), clockwise from the "
                     "top-left.")
    boxes = serializers.ListField(child=serializers.IntegerField(),
                                  help_text="Indices in `boxes` of the line's boxes, in order "
                                            "(with refine=true a box often holds several "
                                            "words).")
    text = serializers.CharField(required=False, allow_blank=True,
                                 help_text="Its boxes' texts joined by spaces (absent with "
                                           "recognize=false).")
    confidence = serializers.FloatField(
        required=False, help_text=f"{_CONFIDENCE_HELP}: the mean of its words' (absent with "
                                  f"recognize=false).")
    words = WordSerializer(many=True, required=False,
                           help_text="Its words in reading order, each on its own box (absent "
                                     "with recognize=false).")


class ParagraphSerializer(serializers.Serializer):
    points = _points("The axis-aligned rectangle around the paragraph's lines.")
    lines = serializers.ListField(child=serializers.IntegerField(),
                                  help_text="Indices in `lines` of the paragraph's lines.")
    text = serializers.CharField(required=False, allow_blank=True,
                                 help_text="Its lines joined by newlines (absent with "
                                           "recognize=false).")
    confidence = serializers.FloatField(
        required=False, help_text=f"{_CONFIDENCE_HELP}: the mean of its words' (absent with "
                                  f"recognize=false).")


_TEXT_HELP = ("The whole text in reading order: boxes grouped into lines, lines top to bottom, "
              "boxes left to right, in the upright page's frame (image.angle undone); a line's "
              "texts joined by a space, lines by a newline "
              "(absent with recognize=false).")


class PageContentSerializer(serializers.Serializer):
    """What is read on one page (an image is one page)."""

    text = serializers.CharField(required=False, allow_blank=True, help_text=_TEXT_HELP)
    boxes = BoxSerializer(many=True)
    lines = LineSerializer(many=True, help_text="The lines `text` is made of, in reading "
                                                "order.")
    paragraphs = ParagraphSerializer(
        many=True, help_text="Lines grouped by layout (gap, alignment, size: "
                             "ocr_pipeline.reading_order), in reading order.")


class PageSerializer(PageContentSerializer):
    page = serializers.IntegerField(help_text="Page number, from 1.")
    width = serializers.IntegerField(help_text="Width of the page as read, pixels (a PDF page "
                                               "rendered at OCR_PDF_DPI).")
    height = serializers.IntegerField(help_text="Height of the page as read, pixels.")
    angle = serializers.IntegerField(help_text=_ANGLE_HELP)
    model = ModelSerializer(required=False, help_text="Only when another version than the "
                                                      "answer's read this page.")


class DocumentSerializer(serializers.Serializer):
    format = serializers.CharField(help_text="PDF or TIFF.")
    pages = serializers.IntegerField(help_text="Pages in the document.")


class OcrAnswerSerializer(PageContentSerializer):
    """The answer for one upload: an image's content at the top level (with ``image``), or a
    document's ``pages`` (with ``document`` and the whole ``text``)."""

    model = ModelSerializer()
    image = ImageSerializer(required=False, help_text="For an image.")
    document = DocumentSerializer(required=False, help_text="For a PDF or multi-page TIFF.")
    text = serializers.CharField(
        required=False, allow_blank=True,
        help_text=_TEXT_HELP + " For a document: every page's text, joined by a form feed.")
    boxes = BoxSerializer(many=True, required=False, help_text="For an image.")
    lines = LineSerializer(many=True, required=False, help_text="For an image.")
    paragraphs = ParagraphSerializer(many=True, required=False, help_text="For an image.")
    pages = PageSerializer(many=True, required=False, help_text="For a document, in order.")


class TimingSerializer(serializers.Serializer):
    total = serializers.FloatField(help_text="Time in the gateway, milliseconds.")
    inference = serializers.FloatField(help_text="Time of the Triton call (the slowest page's), "
                                                 "milliseconds.")


class OcrResponseSerializer(OcrAnswerSerializer):
    request_id = serializers.CharField()
    timing_ms = TimingSerializer()


class ErrorDetailSerializer(serializers.Serializer):
    code = serializers.ChoiceField(choices=sorted(ERROR_CODES), help_text="Stable error code.")
    message = serializers.CharField(help_text="Human-readable explanation.")
    field = serializers.CharField(required=False, help_text="The parameter at fault.")


class ErrorSerializer(serializers.Serializer):
    request_id = serializers.CharField(allow_null=True)
    error = ErrorDetailSerializer()
