"""Prometheus metrics of the jobs.

Counters are counted where the work happens: ``ocr_jobs_total`` by the gateway, the pages and
webhooks by the job workers. The backlog gauges (jobs by status, pages waiting, the oldest
queued job's age) are read from the database by every job worker process every
:data:`BACKLOG_INTERVAL_S` (:func:`observe_backlog`), the most recent reading winning.

Where they are served: with ``PROMETHEUS_MULTIPROC_DIR`` set, each process writes its samples
there; ``make serve`` gives the workers the gateway's folder, so gunicorn's master serves them
with the gateway's; a worker container serves its own folder with ``run_job_workers
--metrics-port`` (:func:`serve`).
"""

from __future__ import annotations

import logging
import os

from prometheus_client import Counter, Gauge

from ocr_api.metrics import ensure_multiprocess_dir

logger = logging.getLogger(__name__)
ensure_multiprocess_dir()

#: Seconds between two readings of the backlog by a worker process.
BACKLOG_INTERVAL_S = 15.0

JOBS = Counter("ocr_jobs_total", "Jobs by the status they reached (queued when accepted)",
               ["status"])
PAGES = Counter("ocr_job_pages_total", "Job pages by outcome: done (read and stored), "
                "skipped (delivered again after it was stored), failed, retried; "
                "rate(...{outcome=\"done\"}) is the pages read per second", ["outcome"])
WEBHOOKS = Counter("ocr_job_webhooks_total", "Webhook delivery attempts by outcome",
                   ["outcome"])
JOBS_BY_STATUS = Gauge("ocr_jobs_by_status", "Jobs in the database by status (until purged)",
                       ["status"], multiprocess_mode="mostrecent")
PAGES_WAITING = Gauge("ocr_job_pages_waiting", "Pages of active jobs not read yet (held back "
                      "by their key's window, in the broker, or being read): the queue depth",
                      multiprocess_mode="mostrecent")
OLDEST_QUEUED = Gauge("ocr_job_oldest_queued_seconds", "Age of the oldest job no worker has "
                      "started (0 when none waits)", multiprocess_mode="mostrecent")


def observe_backlog() -> None:
    """Read the backlog from the database into the gauges (three queries on indexed status
    columns).

    Raises:
        django.db.DatabaseError: the database could not be read.
    """
    from django.db.models import Count, Min
    from django.utils import timezone

    from .models import Job, JobPage

    counts = dict(Job.objects.order_by().values_list("status").annotate(Count("id")))
    for status, _ in Job.STATUSES:
        JOBS_BY_STATUS.labels(status).set(counts.get(status, 0))
    PAGES_WAITING.set(JobPage.objects.filter(status__in=(JobPage.PENDING, JobPage.QUEUED),
                                             job__status__in=Job.ACTIVE).count())
    oldest = Job.objects.filter(status=Job.QUEUED).aggregate(Min("created"))["created__min"]
    OLDEST_QUEUED.set((timezone.now() - oldest).total_seconds() if oldest else 0.0)


def watch_backlog(stop) -> None:
    """Call :func:`observe_backlog` every :data:`BACKLOG_INTERVAL_S` until ``stop`` (a
    ``threading.Event``) is set; a failed reading is logged and tried again."""
    from django.db import close_old_connections

    while not stop.is_set():
        try:
            observe_backlog()
        except Exception as exc:  # noqa: BLE001 - a metric never stops the worker
            logger.warning("job backlog not read: %s", exc)
        finally:
            close_old_connections()
        stop.wait(BACKLOG_INTERVAL_S)


def serve(port: int, host: str) -> None:
    """Serve this process's metrics, or with ``PROMETHEUS_MULTIPROC_DIR`` those pooled there,
    on ``host:port`` (a thread of this process).

    Raises:
        OSError: the port is taken.
    """
    from prometheus_client import REGISTRY, CollectorRegistry, multiprocess, start_http_server

    directory = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    registry = REGISTRY
    if directory:
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry, path=directory)
    start_http_server(port, host, registry=registry)
