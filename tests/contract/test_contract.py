"""The contract package on its own: limits, parameter bounds and messages, languages, model
error messages."""

import math

import pytest

from ocr_contract import errors, formats, languages, limits, parameters
from ocr_contract.parameters import LONG_SIDE, TEXT_THRESHOLD, ParameterError


def test_a_limit_is_read_from_its_variable_or_defaults():
    assert limits.MAX_PIXELS.read({}) == 40_000_000
    assert limits.MAX_PIXELS.read({"OCR_MAX_PIXELS": " 1000 "}) == 1000
    assert limits.MAX_PIXELS.read({"OCR_MAX_PIXELS": ""}) == 40_000_000
    with pytest.raises(ValueError, match="OCR_MAX_PIXELS must be an integer, not '40MP'"):
        limits.MAX_PIXELS.read({"OCR_MAX_PIXELS": "40MP"})


def test_long_side_bounds_are_the_limits_both_sides_read():
    assert LONG_SIDE.bounds(lambda limit: limit.read({})) == (64, 2560)
    environ = {"OCR_LONG_SIDE_MIN": "32", "OCR_LONG_SIDE_MAX": "4096"}
    assert LONG_SIDE.bounds(lambda limit: limit.read(environ)) == (32, 4096)
    assert LONG_SIDE.check(4000, lambda limit: limit.read(environ)) == 4000
    with pytest.raises(ParameterError, match=r"^long_side must be in \[64, 2560\], got 4000$") \
            as refused:
        LONG_SIDE.check(4000, lambda limit: limit.read({}))
    assert refused.value.field == "long_side"


@pytest.mark.parametrize("value", [0.0, 1.0, -0.5, math.nan, math.inf])
def test_thresholds_are_open_intervals_without_nan(value):
    with pytest.raises(ParameterError, match=r"^text_threshold must be in \(0, 1\), got"):
        TEXT_THRESHOLD.check(value)


def test_every_parameter_has_a_tensor_a_dtype_and_a_default_within_its_bounds():
    for parameter in parameters.PARAMETERS:
        assert parameter.dtype in ("FP32", "INT32", "BOOL", "BYTES"), parameter.name
        # Every one is an ensemble input but the detector, which picks the ensemble.
        assert parameter.tensor == ("" if parameter is parameters.DETECTOR
                                    else parameter.name.upper())
        assert parameter.check(parameter.default) is not None
    assert parameters.BY_NAME["low_text"].default == 0.4
    assert parameters.DETECTOR.choices == ("auto", "craft", "db")


def test_languages_parse_case_spaces_and_repeats():
    assert languages.parse("auto") == ("auto",)
    assert languages.parse(" KO , en,ko") == ("ko", "en")


@pytest.mark.parametrize("value", ["", "xx", "ko,xx", "auto,en", "ko,,en"])
def test_unsupported_languages_list_the_supported_codes(value):
    with pytest.raises(ValueError, match="use auto, or codes separated by commas from: en, "):
        languages.parse(value)


def test_tesseract_needs_english_and_its_languages_packs():
    assert languages.TESSERACT_TRAINEDDATA[0] == "eng"
    assert "kor" in languages.TESSERACT_TRAINEDDATA
    assert all(languages.BY_CODE[code].recognizer == languages.PPOCR for code in ("en", "zh"))


def test_model_errors_survive_text_around_them():
    message = errors.encode_model_error("invalid_parameter", "long_side must be…", "long_side")
    decoded = errors.decode_model_error(f"in ensemble 'ensemble_ocr', {message} (step 1)")
    assert decoded == errors.ModelError("invalid_parameter", "long_side must be…", "long_side")
    assert errors.decode_model_error("Stub process is not healthy.") is None
    assert errors.decode_model_error('ocr-error:{"code": "internal_error", "message": "x"}') \
        is None
    with pytest.raises(ValueError):
        errors.encode_model_error("internal_error", "not a model's to give")


def test_every_model_error_is_an_api_client_error():
    assert all(400 <= errors.ERROR_CODES[code] < 500 for code in errors.MODEL_ERROR_CODES)


def test_formats_are_listed_the_way_people_know_them():
    assert formats.ACCEPTED_FORMATS_TEXT == "JPEG, PNG, WEBP, BMP, TIFF, GIF, HEIC/HEIF, PDF"
    assert formats.reported_name("HEIF") == "HEIC"
    assert formats.reported_name("PNG") == "PNG"
