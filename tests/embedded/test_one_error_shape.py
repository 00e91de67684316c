"""Every error has the API's JSON shape, also those nginx answers itself (a malformed request,
headers or URL too long, an unknown Transfer-Encoding, too many connections, the gateway down
or too slow), with nginx's request id; gunicorn's limits sit above nginx's, so a request
nginx passes is never refused by gunicorn's HTML; a trailing slash names the right path."""

import json
import socket
import threading
import urllib.request

import pytest
import requests

from ocr_embedded.launcher import free_port
from ocr_embedded.proxy import BufferingProxy
from ocr_proxy.config import HEADER_BUFFER_BYTES, ProxySettings

from .stack import raw_request

pytestmark = pytest.mark.slow

HEX32 = r"[0-9a-f]{32}"


def get(path: bytes, headers: bytes = b"") -> bytes:
    return (b"GET " + path + b" HTTP/1.1\r\nHost: localhost\r\n" + headers +
            b"Connection: close\r\n\r\n")


def assert_proxy_error(response, status: int, code: str, retry_after: str | None = None):
    """nginx's own answer: the JSON shape, its code, and one request id in body and header."""
    assert response.status == status
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert body["error"]["code"] == code and body["error"]["message"]
    assert body["request_id"] == response.headers["x-request-id"]
    assert len(body["request_id"]) == 32
    assert response.headers.get("retry-after") == retry_after


def line_of(length: int) -> bytes:
    """``GET /api/health?x=aaa... HTTP/1.1`` of exactly ``length`` bytes."""
    prefix, suffix = b"GET /api/health?x=", b" HTTP/1.1"
    return prefix + b"a" * (length - len(prefix) - len(suffix)) + suffix


def test_the_longest_request_line_nginx_takes_reaches_the_gateway(proxied_gateway):
    # nginx's buffer holds the line and its CRLF; gunicorn's limit (8190) is not below it.
    longest = HEADER_BUFFER_BYTES - 2
    passed = raw_request(proxied_gateway.port,
                         line_of(longest) + b"\r\nHost: localhost\r\nConnection: close\r\n\r\n")
    assert (passed.status, passed.json()) == (200, {"status": "ok"})
    refused = raw_request(proxied_gateway.port, line_of(longest + 1) +
                          b"\r\nHost: localhost\r\nConnection: close\r\n\r\n")
    assert_proxy_error(refused, 414, "uri_too_long")


def test_headers_nginx_takes_reach_the_gateway_and_larger_ones_get_a_json_431(proxied_gateway):
    port = proxied_gateway.port
    longest = b"X-Big: " + b"a" * (HEADER_BUFFER_BYTES - 2 - 7) + b"\r\n"
    assert raw_request(port, get(b"/api/health", longest)).status == 200
    # 120 headers were gunicorn's HTML 431; nginx takes 1000 header lines, gunicorn too.
    for count in (120, 990):
        many = b"".join(b"X-H%d: 1\r\n" % n for n in range(count))
        assert raw_request(port, get(b"/api/health", many)).json() == {"status": "ok"}
    too_long = b"X-Big: " + b"a" * (HEADER_BUFFER_BYTES - 7) + b"\r\n"
    assert_proxy_error(raw_request(port, get(b"/api/health", too_long)), 431,
                       "headers_too_large")
    too_many = b"".join(b"X-H%d: 1\r\n" % n for n in range(1100))
    assert_proxy_error(raw_request(port, get(b"/api/health", too_many)), 431,
                       "headers_too_large")


@pytest.mark.parametrize("request_bytes, status, code", [
    (b"GARBAGE\r\n\r\n", 400, "malformed_request"),
    (b"GET /api/health HTTP/1.1\r\nConnection: close\r\n\r\n", 400, "malformed_request"),
    (b"POST /api/ocr HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
     400, "malformed_request"),
    (b"POST /api/ocr HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: gzip\r\n\r\n",
     501, "unsupported_transfer_encoding"),
    (b"GET /api/health HTTP/9.9\r\nHost: localhost\r\n\r\n", 505, "unsupported_http_version"),
], ids=["request line", "no Host", "chunk", "transfer encoding", "version"])
def test_malformed_requests_get_nginxs_json(proxied_gateway, request_bytes, status, code):
    assert_proxy_error(raw_request(proxied_gateway.port, request_bytes), status, code)


def test_a_body_too_large_for_a_url_without_uploads_is_json_413(proxied_gateway):
    response = raw_request(proxied_gateway.port,
                           b"POST /api/models HTTP/1.1\r\nHost: localhost\r\nContent-Length: "
                           b"2000000\r\nConnection: close\r\n\r\n")
    assert_proxy_error(response, 413, "payload_too_large")


