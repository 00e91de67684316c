"""Box-set comparison used by the parity tests (one-to-one matching at IoU >= 0.8)."""

from ocr_pipeline.evaluation import f_score, match, polygon

PARITY_IOU = 0.8
PARITY_F = 0.95


def parity_f(found: list, expected: list, threshold: float = PARITY_IOU) -> float:
    """F-score of matching ``found`` boxes one-to-one with ``expected`` ones at ``threshold``."""
    pairs = match([polygon(b) for b in found], [polygon(b) for b in expected], threshold)
    return f_score(len(pairs), len(found), len(expected))
