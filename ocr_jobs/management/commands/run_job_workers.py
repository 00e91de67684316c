"""``manage.py run_job_workers``: one job worker process (Dramatiq's worker in this process,
``--threads`` threads, prefetch = threads, a 100-ms poll), until SIGTERM or SIGINT; a thread
reads the backlog into the jobs' gauges (:mod:`ocr_jobs.metrics`), served on
``--metrics-port`` if given.

Several processes are several commands (``ocr_embedded.broker.JobWorkers`` starts and
restarts them; compose and Kubernetes run replicas). ``--recover`` first sends again what a
killed gateway left queued (:func:`ocr_jobs.queueing.recover`): pass it to one process only.
"""

import signal
import threading

from django.conf import settings
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Run a job worker process (Dramatiq) until SIGTERM."

    def add_arguments(self, parser):
        parser.add_argument("--threads", type=int, default=None,
                            help="Worker threads (default OCR_JOB_WORKER_THREADS).")
        parser.add_argument("--recover", action="store_true",
                            help="First send again the pages a killed process left queued.")
        parser.add_argument("--metrics-port", type=int, default=None,
                            help="Serve the workers' Prometheus metrics on this port (a worker "
                                 "container; make serve's are served by gunicorn's master).")
        parser.add_argument("--metrics-host", default="0.0.0.0")

    def handle(self, *args, threads=None, recover=False, metrics_port=None,
               metrics_host="0.0.0.0", **options):
        from dramatiq import Worker

        from ocr_jobs import metrics, queueing, tasks

        threads = threads or settings.OCR_JOB_WORKER_THREADS
        stop = threading.Event()
        for number in (signal.SIGTERM, signal.SIGINT):
            signal.signal(number, lambda *_: stop.set())
        worker = Worker(tasks.broker, worker_threads=threads, worker_timeout=100)
        # Prefetch = threads (docs/jobs-broker.md: it counts pages in progress); Dramatiq reads
        # it from dramatiq_queue_prefetch at import, so it is set on the worker before start.
        worker.queue_prefetch = threads
        worker.start()
        if recover:
            queueing.recover()
        if metrics_port is not None:
            metrics.serve(metrics_port, metrics_host)
        threading.Thread(target=metrics.watch_backlog, args=(stop,), daemon=True,
                         name="job-backlog-metrics").start()
        self.stdout.write(f"job worker ready: {threads} threads", ending="\n")
        self.stdout.flush()
        stop.wait()
        worker.stop(timeout=10_000)
