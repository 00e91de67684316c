"""A refusal given before the body is read never breaks a connection or reaches a neighbour:
through nginx + gunicorn + Triton, uploads of 200 KB-20 MB refused from their headers (junk
key, no key, a key over its rate, a content type nothing reads, a body over the limit) from
one address, interleaved with valid requests from another. Before gateway.unread_body, about a
third of such refusals under the limit came back as nginx's 502 (gunicorn reset the
connection with the body unread)."""

import http.client
import json
import threading
import time
from collections import Counter

import pytest
import tritonclient.grpc as grpcclient
from ocr_contract.tensors import ENSEMBLE

from tests.helpers import IMAGES

from .stack import start_proxied_gateway

CAP = 4 * 1024 * 1024                   # OCR_MAX_UPLOAD_BYTES here: 5 and 20 MB are over it
SIZES = (200_000, 1_000_000, 4_000_000, 6_000_000)
#: The largest upload, sent by the kinds that do not need every size.
LARGEST = 20_000_000
REFUSER, NEIGHBOUR = "127.0.0.31", "127.0.0.32"
VALID = (IMAGES / "img_1.jpg").read_bytes()
#: Text read, so that Triton's response cache answers the repeats (it keeps no empty output).
VALID_PATH = "/api/ocr?long_side=640"

pytestmark = [pytest.mark.triton, pytest.mark.slow]


@pytest.fixture(scope="module")
def stack(tmp_path_factory, triton):
    stack = start_proxied_gateway(tmp_path_factory.mktemp("refusals"), triton.grpc_url,
                                  OCR_MAX_UPLOAD_BYTES=str(CAP),
                                  OCR_UNAUTHENTICATED_RATE_PER_MINUTE="20")
    yield stack
    stack.stop()


def refusals(stack) -> list[tuple[str, bytes, dict]]:
    """(what, body, headers) of every kind of early refusal, at every size."""
    png = b"\x89PNG\r\n\x1a\n"
    kinds = []
    for size in SIZES:
        body = png + bytes(size - len(png))
        kinds += [
            ("junk key", body, {"Authorization": "Api-Key junk.not-a-key",
                                "Content-Type": "image/png"}),
            ("no key", body, {"Content-Type": "image/png"}),
            ("key over its rate", body, {"Authorization": f"Api-Key {stack.keys['rate1']}",
                                         "Content-Type": "image/png"}),
            ("a ZIP", b"PK\x03\x04" + body[4:], {"Authorization": f"Api-Key {stack.key}",
                                                  "Content-Type": "application/zip"}),
        ]
    largest = png + bytes(LARGEST - len(png))
    kinds += [("junk key", largest, kinds[0][2]), ("a ZIP", largest, kinds[3][2])]
    return kinds


def post(conn: http.client.HTTPConnection, path: str, body: bytes, headers: dict):
    conn.request("POST", path, body=body, headers=headers)
    response = conn.getresponse()
    return response.status, response.read()


def ensemble_successes(triton, at_least: int = 0, timeout_s: float = 10) -> int:
    """The ensemble's successful inferences (response-cache hits included), once at least
    ``at_least`` (Triton counts a request just after it has answered it) or after
    ``timeout_s``."""
    client = grpcclient.InferenceServerClient(triton.grpc_url)
    deadline = time.monotonic() + timeout_s
    while True:
        stats = client.get_inference_statistics(ENSEMBLE, as_json=True)["model_stats"]
        count = sum(int(s["inference_stats"]["success"].get("count", 0)) for s in stats)
        if count >= at_least or time.monotonic() > deadline:
            return count
        time.sleep(0.1)


def test_refused_uploads_never_cost_anyone_a_5xx(stack, triton):
    kinds = refusals(stack)
    refused, valid = Counter(), Counter()
    lock = threading.Lock()
    successes_before = ensemble_successes(triton)

    def refuser(offset: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", stack.port, timeout=120,
                                          source_address=(REFUSER, 0))
        for what, body, headers in kinds[offset:] + kinds[:offset]:
            status, answer = post(conn, "/api/ocr", body, headers)
            code = json.loads(answer)["error"]["code"] if status >= 400 else ""
            with lock:
                refused[(what, status, code)] += 1
        conn.close()

    def interleaved() -> None:
        # The pattern: three refused uploads, then one valid request, twelve times.
        bad = http.client.HTTPConnection("127.0.0.1", stack.port, timeout=120,
                                         source_address=(REFUSER, 0))
        good = http.client.HTTPConnection("127.0.0.1", stack.port, timeout=120,
                                          source_address=(NEIGHBOUR, 0))
        for round_ in range(12):
            for what, body, headers in (kinds * 2)[round_ * 3:round_ * 3 + 3]:
                status, answer = post(bad, "/api/ocr", body, headers)
                code = json.loads(answer)["error"]["code"] if status >= 400 else ""
                with lock:
                    refused[(what, status, code)] += 1
            status, answer = post(good, VALID_PATH, VALID, {
                "Authorization": f"Api-Key {stack.key}", "Content-Type": "image/jpeg"})
            with lock:
                valid[status] += 1
        bad.close()
        good.close()

    threads = [threading.Thread(target=refuser, args=(7,)),
               threading.Thread(target=interleaved)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert valid == {200: 12}
    statuses = Counter(status for (_, status, _), n in refused.items() for _ in range(n))
    assert sum(statuses.values()) == len(kinds) + 36
    assert not {s for s in statuses if s >= 500}, refused
    # Every refusal is the one its kind gets (401 turns 429 past the address's rate).
    expected = {"junk key": {(401, "authentication_failed"), (429, "rate_limited")},
                "no key": {(401, "not_authenticated"), (429, "rate_limited")},
                # (its one image a minute is read: zeros after a PNG signature)
                "key over its rate": {(400, "image_undecodable"), (429, "rate_limited"),
                                      (413, "payload_too_large")},
                "a ZIP": {(415, "unsupported_media_type"), (413, "payload_too_large")}}
    assert all((status, code) in expected[what] for what, status, code in refused), refused
    # A body over the limit is refused as such, whoever sends it with a valid key.
    assert refused[("a ZIP", 413, "payload_too_large")] > 0
    # Each valid POST reached Triton once: nginx never sent one again.
    assert ensemble_successes(triton, successes_before + 12) - successes_before == 12
    (rows,), = stack.query("SELECT COUNT(*) FROM ocr_api_ocrrequest WHERE http_status = 200")
    assert rows == 12
