"""Recognition quality: a bag-of-tokens score of read text against the words an image shows.

Tokens (:func:`tokens`): the text is NFKC-normalised and casefolded, then split on whitespace;
each CJK ideograph, kana or Hangul syllable is a token of its own (those scripts do not put
spaces between words), and the other runs keep only their letters and digits (``"NOTHING?"``
-> ``nothing``, ``"[02-03]"`` -> ``0203``; a run with neither is no token). True positives are
the size of the multiset intersection of the read and the expected tokens, so order and line
breaks do not matter and each expected token is matched at most once.

An image whose ground truth lists every legible word (``complete``) scores precision, recall
and F; otherwise only recall (an unlisted word that was read is not an error). Totals sum the
counts of all images before dividing (like ICDAR's).
"""

from __future__ import annotations

import json
import unicodedata
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from . import rates

#: Unicode blocks whose every character is a token: CJK ideographs (and extension A, the
#: compatibility ideographs), hiragana, katakana, Hangul syllables and jamo.
_CHARACTER_TOKEN_RANGES = (
    (0x3040, 0x30FF),   # hiragana, katakana
    (0x3400, 0x4DBF),   # CJK unified ideographs extension A
    (0x4E00, 0x9FFF),   # CJK unified ideographs
    (0xF900, 0xFAFF),   # CJK compatibility ideographs
    (0x1100, 0x11FF),   # Hangul jamo
    (0x3130, 0x318F),   # Hangul compatibility jamo
    (0xAC00, 0xD7A3),   # Hangul syllables
)


def _is_character_token(char: str) -> bool:
    code = ord(char)
    return any(low <= code <= high for low, high in _CHARACTER_TOKEN_RANGES)


def tokens(text: str) -> list[str]:
    """The tokens of ``text`` (see the module docstring), in reading order."""
    found = []
    for piece in unicodedata.normalize("NFKC", text).casefold().split():
        run = []
        for char in piece:
            if _is_character_token(char):
                if run:
                    found.append("".join(run))
                    run = []
                found.append(char)
            elif char.isalnum():
                run.append(char)
        if run:
            found.append("".join(run))
    return found


@dataclass
class TextScore:
    """Counts of a bag-of-tokens comparison; rates are 0..1.

    Attributes:
        matched: tokens read that are in the ground truth (multiset intersection).
        read: tokens read.
        expected: tokens of the ground truth.
    """

    matched: int = 0
    read: int = 0
    expected: int = 0

    @property
    def precision(self) -> float:
        """matched / read (1.0 when nothing was read and nothing expected)."""
        return rates.precision(self.matched, self.read, self.expected)

    @property
    def recall(self) -> float:
        """matched / expected (1.0 when nothing was expected)."""
        return rates.recall(self.matched, self.expected)

    @property
    def f_score(self) -> float:
        """The harmonic mean of precision and recall."""
        return rates.f_score(self.matched, self.read, self.expected)

    def add(self, other: "TextScore") -> None:
        """Accumulate another image's counts (totals are summed counts)."""
        self.matched += other.matched
        self.read += other.read
        self.expected += other.expected


def score_text(read: str, expected: list[str]) -> TextScore:
    """Score read text against the expected words (each a string of one or more words)."""
    read_tokens = Counter(tokens(read))
    expected_tokens = Counter(token for word in expected for token in tokens(word))
    matched = sum((read_tokens & expected_tokens).values())
    return TextScore(matched, sum(read_tokens.values()), sum(expected_tokens.values()))


@dataclass(frozen=True)
class TextTruth:
    """One image's ground truth: its file name, the words it shows, and whether every legible
    word is listed (then precision counts too)."""

    image: str
    words: list[str]
    complete: bool


def load_text_truth(path: str | Path) -> list[TextTruth]:
    """Read ``recognition/text_gt.json``: ``{"images": {name: {"complete": bool, "words":
    [{"text": ...}, ...]}}}``.

    Raises:
        ValueError: the file is not in that format.
    """
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    try:
        return [TextTruth(name, [word["text"] for word in entry["words"]],
                          bool(entry["complete"]))
                for name, entry in sorted(data["images"].items())]
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"{path}: not a text ground-truth file: {exc}") from exc


def normalise_word(text: str) -> str:
    """A word or label for exact comparison: its tokens joined without spaces (so case,
    punctuation and spacing do not count)."""
    return "".join(tokens(text))
