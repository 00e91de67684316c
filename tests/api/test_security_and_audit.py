"""Production settings pass `check --deploy`; errors never leak internals; audit-log upkeep."""

import datetime as dt
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import RequestFactory
from django.utils import timezone

from ocr_api import audit
from ocr_api.views import ocr as ocr_views
from ocr_api.models import OcrRequest

ROOT = Path(__file__).resolve().parents[2]


def test_production_settings_pass_check_deploy(tmp_path):
    env = dict(os.environ, DJANGO_SECURE="true", DJANGO_DEBUG="false",
               DJANGO_SECRET_KEY="s3cr3t-" + "kX9#fQ2@pL7!vB4$" * 4,
               DJANGO_ALLOWED_HOSTS="ocr.example.com", OCR_VAR_DIR=str(tmp_path))
    done = subprocess.run([sys.executable, "manage.py", "check", "--deploy",
                           "--fail-level", "WARNING"], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "System check identified no issues (0 silenced)." in done.stdout


def test_development_defaults_do_not_pass_check_deploy(tmp_path):
    env = dict(os.environ, OCR_VAR_DIR=str(tmp_path))
    env.pop("DJANGO_SECURE", None)
    done = subprocess.run([sys.executable, "manage.py", "check", "--deploy",
                           "--fail-level", "WARNING"], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    assert done.returncode != 0 and "security.W008" in done.stderr + done.stdout


@pytest.mark.django_db
def test_a_bug_is_a_500_json_without_internals(api_client, monkeypatch):
    def explode(*args, **kwargs):
        raise RuntimeError("secret detail at /srv/app/ocr_api/views/ocr.py 10.0.0.7:8001")

    monkeypatch.setattr(ocr_views.documents, "open_document", explode)
    response = api_client.post("/api/ocr", data=b"\x89PNG\r\n\x1a\n", content_type="image/png")
    assert response.status_code == 500
    body = response.json()
    assert body["error"] == {"code": "internal_error", "message": "Internal server error."}
    assert b"secret" not in response.content and b"Traceback" not in response.content
    row = OcrRequest.objects.get(request_id=body["request_id"])
    assert (row.http_status, row.error_code) == (500, "internal_error")


@pytest.mark.parametrize("remote, forwarded, trusted, expected", [
    ("203.0.113.9", "", [], "203.0.113.9"),
    ("203.0.113.9", "198.51.100.1", [], "203.0.113.9"),          # untrusted peer: ignore XFF
    ("10.0.0.2", "198.51.100.1", ["10.0.0.0/8"], "198.51.100.1"),
    ("10.0.0.2", "1.2.3.4, 198.51.100.1, 10.0.0.5", ["10.0.0.0/8"], "198.51.100.1"),
    ("10.0.0.2", "not-an-ip", ["10.0.0.0/8"], "10.0.0.2"),
])
def test_client_ip_believes_only_trusted_proxies(settings, remote, forwarded, trusted, expected):
    settings.OCR_TRUSTED_PROXIES = trusted
    request = RequestFactory().get("/", REMOTE_ADDR=remote, HTTP_X_FORWARDED_FOR=forwarded)
    assert audit.client_ip(request) == expected


@pytest.mark.django_db
def test_purge_audit_log_deletes_only_old_rows(settings, capsys):
    settings.OCR_AUDIT_RETENTION_DAYS = 30
    for request_id, age in (("new", 1), ("edge", 29), ("old", 31), ("older", 400)):
        row = OcrRequest.objects.create(request_id=request_id, http_status=200)
        OcrRequest.objects.filter(pk=row.pk).update(
            created=timezone.now() - dt.timedelta(days=age))
    call_command("purge_audit_log", "--dry-run")
    assert "2 rows older than 30 days would be deleted" in capsys.readouterr().out
    assert OcrRequest.objects.count() == 4
    call_command("purge_audit_log")
    assert sorted(OcrRequest.objects.values_list("request_id", flat=True)) == ["edge", "new"]
