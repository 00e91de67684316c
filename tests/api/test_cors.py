"""CORS for browser apps on other origins (django-cors-headers): the origins come from
DJANGO_CORS_ALLOWED_ORIGINS, a preflight is answered without a key, only /api/ takes part."""

import json
import os
import subprocess
import sys

import pytest
from django.conf import settings as django_settings
from django.test import Client

from ocr_api.models import OcrRequest

pytestmark = pytest.mark.django_db
APP = "https://app.example.com"


@pytest.fixture
def cors(settings):
    settings.CORS_ALLOWED_ORIGINS = [APP]
    return settings


def preflight(path: str, origin: str = APP):
    return Client().options(path, HTTP_ORIGIN=origin,
                            HTTP_ACCESS_CONTROL_REQUEST_METHOD="POST",
                            HTTP_ACCESS_CONTROL_REQUEST_HEADERS="authorization, content-type")


def test_a_preflight_from_an_allowed_origin_is_answered_without_a_key(cors):
    response = preflight("/api/ocr")
    assert response.status_code == 200
    assert response["Access-Control-Allow-Origin"] == APP
    methods = {m.strip() for m in response["Access-Control-Allow-Methods"].split(",")}
    headers = {h.strip() for h in response["Access-Control-Allow-Headers"].split(",")}
    assert {"POST", "OPTIONS"} <= methods and {"authorization", "content-type"} <= headers
    assert "Access-Control-Allow-Credentials" not in response
    assert not OcrRequest.objects.exists()            # not a request: no audit row


def test_the_answer_to_an_allowed_origin_is_readable_by_the_app(cors):
    response = Client().post("/api/ocr", data=b"x", content_type="image/png", HTTP_ORIGIN=APP)
    assert response.status_code == 401                 # the key is still needed
    assert response["Access-Control-Allow-Origin"] == APP
    exposed = {h.strip().lower() for h in response["Access-Control-Expose-Headers"].split(",")}
    assert {"x-request-id", "retry-after"} <= exposed


def test_other_origins_and_the_admin_get_no_cors_headers(cors):
    assert "Access-Control-Allow-Origin" not in preflight("/api/ocr", "https://evil.example")
    assert "Access-Control-Allow-Origin" not in preflight("/admin/login/")
    assert "Access-Control-Allow-Origin" not in Client().get(
        "/admin/login/", HTTP_ORIGIN=APP)


def test_no_origin_is_allowed_unless_configured():
    assert django_settings.CORS_ALLOWED_ORIGINS == []
    assert "Access-Control-Allow-Origin" not in preflight("/api/ocr")


@pytest.mark.parametrize(("value", "origins"), [
    (f"{APP},http://localhost:3000", [APP, "http://localhost:3000"]),
    ("", []),                                    # deploy/.env.example and the ConfigMap
])
def test_origins_come_from_the_environment(value, origins):
    code = ("import django; django.setup(); from django.conf import settings; "
            "from django.core.management import call_command; call_command('check'); "
            "import json; print(json.dumps(settings.CORS_ALLOWED_ORIGINS))")
    environ = dict(os.environ, DJANGO_SETTINGS_MODULE="gateway.settings",
                   DJANGO_CORS_ALLOWED_ORIGINS=value)
    done = subprocess.run([sys.executable, "-c", code], env=environ, capture_output=True,
                          text=True, timeout=60, cwd=django_settings.BASE_DIR)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == origins
