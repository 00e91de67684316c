"""A corpus of bad uploads: each gets its documented status and code, nothing is lost, the
server keeps serving (real embedded Triton)."""

import io
import zipfile

import pytest
from PIL import Image

from ocr_api.models import OcrRequest, RefusalCount

from tests.helpers import DATA, IMAGES, reference_boxes
from tests.image_factory import encode, png_header_only
from tests.parity import PARITY_F, parity_f

pytestmark = [pytest.mark.django_db, pytest.mark.triton]

GOOD_PNG = (IMAGES / "korean.png").read_bytes()
GOOD_JPEG = (IMAGES / "img_1.jpg").read_bytes()


def _zip_bytes() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("image.png", GOOD_PNG)
    return buffer.getvalue()


def _corrupt_png() -> bytes:
    # Flip bytes inside the compressed pixel data: the header is fine, the decode is not.
    data = bytearray(GOOD_PNG)
    middle = len(data) // 2
    data[middle:middle + 2000] = bytes(b ^ 0x5A for b in data[middle:middle + 2000])
    return bytes(data)


def raw(data: bytes, content_type: str = "image/png", query: str = ""):
    """A raw-body request."""
    return {"kind": "raw", "data": data, "content_type": content_type, "query": query}


def form(data: bytes | None, query: str = "", **fields):
    """A multipart request with ``data`` as field ``image`` (None: no image field)."""
    return {"kind": "form", "data": data, "query": query, "fields": fields}


