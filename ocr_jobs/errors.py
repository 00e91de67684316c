"""The jobs' API errors (codes in :data:`ocr_contract.errors.ERROR_CODES`). A job another key
created is DRF's ``NotFound`` (404 ``not_found``), never a 403."""

from rest_framework.exceptions import NotFound

from ocr_api.errors import ApiError

__all__ = ["IdempotencyKeyReused", "JobNotFinished", "NotFound"]


class JobNotFinished(ApiError):
    default_code = "job_not_finished"
    default_detail = "The job has not succeeded (yet); its result is there once it has."


class IdempotencyKeyReused(ApiError):
    default_code = "idempotency_key_reused"
    default_detail = "This Idempotency-Key was used for another request body."
