"""Gateway observability: Prometheus metrics and request ids on every log line.

Metrics are read from this process's registry: under gunicorn, the master serves the workers'
pooled samples on their own port (tested in tests/deploy/test_deploy.py), never at the API's
``/metrics``."""

import json
import logging

import pytest
from prometheus_client import REGISTRY, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from ocr_api.middleware import RequestIdLogFilter

from tests.helpers import IMAGES

pytestmark = [pytest.mark.django_db]


def samples() -> dict:
    """``{(sample name, frozen labels): value}`` of the gateway's metrics, as Prometheus reads
    them."""
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(generate_latest(REGISTRY).decode())
            for s in family.samples}


def value(scraped, name, **labels):
    return scraped.get((name, frozenset(labels.items())), 0.0)


@pytest.mark.triton
def test_requests_latency_and_errors_are_counted(api_client, live_triton, settings):
    before = samples()
    assert api_client.post("/api/ocr", data=(IMAGES / "korean.png").read_bytes(),
                           content_type="image/png").status_code == 200
    assert api_client.post("/api/ocr", data=b"text", content_type="image/png").status_code == 415
    settings.TRITON_TIMEOUT_S = 0.001
    # Parameters no other test sends: not in Triton's response cache, so really too slow.
    assert api_client.post("/api/ocr?low_text=0.4321", data=(IMAGES / "img_2.jpg").read_bytes(),
                           content_type="image/jpeg").status_code == 504
    after = samples()

    def grew(name, **labels):
        return value(after, name, **labels) - value(before, name, **labels)

    assert grew("ocr_requests_total", endpoint="ocr", status="200", code="") == 1
    assert grew("ocr_requests_total", endpoint="ocr", status="415",
                code="unsupported_media_type") == 1
    assert grew("ocr_requests_total", endpoint="ocr", status="504",
                code="inference_timeout") == 1
    assert grew("ocr_triton_errors_total", code="inference_timeout") == 1
    assert grew("ocr_request_duration_seconds_count", endpoint="ocr") == 3
    assert grew("ocr_inference_duration_seconds_count") == 1
    assert value(after, "ocr_requests_in_flight") == 0


def test_every_log_line_of_a_request_carries_its_id(api_client):
    seen = []

    class Capture(logging.Handler):
        def emit(self, record):
            seen.append(record)

    handler = Capture()
    handler.addFilter(RequestIdLogFilter())
    logger = logging.getLogger("django.request")
    logger.addHandler(handler)
    try:
        response = api_client.get("/api/ocr")        # 405: Django logs a warning for it
    finally:
        logger.removeHandler(handler)
    assert seen and all(r.request_id == response["X-Request-ID"] for r in seen)


def test_json_log_format(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    code = ("import django, logging; django.setup(); "
            "logging.getLogger('ocr_api').warning('inference slow: %d ms', 1234)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parents[2],
                          env={"DJANGO_SETTINGS_MODULE": "gateway.settings", "LOG_FORMAT": "json",
                               "OCR_VAR_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"})
    line = json.loads(done.stderr.strip().splitlines()[-1])
    assert (line["level"], line["logger"], line["message"], line["request_id"]) == \
        ("WARNING", "ocr_api", "inference slow: 1234 ms", "-")
