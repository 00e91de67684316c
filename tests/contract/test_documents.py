"""Files that cannot import the contract say what it says: the README's parameter table."""

import re
from pathlib import Path

from ocr_contract.parameters import PARAMETERS

ROOT = Path(__file__).resolve().parents[2]


def shown(value) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def test_readme_lists_every_parameter_with_its_default():
    rows = re.findall(r"^\| `(\w+)` \| ([^|]+) \|", (ROOT / "README.md").read_text(), re.M)
    assert [(name, default.strip()) for name, default in rows] == \
        [(p.name, shown(p.default)) for p in PARAMETERS]
