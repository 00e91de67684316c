"""Word-box quality: how many of a page's known words are answered as a word of their own.

A known word is *hit* when an answered word has exactly its text and a polygon IoU of at least
``threshold`` with its box; each answered word hits at most one known word (one-to-one, best
IoU first, the rule of :func:`ocr_pipeline.evaluation.match`, over the pairs with equal
text). The ICDAR 2015
detection rule on word polygons (text-agnostic, with don't-care regions) is
:func:`ocr_pipeline.evaluation.score_image`'s.
"""

from __future__ import annotations

from dataclasses import dataclass

from .evaluation import match, polygon

#: IoU a word box needs with the known word's box (ICDAR's detection threshold).
WORD_IOU = 0.5


@dataclass
class WordScore:
    """Known words hit (:func:`score_words`) out of all known words, summed over pages."""

    hits: int = 0
    truths: int = 0
    answered: int = 0

    @property
    def rate(self) -> float:
        """Share of the known words hit, 0..1 (0 for none)."""
        return self.hits / self.truths if self.truths else 0.0

    def add(self, other: "WordScore") -> None:
        self.hits += other.hits
        self.truths += other.truths
        self.answered += other.answered


def score_words(answered: list[tuple[str, list]], truths: list[tuple[str, list]],
                threshold: float = WORD_IOU) -> WordScore:
    """Score one page's answered words against its known words.

    Args:
        answered: ``(text, points)`` per answered word, points ``[[x, y]] * 4`` in pixels.
        truths: ``(text, points)`` per known word, the same pixels.
        threshold: the IoU a hit needs.

    Returns:
        a :class:`WordScore` for the page.
    """
    pairs = match([polygon(points) for _, points in answered],
                  [polygon(points) for _, points in truths], threshold,
                  allowed=lambda a, t: answered[a][0] == truths[t][0])
    return WordScore(len(pairs), len(truths), len(answered))
