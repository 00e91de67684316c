"""Prometheus metrics of the jobs (in the gateway's registry; worker processes write theirs to
``PROMETHEUS_MULTIPROC_DIR`` when it is set, like gunicorn's workers)."""

from prometheus_client import Counter

JOBS = Counter("ocr_jobs_total", "Jobs by the status they reached (queued when accepted)",
               ["status"])
PAGES = Counter("ocr_job_pages_total", "Job pages by outcome: done (read and stored), "
                "skipped (delivered again after it was stored), failed, retried", ["outcome"])
WEBHOOKS = Counter("ocr_job_webhooks_total", "Webhook delivery attempts by outcome",
                   ["outcome"])
