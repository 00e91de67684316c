"""Which recognizer reads a request's text lines, from its ``language`` codes.

- Only PP-OCR languages: the PP-OCR recognizer.
- Any Tesseract language (:data:`ocr_contract.languages.LANGUAGES`): Tesseract for every line,
  with the data of each Tesseract language asked for plus English (``ko`` and ``ko,en`` both
  read ``kor+eng``: Latin names, numbers and units are on nearly every sign).
- ``auto``: PP-OCR reads every line.

  - A page whose reading shows at least :data:`AUTO_MIN_OWN_LETTERS` of a Latin-script
    Tesseract language's own letters (:attr:`~ocr_contract.languages.Language.letters`),
    :data:`AUTO_MIN_OWN_SHARE` of its letters or more (a Turkish page, where PP-OCR reads
    ``Doğum`` but ``Soyadı`` as ``Soyadi``), is read again, every line, by Tesseract in that
    language (with English), and those readings are kept.
  - Otherwise lines PP-OCR is unsure of (score under :data:`AUTO_RETRY_BELOW`; Hangul,
    Thai... come out of it as low-confidence CJK guesses) are read again by Tesseract in each
    language with a script of its own (with English); a language wins when its readings of
    those lines are mostly its own script (:data:`AUTO_MIN_SCRIPT_SHARE` of their letters)
    with a mean confidence of at least :data:`AUTO_MIN_CONFIDENCE`; the most confident such
    language's readings then replace PP-OCR's for those lines. Lines in Latin script or CJK
    that PP-OCR reads confidently are never sent to Tesseract.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import Callable

from ocr_contract.languages import AUTO, BY_CODE, LANGUAGES, PPOCR, TESSERACT, Language

from .recognition import Reading

#: PP-OCR score under which ``auto`` asks Tesseract's scripts about a line.
AUTO_RETRY_BELOW = 0.5
#: Mean Tesseract confidence a script's readings need to replace PP-OCR's.
AUTO_MIN_CONFIDENCE = 0.7
#: Share of the letters read that must be in the language's own script.
AUTO_MIN_SCRIPT_SHARE = 0.8
#: Tesseract's data for Latin text read beside another script.
ENGLISH = "eng"
#: A language's own letters a page's PP-OCR reading must show for ``auto`` to hand the page
#: to it: one could be a misreading. No image of the validation, calibration, unseen and shared
#: sets other than the Turkish identity card gives even one (38 images, 2026-12-04).
AUTO_MIN_OWN_LETTERS = 2
#: ... and the share of the letters read they must make: on drawn Turkish pages PP-OCR's
#: reading shows 5.5 % at the lowest (``python -m bench.languages``). A fifth of that keeps a
#: page half Turkish, half English, and leaves a page of another language that names a Turkish
#: place (``Beşiktaş``: two letters) alone once it has 200 letters.
AUTO_MIN_OWN_SHARE = 0.01


@dataclass(frozen=True)
class Route:
    """How to read a request's lines: ``recognizer`` is :data:`~ocr_contract.languages.PPOCR`
    or :data:`~ocr_contract.languages.TESSERACT` (then ``tesseract_languages``, e.g.
    ``kor+eng``); ``auto`` when PP-OCR's doubtful lines may go to Tesseract."""

    recognizer: str
    tesseract_languages: str = ""
    auto: bool = False


def route(codes: tuple[str, ...]) -> Route:
    """The :class:`Route` for parsed language codes (:func:`ocr_contract.languages.parse`)."""
    if codes == (AUTO,):
        return Route(PPOCR, auto=True)
    tesseract = [BY_CODE[code].traineddata for code in codes
                 if BY_CODE[code].recognizer == TESSERACT]
    if not tesseract:
        return Route(PPOCR)
    return Route(TESSERACT, "+".join(dict.fromkeys(tesseract + [ENGLISH])))


def doubtful(readings: list[Reading]) -> list[int]:
    """Indices of the lines PP-OCR read with a score under :data:`AUTO_RETRY_BELOW`."""
    return [i for i, reading in enumerate(readings) if reading.score < AUTO_RETRY_BELOW]


def script_share(text: str, script: str) -> float:
    """Share of the letters of ``text`` whose Unicode name starts with ``script`` (0 when
    there are no letters)."""
    letters = [char for char in text if char.isalpha()]
    if not letters:
        return 0.0
    inside = sum(unicodedata.name(char, "").startswith(script + " ") for char in letters)
    return inside / len(letters)


def choose_language(candidates: dict[str, tuple[Language, list[Reading]]]) -> str | None:
    """The winning Tesseract language for ``auto``.

    Args:
        candidates: ``{tesseract languages: (language, readings of the doubtful lines)}``.

    Returns:
        the key of the most confident language whose readings are mostly in its script
        (:data:`AUTO_MIN_SCRIPT_SHARE`) with mean confidence at least
        :data:`AUTO_MIN_CONFIDENCE`; None when no language qualifies.
    """
    best, best_confidence = None, AUTO_MIN_CONFIDENCE
    for key, (language, readings) in candidates.items():
        if not readings:
            continue
        text = "".join(reading.text for reading in readings)
        confidence = sum(reading.score for reading in readings) / len(readings)
        if script_share(text, language.script) >= AUTO_MIN_SCRIPT_SHARE \
                and confidence >= best_confidence:
            best, best_confidence = key, confidence
    return best


def language_by_letters(readings: list[Reading]) -> Language | None:
    """The Latin-script Tesseract language whose own letters
    (:attr:`~ocr_contract.languages.Language.letters`) the readings show most, when they are at
    least :data:`AUTO_MIN_OWN_LETTERS` and :data:`AUTO_MIN_OWN_SHARE` of the letters read;
    None otherwise."""
    text = "".join(reading.text for reading in readings)
    letters = sum(char.isalpha() for char in text)
    counts = {language: sum(text.count(letter) for letter in language.letters)
              for language in LANGUAGES if language.letters}
    best = max(counts, key=counts.get, default=None)
    if best is None or counts[best] < max(AUTO_MIN_OWN_LETTERS, AUTO_MIN_OWN_SHARE * letters):
        return None
    return best


def second_opinion(readings: list[Reading],
                   read_with: Callable[[list[int], str], list[Reading]]) -> list[Reading]:
    """``auto``: PP-OCR's readings, or a Tesseract language's where one is recognised (see
    the module docstring).

    Args:
        readings: PP-OCR's reading of every line.
        read_with: ``(line indices, tesseract languages) -> readings`` of those lines.

    Returns:
        every line read again when the page shows a language's own letters; else the readings
        with the doubtful ones replaced when a script's language won.
    """
    by_letters = language_by_letters(readings)
    if by_letters is not None:
        return read_with(list(range(len(readings))), f"{by_letters.traineddata}+{ENGLISH}")
    unsure = doubtful(readings)
    if not unsure:
        return readings
    candidates = {}
    for language in LANGUAGES:
        if language.recognizer == TESSERACT and language.script:
            key = f"{language.traineddata}+{ENGLISH}"
            candidates[key] = (language, read_with(unsure, key))
    chosen = choose_language(candidates)
    if chosen is None:
        return readings
    improved = list(readings)
    for index, reading in zip(unsure, candidates[chosen][1]):
        improved[index] = reading
    return improved
