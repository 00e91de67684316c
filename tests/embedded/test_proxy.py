"""The buffering proxy (nginx) in front of gunicorn, as ``make serve`` and compose run it:
slow clients, chunked bodies, bodies over the limit and early refusals, read by urllib,
requests and curl."""

import json
import socket
import sqlite3
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import requests

from ocr_contract import limits
from ocr_embedded.gunicorn_server import Gunicorn
from ocr_embedded.launcher import free_port
from ocr_embedded.proxy import BufferingProxy
from ocr_embedded.stack import prepare_gateway_state
from ocr_proxy.config import ProxySettings, server_config

from tests.helpers import IMAGES

pytestmark = pytest.mark.slow

IMAGE = (IMAGES / "img_1.jpg").read_bytes()
QUERY = "?long_side=640&recognize=false"
CAP = 256 * 1024                     # a small OCR_MAX_UPLOAD_BYTES, so "over" is quick to send


def test_config_takes_the_gateway_limits_and_strips_the_marker_header():
    settings = ProxySettings.from_environ({"OCR_MAX_UPLOAD_BYTES": "1000",
                                           "OCR_BATCH_MAX_UPLOAD_BYTES": "5000",
                                           "OCR_JOB_MAX_BYTES": "90000",
                                           "OCR_PROXY_HEADER_TIMEOUT_S": "7",
                                           "OCR_PROXY_CONNECTIONS_PER_ADDRESS": "9",
                                           "TRITON_TIMEOUT_S": "45"})
    config = server_config(settings, "8080", "gateway:8000")
    slack = limits.MULTIPART_SLACK_BYTES
    assert f"client_max_body_size {1000 + slack};" in config
    assert f"client_max_body_size {5000 + slack};" in config
    # Jobs take larger documents, on their own location only: /api/ocr keeps its cap.
    jobs = config.split("location = /api/jobs {", 1)[1].split("}", 1)[0]
    assert f"client_max_body_size {90000 + slack};" in jobs
    ocr = config.split("location = /api/ocr {", 1)[1].split("}", 1)[0]
    assert f"client_max_body_size {1000 + slack};" in ocr
    # Cloud Vision's routes take the batch's bytes as base64 in JSON: 4/3 of them.
    for route in ("images", "files"):
        vision = config.split(f"location = /v1/{route}:annotate {{", 1)[1].split("}", 1)[0]
        assert f"client_max_body_size {6668 + slack};" in vision
    assert "client_header_timeout 7s;" in config and "limit_conn ocr_per_address 9;" in config
    assert "proxy_read_timeout 120s;" in config          # twice the inference deadline + 30 s
    assert "server gateway:8000;" in config and "listen 8080;" in config
    # Every location that proxies clears the marker; only the refusal sets it.
    assert config.count(f'proxy_set_header {limits.BODY_OVER_LIMIT_HEADER} "";') == 6
    assert config.count(f'proxy_set_header {limits.BODY_OVER_LIMIT_HEADER} "1";') == 1


@pytest.fixture(scope="module")
def gateway(tmp_path_factory, triton):
    """gunicorn (1 worker x 2 threads) with its own SQLite database and a small upload cap,
    pointed at the session's Triton: ``(gunicorn, key, database path)``."""
    var = tmp_path_factory.mktemp("proxy-gateway")
    env, key = prepare_gateway_state(var)
    server = Gunicorn("gateway.wsgi", free_port(), 1, 2, dict(
        env, TRITON_GRPC_URL=triton.grpc_url, TRITON_TIMEOUT_S="180",
        OCR_MAX_UPLOAD_BYTES=str(CAP), OCR_TRUSTED_PROXIES="127.0.0.1",
        OCR_UNAUTHENTICATED_RATE_PER_MINUTE="1000",
        PROMETHEUS_MULTIPROC_DIR=str(var / "prometheus"), METRICS_PORT=str(free_port())), var / "gunicorn.log")
    server.start("/api/health")
    try:
        yield server, key, var / "db.sqlite3"
    finally:
        server.stop()


