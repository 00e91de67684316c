"""Request parameters and the response shapes of the OCR API (also the OpenAPI schema)."""

import math
import re

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from .errors import ERROR_CODES


#: Plain decimal notation, ASCII digits only (Python's float() would also take "1_0", "nan",
#: full-width digits...).
_DECIMAL = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?")
_INTEGER = re.compile(r"[+-]?[0-9]+")


class ThresholdField(serializers.FloatField):
    """A decimal number strictly between 0 and 1 (NaN and infinities refused)."""

    default_error_messages = {"range": "Must be a number strictly between 0 and 1."}

    def to_internal_value(self, data):
        if isinstance(data, str) and not _DECIMAL.fullmatch(data.strip()):
            self.fail("invalid")
        value = super().to_internal_value(data)
        if not math.isfinite(value) or not 0.0 < value < 1.0:
            self.fail("range")
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


class OcrParametersSerializer(serializers.Serializer):
    """Optional detection parameters, from the query string or form fields.

    Unset parameters take the model's defaults (text_threshold 0.7, link_threshold 0.4,
    low_text 0.4, long_side 1280, refine true). Unknown parameter names are refused so that a
    typo does not silently fall back to a default.
    """

    text_threshold = ThresholdField(required=False,
                                    help_text="Peak region score for a word, in (0, 1).")
    link_threshold = ThresholdField(required=False,
                                    help_text="Link score joining characters, in (0, 1).")
    low_text = ThresholdField(required=False,
                              help_text="Region score of a character pixel, in (0, 1).")
    long_side = StrictIntegerField(required=False,
                                   help_text="Long side of the resized image, pixels.")
    refine = StrictBooleanField(required=False, help_text="Use the link refiner (default true).")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        field = self.fields["long_side"]
        field.min_value, field.max_value = settings.OCR_LONG_SIDE_MIN, settings.OCR_LONG_SIDE_MAX
        field.validators += [
            MinValueValidator(settings.OCR_LONG_SIDE_MIN),
            MaxValueValidator(settings.OCR_LONG_SIDE_MAX),
        ]

    def to_internal_value(self, data):
        unknown = sorted(set(data) - set(self.fields))
        if unknown:
            raise serializers.ValidationError({unknown[0]: ["Unknown parameter."]})
        return super().to_internal_value(data)


class ModelSerializer(serializers.Serializer):
    name = serializers.CharField(help_text="Triton model (the ensemble) that answered.")
    version = serializers.CharField()


class ImageSerializer(serializers.Serializer):
    width = serializers.IntegerField(help_text="Upright (EXIF-transposed) width, pixels.")
    height = serializers.IntegerField(help_text="Upright (EXIF-transposed) height, pixels.")
    format = serializers.CharField(help_text="Format sniffed from the bytes, e.g. JPEG.")


class BoxSerializer(serializers.Serializer):
    points = serializers.ListField(
        child=serializers.ListField(child=serializers.FloatField(), min_length=2, max_length=2),
        min_length=4, max_length=4,
        help_text="4 corners [x, y] in original-image pixels, clockwise from the top-left.")
    score = serializers.FloatField(help_text="Peak region score of the word, 0..1.")


class TimingSerializer(serializers.Serializer):
    total = serializers.FloatField(help_text="Time in the gateway, milliseconds.")
    inference = serializers.FloatField(help_text="Time of the Triton call, milliseconds.")


class OcrResponseSerializer(serializers.Serializer):
    request_id = serializers.CharField()
    model = ModelSerializer()
    image = ImageSerializer()
    boxes = BoxSerializer(many=True)
    timing_ms = TimingSerializer()


class ErrorDetailSerializer(serializers.Serializer):
    code = serializers.ChoiceField(choices=sorted(ERROR_CODES), help_text="Stable error code.")
    message = serializers.CharField(help_text="Human-readable explanation.")
    field = serializers.CharField(required=False, help_text="The parameter at fault.")


class ErrorSerializer(serializers.Serializer):
    request_id = serializers.CharField(allow_null=True)
    error = ErrorDetailSerializer()
