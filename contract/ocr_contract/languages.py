"""Recognition languages, and which recognizer reads each one.

PP-OCRv6's dictionary (``ppocrv6_dict.txt``: Latin script with its accented letters, Chinese,
Japanese kana, digits, symbols) has no Hangul, Thai, Devanagari or Cyrillic; those languages
are read by Tesseract (Debian's ``tesseract-ocr`` with the language pack named by
:attr:`Language.traineddata`). So is Turkish: PP-OCR has its letters but reads dotless ı,
dotted İ, ş and ğ as i, I, s and g. On drawn Turkish pages (``python -m bench.languages``:
15 lines of their own, 5 fonts, 2 sizes, clean and photo-like), PP-OCR read 0.650 of the words
holding one of these letters exactly on the clean pages and 0.505 on the photo-like ones (all
words: 0.866, 0.787); Tesseract ``tur+eng`` on the same line boxes 0.993 and 0.985 (all words:
0.997, 0.993). A request that names Turkish with other languages is read by Tesseract in the
Tesseract languages and English alone (``tr,zh`` reads no Chinese).

The request parameter ``language`` takes ``auto`` or codes from
:data:`LANGUAGES`, comma-separated.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

AUTO = "auto"
PPOCR = "ppocr"
TESSERACT = "tesseract"


@dataclass(frozen=True)
class Language:
    """One supported language.

    Attributes:
        code: ISO 639-1 code, as clients send it.
        name: English name.
        recognizer: :data:`PPOCR` or :data:`TESSERACT`.
        traineddata: Tesseract's language name (``kor``...); Debian's package is
            ``tesseract-ocr-<traineddata with _ as ->``.
        script: for Tesseract's languages in a script of their own, the first word of the
            Unicode names of the script's letters (``HANGUL``...): how ``auto`` recognises a
            reading in it.
        letters: for a Tesseract language in Latin script, letters that no other language
            here writes (Turkish ``ğ ş ı``...): how ``auto`` recognises its page from PP-OCR's
            reading (:mod:`ocr_pipeline.routing`).
    """

    code: str
    name: str
    recognizer: str
    traineddata: str
    script: str = ""
    letters: str = ""


LANGUAGES = (
    Language("en", "English", PPOCR, "eng"),
    Language("fr", "French", PPOCR, "fra"),
    Language("de", "German", PPOCR, "deu"),
    Language("es", "Spanish", PPOCR, "spa"),
    Language("it", "Italian", PPOCR, "ita"),
    Language("pt", "Portuguese", PPOCR, "por"),
    Language("nl", "Dutch", PPOCR, "nld"),
    Language("sv", "Swedish", PPOCR, "swe"),
    Language("da", "Danish", PPOCR, "dan"),
    Language("no", "Norwegian", PPOCR, "nor"),
    Language("fi", "Finnish", PPOCR, "fin"),
    Language("pl", "Polish", PPOCR, "pol"),
    Language("cs", "Czech", PPOCR, "ces"),
    Language("tr", "Turkish", TESSERACT, "tur", letters="ğĞşŞıİ"),
    Language("zh", "Chinese", PPOCR, "chi_sim"),
    Language("ja", "Japanese", PPOCR, "jpn"),
    Language("ko", "Korean", TESSERACT, "kor", "HANGUL"),
    Language("th", "Thai", TESSERACT, "tha", "THAI"),
    Language("hi", "Hindi", TESSERACT, "hin", "DEVANAGARI"),
    Language("ru", "Russian", TESSERACT, "rus", "CYRILLIC"),
)
BY_CODE = {language.code: language for language in LANGUAGES}

#: Tesseract language packs the Tesseract recognizer needs: those of its languages, and
#: ``eng`` (Latin words, numbers and units appear in nearly every Korean, Thai... image).
TESSERACT_TRAINEDDATA = ("eng",) + tuple(
    language.traineddata for language in LANGUAGES if language.recognizer == TESSERACT)
#: Tesseract's orientation and script detection data (not a language): which way a page whose
#: lines run vertically is turned, before detection (the preprocess step, ocr_pipeline.page_turn).
OSD_TRAINEDDATA = "osd"
#: Every Tesseract data file the models load: what the prerequisites check names and the Triton
#: image installs.
TESSDATA_FILES = TESSERACT_TRAINEDDATA + (OSD_TRAINEDDATA,)


def parse(text: str) -> tuple[str, ...]:
    """The language codes of a ``language`` value: ``("auto",)`` or ISO 639-1 codes.

    Codes are case-insensitive, separated by commas, spaces around them ignored, repeats
    dropped (first occurrence kept).

    Raises:
        ValueError: empty, an unsupported code, or ``auto`` together with codes; the message
            lists the supported values.
    """
    codes = []
    for part in str(text).split(","):
        code = part.strip().lower()
        if code not in codes:
            codes.append(code)
    if codes == [AUTO]:
        return (AUTO,)
    unknown = [code for code in codes if code not in BY_CODE]
    if unknown or not codes:
        shown = ", ".join(repr(code) for code in unknown) or "nothing"
        raise ValueError(f"{shown} is not supported; use auto, or codes separated by commas "
                         f"from: {', '.join(BY_CODE)}")
    return tuple(codes)


#: Where Debian and Ubuntu put Tesseract's language data.
TESSDATA_DIRS = ("/usr/share/tesseract-ocr/5/tessdata", "/usr/share/tesseract-ocr/4.00/tessdata")


def tessdata_dir(environ: Mapping[str, str] = os.environ) -> Path | None:
    """Tesseract's language-data folder: ``TESSDATA_PREFIX`` (Tesseract's own variable) when
    set, else the first of :data:`TESSDATA_DIRS` that exists; None when there is none."""
    if environ.get("TESSDATA_PREFIX"):
        return Path(environ["TESSDATA_PREFIX"])
    return next((Path(folder) for folder in TESSDATA_DIRS if Path(folder).is_dir()), None)


def debian_package(traineddata: str) -> str:
    """The Debian/Ubuntu package with a language's data (``chi_sim`` -> ``tesseract-ocr-chi-sim``)."""
    return f"tesseract-ocr-{traineddata.replace('_', '-').lower()}"


if __name__ == "__main__":
    # `python3 -m ocr_contract.languages`: the Debian packages of Tesseract's data (what the
    # Triton image installs).
    print(*map(debian_package, TESSDATA_FILES))