def start_proxy(gateway, tmp_path, **overrides) -> BufferingProxy:
    server = gateway[0]
    settings = ProxySettings(max_upload_bytes=CAP, **overrides)
    return BufferingProxy("127.0.0.1", 0, f"127.0.0.1:{server.port}", tmp_path / "proxy.log",
                          settings=settings).start()


@pytest.fixture
def proxy(gateway, tmp_path):
    server = start_proxy(gateway, tmp_path)
    yield server
    server.stop()


def audit_code(database: Path, request_id: str) -> str | None:
    with sqlite3.connect(database) as db:
        row = db.execute("SELECT error_code FROM ocr_api_ocrrequest WHERE request_id = ?",
                         (request_id,)).fetchone()
    return row[0] if row else None


def chunks(data: bytes, size: int = 16 * 1024):
    for start in range(0, len(data), size):
        yield data[start:start + size]


@pytest.mark.triton
def test_chunked_uploads_are_read_and_ocrd_like_any_other(gateway, proxy):
    _, key, _ = gateway
    auth = {"Authorization": f"Api-Key {key}"}
    url = f"{proxy.url}/api/ocr{QUERY}"
    plain = requests.post(url, data=IMAGE, headers={**auth, "Content-Type": "image/jpeg"})
    assert plain.status_code == 200 and plain.json()["boxes"]
    chunked = requests.post(url, data=chunks(IMAGE),
                            headers={**auth, "Content-Type": "image/jpeg"})
    assert chunked.request.headers["Transfer-Encoding"] == "chunked"
    assert chunked.status_code == 200
    assert chunked.json()["boxes"] == plain.json()["boxes"]
    curl = subprocess.run(
        ["curl", "-s", "-H", f"Authorization: Api-Key {key}", "-H",
         "Transfer-Encoding: chunked", "-F", f"image=@{IMAGES / 'img_1.jpg'}", url],
        capture_output=True, timeout=120, check=True)
    assert json.loads(curl.stdout)["boxes"] == plain.json()["boxes"]


def _urllib(url: str, body, headers: dict) -> tuple[int, dict]:
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def _curl(url: str, body: bytes, headers: dict, tmp_path: Path) -> tuple[int, dict]:
    path = tmp_path / "body.bin"
    path.write_bytes(body)
    command = ["curl", "-s", "-w", "\n%{http_code}", "--data-binary", f"@{path}", url]
    for name, value in headers.items():
        command[1:1] = ["-H", f"{name}: {value}"]
    out = subprocess.run(command, capture_output=True, timeout=60, check=True).stdout
    text, _, status = out.decode().rpartition("\n")
    return int(status), json.loads(text)


CLIENTS = ["urllib", "requests", "curl"]


def send(client: str, url: str, body: bytes, headers: dict, tmp_path: Path,
         chunked: bool = False) -> tuple[int, dict]:
    if chunked:
        headers = {**headers, "Transfer-Encoding": "chunked"}
    if client == "urllib":
        return _urllib(url, chunks(body) if chunked else body, headers)
    if client == "requests":
        response = requests.post(url, data=chunks(body) if chunked else body,
                                 headers={k: v for k, v in headers.items()
                                          if k != "Transfer-Encoding"}, timeout=60)
        return response.status_code, response.json()
    return _curl(url, body, headers, tmp_path)


