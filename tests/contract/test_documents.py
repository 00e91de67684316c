"""Files that cannot import the contract say what it says: the README's parameter table, its
list of formats and of languages."""

import re
from pathlib import Path

from ocr_contract.formats import ACCEPTED_FORMATS_TEXT
from ocr_contract.languages import LANGUAGES, PPOCR
from ocr_contract.parameters import PARAMETERS

ROOT = Path(__file__).resolve().parents[2]


def shown(value) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def test_readme_lists_every_parameter_with_its_default():
    # A default may carry a pointer to the text that explains it: "1280 (see below)".
    rows = re.findall(r"^\| `(\w+)` \| ([^|(]+)(?:\([^|]*\))? \|", (ROOT / "README.md").read_text(),
                      re.M)
    assert [(name, default.strip()) for name, default in rows] == \
        [(p.name, shown(p.default)) for p in PARAMETERS]


def test_readme_lists_the_formats_and_languages_the_contract_accepts():
    text = " ".join((ROOT / "README.md").read_text().split())
    assert ACCEPTED_FORMATS_TEXT in text
    ppocr = re.search(r"PP-OCRv6 reads Latin-script languages \(([a-z, ]+)\), Chinese and "
                      r"Japanese; ([a-z, and]+) are read by Tesseract", text)
    assert ppocr, "the README's language sentence"
    listed = re.findall(r"[a-z]{2}", ppocr.group(1)) + ["zh", "ja"]
    tesseract = re.findall(r"\b[a-z]{2}\b", ppocr.group(2).replace("and", ""))
    assert sorted(listed) == sorted(l.code for l in LANGUAGES if l.recognizer == PPOCR)
    assert sorted(tesseract) == sorted(l.code for l in LANGUAGES if l.recognizer != PPOCR)
