"""Precision, recall and F-score (H-mean) from match counts, as both quality measures use
them: detection (:mod:`ocr_pipeline.evaluation`, boxes matched by IoU) and text
(:mod:`ocr_pipeline.text_evaluation`, tokens matched as a multiset). Rates are 0..1; dataset
figures are computed from summed counts, not averaged rates (as ICDAR's protocol does)."""

from __future__ import annotations


def precision(matched: int, found: int, expected: int) -> float:
    """``matched / found``; with nothing found, 1.0 when nothing was expected either, else 0.0."""
    return matched / found if found else float(not expected)


def recall(matched: int, expected: int) -> float:
    """``matched / expected``; 1.0 when nothing was expected."""
    return matched / expected if expected else 1.0


def f_score(matched: int, found: int, expected: int) -> float:
    """F-score (H-mean): ``2 * matched / (found + expected)``, the harmonic mean of
    :func:`precision` and :func:`recall`; 1.0 when both are empty."""
    total = found + expected
    return 1.0 if total == 0 else 2.0 * matched / total