@pytest.mark.triton
@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
@pytest.mark.parametrize("client", CLIENTS)
def test_a_body_over_the_cap_gets_the_json_413_in_every_client(gateway, proxy, tmp_path,
                                                               client, chunked):
    _, key, database = gateway
    body = bytes(64) * (4 * CAP // 64)                  # 4x the cap, more than any buffer
    status, answer = send(client, f"{proxy.url}/api/ocr", body,
                          {"Authorization": f"Api-Key {key}", "Content-Type": "image/png"},
                          tmp_path, chunked)
    assert (status, answer["error"]["code"]) == (413, "payload_too_large")
    assert answer["error"]["message"] == f"The body is larger than the limit of {CAP} bytes."
    assert audit_code(database, answer["request_id"]) == "payload_too_large"


@pytest.mark.triton
@pytest.mark.parametrize("client", CLIENTS)
def test_refusals_before_the_body_is_read_reach_every_client(gateway, proxy, tmp_path, client):
    body = bytes(64) * (4 * CAP // 64)
    for headers, expected in (({"Authorization": "Api-Key junk.key"}, "authentication_failed"),
                              ({}, "not_authenticated")):
        status, answer = send(client, f"{proxy.url}/api/ocr", body,
                              {**headers, "Content-Type": "image/png"}, tmp_path)
        assert (status, answer["error"]["code"]) == (401, expected)


def _stalled(port: int, address: str = "127.0.0.1", body: bool = False) -> socket.socket:
    """A connection that sent part of a request and then nothing: its request line and one
    header, or (``body``) all its headers and the first bytes of a declared body."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=30,
                                    source_address=(address, 0))
    if body:
        sock.sendall(b"POST /api/ocr HTTP/1.1\r\nHost: localhost\r\nContent-Type: image/png\r\n"
                     b"Content-Length: 1000\r\n\r\n\x89PNG")
    else:
        sock.sendall(b"GET /api/health HTTP/1.1\r\nHost: localhost\r\n")
    return sock


@pytest.mark.triton
def test_stalled_clients_hold_no_gunicorn_thread(gateway, proxy):
    _, key, _ = gateway
    # Many more than gunicorn's 2 threads, half stalled in their headers, half in their body.
    stalled = [_stalled(proxy.listen_port, body=n % 2 == 1) for n in range(40)]
    try:
        with urllib.request.urlopen(f"{proxy.url}/api/health", timeout=10) as response:
            assert json.loads(response.read()) == {"status": "ok"}
        ocr = requests.post(f"{proxy.url}/api/ocr{QUERY}", data=IMAGE, timeout=60,
                            headers={"Authorization": f"Api-Key {key}",
                                     "Content-Type": "image/jpeg"})
        assert ocr.status_code == 200 and ocr.json()["boxes"]
    finally:
        for sock in stalled:
            sock.close()


@pytest.mark.triton
def test_a_stalled_connection_is_closed_after_the_header_timeout(gateway, tmp_path):
    proxy = start_proxy(gateway, tmp_path, header_timeout_s=1, body_timeout_s=1)
    try:
        for body in (False, True):
            sock = _stalled(proxy.listen_port, body=body)
            started = time.monotonic()
            data = sock.recv(65536)              # nginx closes (a 408 at most, no request)
            assert time.monotonic() - started < 15
            assert data == b"" or data.startswith(b"HTTP/1.1 408")
            sock.close()
    finally:
        proxy.stop()


@pytest.mark.triton
def test_connections_per_address_are_capped_with_a_json_429(gateway, tmp_path):
    proxy = start_proxy(gateway, tmp_path, connections_per_address=3)
    held = [_stalled(proxy.listen_port, body=True) for _ in range(3)]   # requests in progress
    try:
        # nginx counts a connection once it has read its headers: until it has read all three,
        # a fourth request may still be served; after that (seconds at most) it must not be.
        deadline = time.monotonic() + 10
        while True:
            try:
                urllib.request.urlopen(f"{proxy.url}/api/health", timeout=10).close()
            except urllib.error.HTTPError as error:
                assert error.code == 429 and error.headers["Retry-After"] == "1"
                assert json.loads(error.read())["error"]["code"] == "rate_limited"
                break
            assert time.monotonic() < deadline, "a fourth request from the address was served"
        # Another address is not affected.
        other = socket.create_connection(("127.0.0.1", proxy.listen_port), timeout=10,
                                         source_address=("127.0.0.2", 0))
        other.sendall(b"GET /api/health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        answer = b""
        while chunk := other.recv(65536):
            answer += chunk
        other.close()
        assert answer.startswith(b"HTTP/1.1 200")
    finally:
        for sock in held:
            sock.close()
        proxy.stop()