def test_a_post_over_the_connection_cap_gets_the_json_429_with_retry_after(proxied_gateway,
                                                                          tmp_path):
    proxy = BufferingProxy("127.0.0.1", 0, f"127.0.0.1:{proxied_gateway.gunicorn.port}",
                           tmp_path / "proxy.log",
                           settings=ProxySettings(connections_per_address=2)).start()
    held = []
    try:
        for _ in range(2):               # two requests in progress: bodies not sent yet
            sock = socket.create_connection(("127.0.0.1", proxy.listen_port), timeout=30)
            sock.sendall(b"POST /api/ocr HTTP/1.1\r\nHost: localhost\r\n"
                         b"Content-Type: image/png\r\nContent-Length: 1000\r\n\r\n\x89PNG")
            held.append(sock)
        # The upload locations used to lose the server's error pages (HTML 429, no Retry-After).
        for request in ((b"POST /api/ocr HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\n"
                         b"Connection: close\r\n\r\n"), get(b"/api/health")):
            for _ in range(50):          # until nginx has counted both held requests
                response = raw_request(proxy.listen_port, request)
                if response.status == 429:
                    break
            assert_proxy_error(response, 429, "rate_limited", retry_after="1")
    finally:
        for sock in held:
            sock.close()
        proxy.stop()


def test_the_gateway_down_is_a_json_502_with_retry_after(tmp_path):
    proxy = BufferingProxy("127.0.0.1", 0, f"127.0.0.1:{free_port()}", tmp_path / "proxy.log",
                           settings=ProxySettings()).start()
    try:
        for request in (get(b"/api/health"),
                        (b"POST /api/ocr HTTP/1.1\r\nHost: localhost\r\nContent-Length: 3\r\n"
                         b"Connection: close\r\n\r\nabc")):
            assert_proxy_error(raw_request(proxy.listen_port, request), 502,
                               "gateway_unavailable", retry_after="5")
    finally:
        proxy.stop()


def test_a_gateway_that_does_not_answer_in_time_is_a_json_504(tmp_path):
    silent = socket.create_server(("127.0.0.1", 0))       # accepts, never answers
    accepted = []
    threading.Thread(target=lambda: accepted.append(silent.accept()), daemon=True).start()
    proxy = BufferingProxy("127.0.0.1", 0, f"127.0.0.1:{silent.getsockname()[1]}",
                           tmp_path / "proxy.log",
                           settings=ProxySettings(read_timeout_s=1)).start()
    try:
        response = raw_request(proxy.listen_port, get(b"/api/health"))
        assert_proxy_error(response, 504, "gateway_timeout", retry_after="5")
        assert "within 1 s" in response.json()["error"]["message"]
    finally:
        proxy.stop()
        silent.close()


def test_the_request_id_is_the_one_nginx_gave_and_no_client_chooses_it(proxied_gateway):
    chosen = "0123456789abcdef0123456789abcdef"
    through_nginx = requests.post(
        f"{proxied_gateway.proxy.url}/api/ocr", data=b"not an image",
        headers={"Authorization": f"Api-Key {proxied_gateway.key}",
                 "Content-Type": "image/png", "X-Request-ID": chosen})
    request_id = through_nginx.json()["request_id"]
    assert through_nginx.status_code == 415 and request_id == through_nginx.headers[
        "X-Request-ID"] and request_id != chosen
    # The audit row has that id.
    assert proxied_gateway.query("SELECT error_code FROM ocr_api_ocrrequest WHERE "
                                 "request_id = ?", request_id) == [("unsupported_media_type",)]
    # gunicorn believes an X-Request-ID from the proxy's address (how nginx's reaches the
    # gateway), never from another one.
    direct = f"http://127.0.0.1:{proxied_gateway.gunicorn.port}/api/health"
    with urllib.request.urlopen(urllib.request.Request(
            direct, headers={"X-Request-ID": chosen})) as answer:
        assert answer.headers["X-Request-ID"] == chosen
    other = raw_request(proxied_gateway.gunicorn.port,
                        get(b"/api/health", f"X-Request-ID: {chosen}\r\n".encode()),
                        source="127.0.0.2")
    assert other.status == 200 and other.headers["x-request-id"] != chosen


@pytest.mark.parametrize("method, path, meant", [
    ("POST", "/api/ocr/", "/api/ocr"), ("GET", "/api/docs/", "/api/docs"),
    ("GET", "/api/models/", "/api/models")])
def test_a_trailing_slash_gets_a_404_that_names_the_right_path(proxied_gateway, method, path,
                                                              meant):
    response = requests.request(method, proxied_gateway.proxy.url + path, data=b"x" * 300_000,
                                headers={"Content-Type": "image/png"})
    assert response.status_code == 404
    assert response.json()["error"] == {
        "code": "not_found", "message": f"There is no page at {path}: did you mean {meant}?"}


def test_an_unknown_path_says_where_the_paths_are_listed(proxied_gateway):
    response = requests.get(proxied_gateway.proxy.url + "/api/nothing")
    assert response.json()["error"]["message"] == (
        "There is no page at /api/nothing: the API's paths are listed at /api/docs.")
    assert json.loads(response.content)["request_id"] == response.headers["X-Request-ID"]
