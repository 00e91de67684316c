"""Prometheus metrics of the gateway.

Under gunicorn every worker is a process: with ``PROMETHEUS_MULTIPROC_DIR`` set (the serve
command and the container images set it), each worker writes its samples there, and
gunicorn's master serves their sum on a port of its own, never the API's (``METRICS_HOST``,
``METRICS_PORT``: see ``deploy/gunicorn.conf.py``). Without it (tests), the samples stay in
this process's registry.

Triton's own metrics (queue and compute time per model, GPU use) are on Triton's metrics port.
"""

from __future__ import annotations

import os

from prometheus_client import Counter, Gauge, Histogram


def ensure_multiprocess_dir() -> None:
    """Make ``PROMETHEUS_MULTIPROC_DIR`` if it is set: prometheus_client writes a metric's file
    there as the metric is created (at import), only gunicorn's start hook makes the directory,
    and a management command (migrate, check, create_api_key, run_job_workers) run in the image
    before gunicorn must not crash on it. Called by every module that declares metrics."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        os.makedirs(os.environ["PROMETHEUS_MULTIPROC_DIR"], exist_ok=True)


ensure_multiprocess_dir()

#: Latency buckets in seconds: CPU inference takes 0.2-5 s, GPU inference 10-100 ms.
LATENCY_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 16, 32, 64)

REQUESTS = Counter("ocr_requests_total", "OCR images answered, by endpoint, HTTP status and "
                   "error code ('' when answered with boxes)", ["endpoint", "status", "code"])
REQUEST_SECONDS = Histogram("ocr_request_duration_seconds", "Time in the gateway per OCR "
                            "request", ["endpoint"], buckets=LATENCY_BUCKETS)
INFERENCE_SECONDS = Histogram("ocr_inference_duration_seconds", "Time of the Triton call per "
                              "image", buckets=LATENCY_BUCKETS)
IN_FLIGHT = Gauge("ocr_requests_in_flight", "OCR requests being handled",
                  multiprocess_mode="livesum")
TRITON_ERRORS = Counter("ocr_triton_errors_total", "Triton calls that failed, by API error "
                        "code (inference_unavailable, inference_timeout, ...)", ["code"])

ADMISSION_REFUSALS = Counter("ocr_admission_refusals_total", "Requests refused before "
                             "inference, by reason (overloaded, key_busy, page_too_slow)",
                             ["reason"])
ADMISSION_BACKLOG = Gauge("ocr_admission_backlog_seconds", "Estimated seconds of inference "
                          "ahead of a page sent now, at the last admission (scale on it)",
                          multiprocess_mode="mostrecent")
ADMISSION_PAGES = Gauge("ocr_admission_pages_in_flight", "Pages in flight to Triton, from "
                        "every process sharing the ledger, at the last admission",
                        multiprocess_mode="mostrecent")
ADMISSION_WAIT = Histogram("ocr_admission_wait_seconds", "Estimated wait of each page sent to "
                           "Triton behind the pages already in flight", buckets=LATENCY_BUCKETS)


def observe_image(endpoint: str, status: int, code: str, inference_ms: float | None) -> None:
    """Count one answered image and its inference time (milliseconds)."""
    REQUESTS.labels(endpoint, str(status), code).inc()
    if inference_ms is not None:
        INFERENCE_SECONDS.observe(inference_ms / 1000.0)
