"""Limits that hold when 8 connections send at once, through nginx and gunicorn (2 workers x 4
threads, SQLite): the per-address rate without a valid key, a key's rate, a key's daily quota.
Each lets exactly its number through (the issue allows 10 % over; DRF's read-modify-write
window let 28-58 % over)."""

import http.client
import json
import threading
from collections import Counter

import pytest

from .conftest import UNAUTHENTICATED_RATE

pytestmark = pytest.mark.slow

CONNECTIONS = 8
NOT_AN_IMAGE = b"plain text, refused with 415 after the limits have counted it"


def send_at_once(port: int, headers_of, per_connection: int, source: str) -> Counter:
    """``CONNECTIONS`` threads, each on its own keep-alive connection from ``source``, start
    together and send ``per_connection`` POST /api/ocr back to back; ``headers_of(n)`` gives
    the headers of request n. Returns the count of each ``(status, error code)``."""
    results: Counter = Counter()
    lock = threading.Lock()
    start = threading.Barrier(CONNECTIONS)

    def connection(index: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60,
                                          source_address=(source, 0))
        start.wait()
        for step in range(per_connection):
            conn.request("POST", "/api/ocr", body=NOT_AN_IMAGE,
                         headers={"Content-Type": "image/png",
                                  **headers_of(index * per_connection + step)})
            response = conn.getresponse()
            body = response.read()
            code = json.loads(body)["error"]["code"] if response.status >= 400 else ""
            with lock:
                results[(response.status, code)] += 1
        conn.close()

    threads = [threading.Thread(target=connection, args=(n,)) for n in range(CONNECTIONS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def test_requests_without_a_valid_key_get_exactly_the_addresss_rate(proxied_gateway):
    results = send_at_once(proxied_gateway.port,
                           lambda n: {"Authorization": f"Api-Key junk{n:03d}.not-a-key"},
                           per_connection=10, source="127.0.0.21")
    assert results == {(401, "authentication_failed"): UNAUTHENTICATED_RATE,
                       (429, "rate_limited"): CONNECTIONS * 10 - UNAUTHENTICATED_RATE}


@pytest.mark.parametrize("key_name, refused, source", [
    ("rate30", "rate_limited", "127.0.0.22"),      # 30 images per minute
    ("quota30", "quota_exceeded", "127.0.0.23"),   # 30 images per day
])
def test_a_keys_rate_and_quota_let_exactly_their_images_through(proxied_gateway, key_name,
                                                               refused, source):
    key = proxied_gateway.keys[key_name]
    results = send_at_once(proxied_gateway.port, lambda n: {"Authorization": f"Api-Key {key}"},
                           per_connection=8, source=source)
    assert results == {(415, "unsupported_media_type"): 30,
                       (429, refused): CONNECTIONS * 8 - 30}
    # Every request has its audit row; the day's quota usage (none without a quota) equals
    # the charged ones: the refusals were given back.
    rows = dict(proxied_gateway.query(
        "SELECT r.error_code, COUNT(*) FROM ocr_api_ocrrequest r JOIN ocr_api_apikey k ON "
        "k.id = r.api_key_id WHERE k.name = ? GROUP BY r.error_code", key_name))
    assert rows == {"unsupported_media_type": 30, refused: CONNECTIONS * 8 - 30}
    usage = proxied_gateway.query(
        "SELECT images FROM ocr_api_quotausage JOIN ocr_api_apikey k ON k.id = api_key_id "
        "WHERE k.name = ?", key_name)
    assert usage == ([(30,)] if refused == "quota_exceeded" else [])
