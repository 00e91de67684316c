"""The box-parity bar of the tests (the matching itself is ocr_pipeline.evaluation.parity_f)."""

from ocr_pipeline.evaluation import PARITY_IOU, parity_f  # noqa: F401 - re-exported for tests

#: Every image's boxes must match the reference's with at least this F-score.
PARITY_F = 0.95
