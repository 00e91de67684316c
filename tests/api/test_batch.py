"""POST /api/ocr/batch against the real embedded Triton."""

import io

import pytest

from ocr_api.models import ApiKey, OcrRequest

from tests.helpers import DATA, IMAGES
from tests.api.test_keys_and_throttling import client_for

pytestmark = [pytest.mark.django_db, pytest.mark.triton]


def upload(name: str, data: bytes) -> io.BytesIO:
    handle = io.BytesIO(data)
    handle.name = name
    return handle


def batch(client, files, query=""):
    return client.post("/api/ocr/batch" + query, {"images": files}, format="multipart")


def test_results_come_in_order_each_with_its_own_status(api_client, live_triton):
    korean = (IMAGES / "korean.png").read_bytes()
    files = [upload("a.png", korean),
             upload("b.jpg", (DATA / "bad" / "truncated.jpg").read_bytes()),
             upload("c.jpg", (IMAGES / "img_1.jpg").read_bytes()),
             upload("d.txt", b"not an image"),
             upload("e.jpg", (IMAGES / "idcard2_webp_named.jpg").read_bytes())]
    response = batch(api_client, files)
    assert response.status_code == 200
    body = response.json()
    results = body["results"]
    assert [(r["index"], r["status"]) for r in results] == \
        [(0, 200), (1, 400), (2, 200), (3, 415), (4, 200)]
    assert results[1]["error"]["code"] == "image_undecodable"
    assert results[3]["error"]["code"] == "unsupported_media_type"
    assert [len(results[i]["boxes"]) for i in (0, 2, 4)] == [6, 7, 22]
    assert results[4]["image"] == {"width": 1000, "height": 630, "format": "WEBP", "angle": 0}
    single = api_client.post("/api/ocr", data=korean, content_type="image/png").json()
    assert results[0]["boxes"] == single["boxes"]

    rows = OcrRequest.objects.filter(request_id=body["request_id"]).order_by("id")
    assert [(r.endpoint, r.http_status, r.error_code, r.box_count) for r in rows] == [
        ("ocr_batch", 200, "", 6), ("ocr_batch", 400, "image_undecodable", None),
        ("ocr_batch", 200, "", 7), ("ocr_batch", 415, "unsupported_media_type", None),
        ("ocr_batch", 200, "", 22)]


def test_parameters_apply_to_every_image(api_client, live_triton):
    files = [upload(f"{i}.png", (IMAGES / "example.png").read_bytes()) for i in range(2)]
    strict = batch(api_client, files, "?text_threshold=0.95").json()["results"]
    assert len(strict[0]["boxes"]) == len(strict[1]["boxes"]) < 41
    bad = batch(api_client, files, "?long_side=5")
    assert bad.status_code == 400 and bad.json()["error"]["field"] == "long_side"


def test_too_many_images_and_no_images(api_client, settings):
    settings.OCR_BATCH_MAX_IMAGES = 2
    response = batch(api_client, [upload(f"{i}.txt", b"x") for i in range(3)])
    assert (response.status_code, response.json()["error"]["code"]) == (400, "too_many_images")
    response = api_client.post("/api/ocr/batch", {"note": "no files"}, format="multipart")
    assert (response.status_code, response.json()["error"]["code"]) == (400, "missing_image")


def test_throttling_counts_images_not_requests():
    _, key = ApiKey.objects.create_key(name="batcher", rate_per_minute=3)
    client = client_for(key)
    never = batch(client, [upload(f"{i}.txt", b"x") for i in range(4)])
    assert (never.status_code, never.json()["error"]["code"]) == (400, "too_many_images")
    assert "at most 3 per minute" in never.json()["error"]["message"]
    accepted = batch(client, [upload(f"{i}.txt", b"x") for i in range(2)])
    assert [r["status"] for r in accepted.json()["results"]] == [415, 415]
    refused = batch(client, [upload(f"{i}.txt", b"x") for i in range(2)])   # 2 + 2 > 3
    assert (refused.status_code, refused.json()["error"]["code"]) == (429, "rate_limited")
    assert 1 <= int(refused["Retry-After"]) <= 60
    assert batch(client, [upload("one.txt", b"x")]).status_code == 200       # 2 + 1 = 3


def test_oversized_batches_are_refused_before_they_are_charged(settings):
    row, key = ApiKey.objects.create_key(name="quota", daily_quota=5)
    client = client_for(key)
    settings.OCR_BATCH_MAX_IMAGES = 8
    too_many = batch(client, [upload(f"{i}.txt", b"x") for i in range(9)])
    assert (too_many.status_code, too_many.json()["error"]["code"]) == (400, "too_many_images")
    settings.OCR_BATCH_MAX_UPLOAD_BYTES = 10_000
    too_big = batch(client, [upload(f"{i}.txt", b"x" * 6_000) for i in range(2)])
    assert (too_big.status_code, too_big.json()["error"]["code"]) == (413, "payload_too_large")
    over_quota = batch(client, [upload(f"{i}.txt", b"x") for i in range(6)])
    assert (over_quota.status_code, over_quota.json()["error"]["code"]) == \
        (400, "too_many_images")
    # None of the refused batches used the quota: five images still go through.
    assert batch(client, [upload(f"{i}.txt", b"x") for i in range(5)]).status_code == 200