# (case name, request, expected status, expected code, expected field or None)
CORPUS = [
    ("no image field", form(None, note="hello"), 400, "missing_image", None),
    ("empty raw body", raw(b""), 400, "missing_image", None),
    ("empty file", form(b""), 400, "missing_image", None),
    ("plain text", form(b"just some words\n"), 415, "unsupported_media_type", None),
    ("broken pdf", form(b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\n%%EOF"), 400,
     "document_undecodable", None),
    ("svg", form(b'<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>'), 415,
     "unsupported_media_type", None),
    ("html", form(b"<!doctype html><html><body>hi</body></html>"), 415,
     "unsupported_media_type", None),
    ("zip of a png", form(_zip_bytes()), 415, "unsupported_media_type", None),
    ("json body", raw(b'{"image": "aGVsbG8="}', "application/json"), 415,
     "unsupported_media_type", None),
    ("text/plain body", raw(GOOD_PNG, "text/plain"), 415, "unsupported_media_type", None),
    ("truncated.jpg", form((DATA / "bad" / "truncated.jpg").read_bytes()), 400,
     "image_undecodable", None),
    ("half a jpeg", raw(GOOD_JPEG[: len(GOOD_JPEG) // 2], "image/jpeg"), 400,
     "image_undecodable", None),
    ("corrupt png pixels", form(_corrupt_png()), 400, "image_undecodable", None),
    ("jpeg magic only", form(b"\xff\xd8\xff"), 400, "image_undecodable", None),
    ("png signature only", form(b"\x89PNG\r\n\x1a\n"), 400, "image_undecodable", None),
    ("gif header only", form(b"GIF89a"), 400, "image_undecodable", None),
    ("webp header then junk", form(b"RIFF\x10\x00\x00\x00WEBPVP8 " + b"\x00" * 8), 400,
     "image_undecodable", None),
    ("bomb 30000x30000", form(png_header_only(30000, 30000)), 413, "image_too_large", None),
    ("42 megapixels", form(png_header_only(7000, 6000)), 413, "image_too_large", None),
    ("1x1 png", form(encode(Image.new("RGB", (1, 1)))), 400, "image_too_small", None),
    ("4x100 png", form(encode(Image.new("RGB", (4, 100)))), 400, "image_too_small", None),
    ("text_threshold nan", form(GOOD_PNG, text_threshold="nan"), 400, "invalid_parameter",
     "text_threshold"),
    ("text_threshold inf", form(GOOD_PNG, query="text_threshold=inf"), 400,
     "invalid_parameter", "text_threshold"),
    ("text_threshold 1", form(GOOD_PNG, text_threshold="1"), 400, "invalid_parameter",
     "text_threshold"),
    ("text_threshold 0", form(GOOD_PNG, text_threshold="0"), 400, "invalid_parameter",
     "text_threshold"),
    ("link_threshold negative", form(GOOD_PNG, link_threshold="-0.5"), 400,
     "invalid_parameter", "link_threshold"),
    ("low_text string", form(GOOD_PNG, low_text="abc"), 400, "invalid_parameter", "low_text"),
    ("long_side too small", form(GOOD_PNG, long_side="10"), 400, "invalid_parameter",
     "long_side"),
    ("long_side too big", form(GOOD_PNG, query="long_side=99999"), 400, "invalid_parameter",
     "long_side"),
    ("long_side fraction", form(GOOD_PNG, long_side="12.5"), 400, "invalid_parameter",
     "long_side"),
    ("refine maybe", form(GOOD_PNG, refine="maybe"), 400, "invalid_parameter", "refine"),
    ("unknown parameter", form(GOOD_PNG, text_treshold="0.5"), 400, "invalid_parameter",
     "text_treshold"),
    # The answer's format is negotiated from the query string and Accept only: a form field
    # was silently ignored (JSON came back to a client asking for a PDF).
    ("format in the form", form(GOOD_PNG, format="pdf"), 400, "invalid_parameter", "format"),
    ("raw body with bad query", raw(GOOD_PNG, query="low_text=2"), 400, "invalid_parameter",
     "low_text"),
    ("long_side given twice", raw(GOOD_PNG, query="long_side=640&long_side=64"), 400,
     "invalid_parameter", "long_side"),
    ("parameter in query and form", form(GOOD_PNG, query="low_text=0.3", low_text="0.5"), 400,
     "invalid_parameter", "low_text"),
    ("underscored number", form(GOOD_PNG, long_side="1_280"), 400, "invalid_parameter",
     "long_side"),
    ("full-width digits", form(GOOD_PNG, text_threshold="０.５"), 400, "invalid_parameter",
     "text_threshold"),
    ("long_side with a decimal point", form(GOOD_PNG, long_side="640.0"), 400,
     "invalid_parameter", "long_side"),
    ("multipart without boundary", raw(b"--xyz\r\ngarbage", "multipart/form-data"), 400,
     "malformed_request", None),
    ("multipart with no parts", raw(b"--xyz\r\ngarbage without headers",
                                    "multipart/form-data; boundary=xyz"), 400,
     "missing_image", None),
]


def send(client, case):
    url = "/api/ocr" + (f"?{case['query']}" if case["query"] else "")
    if case["kind"] == "raw":
        return client.post(url, data=case["data"], content_type=case["content_type"])
    payload = dict(case["fields"])
    if case["data"] is not None:
        payload["image"] = io.BytesIO(case["data"])
        payload["image"].name = "upload.bin"
    return client.post(url, payload, format="multipart")


def test_corpus_gets_documented_errors_and_every_request_is_audited(api_client, live_triton,
                                                                     settings):
    assert len(CORPUS) >= 30
    mismatches, expected_rows = [], {}
    for name, case, status, code, field in CORPUS:
        response = send(api_client, case)
        body = response.json()
        got = (response.status_code, body.get("error", {}).get("code"),
               body.get("error", {}).get("field"))
        if got != (status, code, field):
            mismatches.append((name, got, body))
        assert "Traceback" not in response.content.decode()
        expected_rows[body["request_id"]] = (status, code)

    # Size caps, with a small limit so the test sends little.
    settings.OCR_MAX_UPLOAD_BYTES = 10_000
    for name, case in (("raw body over the cap", raw(GOOD_JPEG, "image/jpeg")),
                       ("multipart file over the cap", form(GOOD_JPEG))):
        response = send(api_client, case)
        body = response.json()
        if (response.status_code, body["error"]["code"]) != (413, "payload_too_large"):
            mismatches.append((name, response.status_code, body))
        expected_rows[body["request_id"]] = (413, "payload_too_large")
    settings.OCR_MAX_UPLOAD_BYTES = 20 * 1024 * 1024

    assert not mismatches, mismatches

    # The server still answers a good image correctly...
    good = send(api_client, form(GOOD_PNG)).json()
    assert parity_f([b["points"] for b in good["boxes"]],
                    reference_boxes(1280)["korean.png"]["boxes"]) >= PARITY_F
    expected_rows[good["request_id"]] = (200, "")

    # ...and the audit log has exactly one row per request, with its status and code.
    rows = {r.request_id: (r.http_status, r.error_code) for r in OcrRequest.objects.all()}
    assert rows == expected_rows


def _tiff_with_a_broken_second_page() -> bytes:
    """A valid first page, then an IFD chain whose next entry points at garbage."""
    pages = [Image.new("RGB", (64, 64), "white"), Image.new("RGB", (64, 64), "black")]
    data = bytearray(encode(pages[0], "TIFF", save_all=True, append_images=pages[1:]))
    second_ifd = int.from_bytes(data[4:8], "little")
    # the first IFD's "next IFD" offset follows its entries: point it past the end of the file
    entries = int.from_bytes(data[second_ifd:second_ifd + 2], "little")
    next_offset_at = second_ifd + 2 + 12 * entries
    data[next_offset_at:next_offset_at + 4] = (len(data) + 4096).to_bytes(4, "little")
    return bytes(data)


def test_refusals_before_authentication_and_parsing_still_answer_and_audit(anonymous_client,
                                                                           api_key):
    huge = {"CONTENT_LENGTH": str(10**9)}
    anonymous_client.credentials(HTTP_AUTHORIZATION="Api-Key bogus.key")
    bogus = anonymous_client.generic("POST", "/api/ocr", data=b"x", content_type="image/png",
                                     **huge)
    assert (bogus.status_code, bogus.json()["error"]["code"]) == (401, "authentication_failed")
    anonymous_client.credentials(HTTP_AUTHORIZATION=f"Api-Key {api_key[1]}")
    big = anonymous_client.generic("POST", "/api/ocr", data=b"x", content_type="image/png",
                                   **huge)
    assert (big.status_code, big.json()["error"]["code"]) == (413, "payload_too_large")
    rows = dict(OcrRequest.objects.values_list("request_id", "error_code"))
    assert rows == {big.json()["request_id"]: "payload_too_large"}
    # The request that never authenticated is counted, not written row by row.
    assert list(RefusalCount.objects.values_list("http_status", "error_code", "count")) == \
        [(401, "authentication_failed", 1)]


def test_more_parts_than_django_allows_is_a_400(api_client):
    files = [io.BytesIO(b"x") for _ in range(101)]
    for index, handle in enumerate(files):
        handle.name = f"{index}.txt"
    for url, field in (("/api/ocr", "image"), ("/api/ocr/batch", "images")):
        response = api_client.post(url, {field: files}, format="multipart")
        assert (response.status_code, response.json()["error"]["code"]) == \
            (400, "malformed_request"), url
        for handle in files:
            handle.seek(0)


def test_a_broken_later_tiff_page_does_not_break_the_header_probe(api_client, live_triton):
    response = api_client.post("/api/ocr", data=_tiff_with_a_broken_second_page(),
                               content_type="image/tiff")
    assert response.status_code == 200                # only the first page is looked at
    assert response.json()["image"] == {"width": 64, "height": 64, "format": "TIFF", "angle": 0}


def test_wrong_method_and_unknown_urls_use_the_error_shape(api_client):
    response = api_client.get("/api/ocr")
    assert (response.status_code, response.json()["error"]["code"]) == (405,
                                                                         "method_not_allowed")
    response = api_client.get("/api/nothing-here")
    assert (response.status_code, response.json()["error"]["code"]) == (404, "not_found")
    assert response.json()["request_id"] == response["X-Request-ID"]
