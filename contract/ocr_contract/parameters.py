"""Request parameters: the API name, the ensemble input that carries it, its default, bounds.

A parameter the client leaves out is not sent to Triton: the model uses :attr:`Parameter.default`.
Both sides validate with :meth:`Parameter.check` (the gateway first, with its own strict
parsing of the text; the model again, since Triton can be called without the gateway).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from . import languages
from .limits import LONG_SIDE_MAX, LONG_SIDE_MIN, Limit
from .tensors import DETECTOR_ENSEMBLES


class ParameterError(ValueError):
    """A parameter value out of its bounds; ``field`` is the parameter's API name."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class Parameter:
    """One optional request parameter.

    Attributes:
        name: the API name (query string or form field).
        tensor: the ensemble's optional input of shape ``[1]`` that carries it; empty for a
            parameter that picks the ensemble instead (``detector``).
        dtype: that input's Triton datatype: ``FP32``, ``INT32``, ``BOOL`` or ``BYTES``
            (UTF-8 text).
        default: the value the models use when the input is absent.
        description: one line for the OpenAPI schema and the README.
        minimum, maximum: bounds, numbers or :class:`~ocr_contract.limits.Limit` settings.
        exclusive: the bounds themselves are excluded (an open interval).
        choices: for a BYTES parameter, the values allowed (empty: any).
    """

    name: str
    tensor: str
    dtype: str
    default: float | int | bool | str
    description: str
    minimum: float | Limit | None = None
    maximum: float | Limit | None = None
    exclusive: bool = False
    choices: tuple[str, ...] = ()

    def bounds(self, resolve: Callable[[Limit], int] = Limit.read) -> tuple | None:
        """``(minimum, maximum)``, None when unbounded.

        Args:
            resolve: the value of a :class:`~ocr_contract.limits.Limit` bound; by default read
                from the environment (the gateway passes its Django settings).
        """
        if self.minimum is None:
            return None
        return tuple(resolve(b) if isinstance(b, Limit) else b
                     for b in (self.minimum, self.maximum))

    def check(self, value, resolve: Callable[[Limit], int] = Limit.read):
        """``value`` (already of the parameter's type) if it is within bounds.

        Returns:
            the value; for ``language``, the normalised tuple of language codes.

        Raises:
            ParameterError: out of bounds (NaN and infinities included), or an unsupported
                language code; the message names the parameter and the allowed values.
        """
        if self.name == LANGUAGE.name:
            try:
                return languages.parse(value)
            except ValueError as exc:
                raise ParameterError(self.name, f"{self.name}: {exc}") from None
        if self.choices:
            if value not in self.choices:
                raise ParameterError(self.name, f"{self.name} must be one of "
                                                f"{', '.join(self.choices)}, got {value!r}")
            return value
        bounds = self.bounds(resolve)
        if bounds is None:
            return value
        low, high = bounds
        if self.exclusive:
            inside = math.isfinite(value) and low < value < high
            interval = f"({low:g}, {high:g})"
        else:
            inside = low <= value <= high
            interval = f"[{low}, {high}]"
        if not inside:
            raise ParameterError(self.name, f"{self.name} must be in {interval}, got {value}")
        return value


# Defaults of the reference CRAFT implementation (clovaai/CRAFT-pytorch test.py), which are
# also those of the reference boxes in tests/data/reference/.
TEXT_THRESHOLD = Parameter("text_threshold", "TEXT_THRESHOLD", "FP32", 0.7,
                           "Peak region score a word needs, in (0, 1); less for a character "
                           "between the words of one of the page's rows.",
                           0.0, 1.0, True)
LINK_THRESHOLD = Parameter("link_threshold", "LINK_THRESHOLD", "FP32", 0.4,
                           "Link score that joins characters into a word, in (0, 1).",
                           0.0, 1.0, True)
LOW_TEXT = Parameter("low_text", "LOW_TEXT", "FP32", 0.4,
                     "Region score of a character pixel, in (0, 1).", 0.0, 1.0, True)
LONG_SIDE = Parameter("long_side", "LONG_SIDE", "INT32", 1280,
                      "The image is resized so its long side is this many pixels.",
                      LONG_SIDE_MIN, LONG_SIDE_MAX)
REFINE = Parameter("refine", "REFINE", "BOOL", True,
                   "Link characters with the LinkRefiner's map (false: CRAFT's affinity score).")
RECOGNIZE = Parameter("recognize", "RECOGNIZE", "BOOL", True,
                      "Read the text of every box (false: boxes only).")
LANGUAGE = Parameter("language", "LANGUAGE", "BYTES", languages.AUTO,
                     "'auto', or ISO 639-1 codes separated by commas (e.g. 'ko,en').")

#: ``orientation``'s values: find each line's and the page's angle, or take the image as
#: upright (as before orientation existed; a little faster).
ORIENTATION_AUTO, ORIENTATION_UPRIGHT = "auto", "upright"
ORIENTATION = Parameter("orientation", "ORIENTATION", "BYTES", ORIENTATION_AUTO,
                        "'auto': find the page's angle (0/90/180/270) and read every line the "
                        "right way up; 'upright': take the image as upright.",
                        choices=(ORIENTATION_AUTO, ORIENTATION_UPRIGHT))

#: ``detail``'s values: each line's words (always answered), or their characters too.
DETAIL_WORDS, DETAIL_CHARACTERS = "words", "characters"
DETAIL = Parameter("detail", "DETAIL", "BYTES", DETAIL_WORDS,
                   "'words': every line's words with their boxes and confidence; "
                   "'characters': each word's characters too.",
                   choices=(DETAIL_WORDS, DETAIL_CHARACTERS))

#: ``detector``'s values: the deployment's choice (``OCR_DETECTOR``, which /api/models names
#: with its reason), or one of the text detectors (:data:`ocr_contract.tensors
#: .DETECTOR_ENSEMBLES`: each has an ensemble of its own, which the request is sent to).
DETECTOR_AUTO = "auto"
DETECTOR = Parameter("detector", "", "BYTES", DETECTOR_AUTO,
                     "'craft': CRAFT with its LinkRefiner (the thresholds above and refine are "
                     "its); 'db': PP-OCR's DB, a tenth of CRAFT's work (fixed thresholds of its "
                     "own); 'auto': the deployment's choice (GET /api/models says which, and "
                     "why).",
                     choices=(DETECTOR_AUTO, *DETECTOR_ENSEMBLES))

#: Every parameter, in documentation order.
PARAMETERS = (TEXT_THRESHOLD, LINK_THRESHOLD, LOW_TEXT, LONG_SIDE, REFINE, RECOGNIZE, LANGUAGE,
              ORIENTATION, DETAIL, DETECTOR)
BY_NAME = {parameter.name: parameter for parameter in PARAMETERS}
