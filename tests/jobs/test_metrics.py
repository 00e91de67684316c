"""The jobs' backlog gauges: read from the database by the workers (``ocr_jobs.metrics``), and
served by a worker process started with ``--metrics-port``."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
import time
import urllib.request

import pytest
from django.utils import timezone
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families

from ocr_embedded.launcher import free_port
from ocr_jobs.metrics import observe_backlog
from ocr_jobs.models import Job, JobPage

from .conftest import MANAGE, ROOT

STATUSES = ("queued", "running", "succeeded", "failed", "cancelled")


def make_job(api_key, status: str, pages: dict[str, int], age_s: float = 0.0) -> Job:
    job = Job.objects.create(api_key=api_key, request_id="r", format="pdf",
                             page_count=sum(pages.values()), status=status,
                             expires_at=timezone.now() + dt.timedelta(days=1))
    if age_s:
        Job.objects.filter(id=job.id).update(created=timezone.now() - dt.timedelta(seconds=age_s))
    number = 0
    for page_status, count in pages.items():
        for _ in range(count):
            number += 1
            JobPage.objects.create(job=job, api_key=api_key, number=number, status=page_status)
    return job


@pytest.mark.django_db
def test_the_backlog_gauges_count_jobs_pages_and_the_oldest_wait(api_key):
    key = api_key[0]
    make_job(key, "queued", {"pending": 3, "queued": 1}, age_s=120)
    make_job(key, "queued", {"pending": 2}, age_s=30)
    make_job(key, "running", {"done": 2, "queued": 2})
    make_job(key, "succeeded", {"done": 5})
    make_job(key, "cancelled", {"cancelled": 4})      # not waiting: its job ended
    observe_backlog()
    counts = {s: REGISTRY.get_sample_value("ocr_jobs_by_status", {"status": s})
              for s in STATUSES}
    assert counts == {"queued": 2, "running": 1, "succeeded": 1, "failed": 0, "cancelled": 1}
    assert REGISTRY.get_sample_value("ocr_job_pages_waiting") == 3 + 1 + 2 + 2
    assert 119 <= REGISTRY.get_sample_value("ocr_job_oldest_queued_seconds") < 125

    Job.objects.filter(status="queued").update(status="running")
    observe_backlog()
    assert REGISTRY.get_sample_value("ocr_job_oldest_queued_seconds") == 0
    assert REGISTRY.get_sample_value("ocr_jobs_by_status", {"status": "running"}) == 3


@pytest.mark.slow
@pytest.mark.triton
def test_a_worker_serves_the_jobs_metrics(jobs_stack):
    """A worker container's way (``run_job_workers --metrics-port``): its metrics page has the
    backlog as the database holds it."""
    succeeded = jobs_stack.query("SELECT COUNT(*) FROM ocr_jobs_job WHERE status = 'succeeded'")
    port = free_port()
    worker = subprocess.Popen([sys.executable, str(MANAGE), "run_job_workers", "--threads", "1",
                               "--metrics-port", str(port), "--metrics-host", "127.0.0.1"],
                              cwd=ROOT, env={**os.environ, **jobs_stack.env},
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wanted = ("ocr_jobs_by_status", (("status", "succeeded"),))
        samples: dict = {}
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and wanted not in samples:
            time.sleep(0.3)
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
                    text = r.read().decode()
            except OSError:                 # not listening yet
                continue
            samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
                       for family in text_string_to_metric_families(text)
                       for s in family.samples}
        assert samples.get(wanted) == succeeded[0][0], samples
        assert samples[("ocr_job_pages_waiting", ())] == 0
        assert samples[("ocr_job_oldest_queued_seconds", ())] == 0
    finally:
        worker.terminate()
        worker.wait(timeout=30)
