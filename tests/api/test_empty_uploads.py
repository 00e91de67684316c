"""Nothing uploaded (an empty body, a zero-byte file) is 400 ``missing_image`` on every route
that takes uploads, never 415 "not an image" (nor a 500)."""

import io

import pytest

from tests.helpers import IMAGES

pytestmark = pytest.mark.django_db

EMPTY = {"code": "missing_image",
         "message": "The upload is empty (0 bytes): send the image or document itself."}


@pytest.mark.parametrize("path", ["/api/ocr", "/api/jobs"])
@pytest.mark.parametrize("content_type", ["application/pdf", "image/png",
                                          "application/octet-stream"])
def test_an_empty_raw_body_is_missing_image(api_client, path, content_type):
    response = api_client.post(path, b"", content_type=content_type)
    assert (response.status_code, response.json()["error"]) == (400, EMPTY)


@pytest.mark.parametrize("path", ["/api/ocr", "/api/jobs"])
def test_a_zero_byte_file_is_missing_image(api_client, path):
    response = api_client.post(path, {"image": io.BytesIO(b"")}, format="multipart")
    assert (response.status_code, response.json()["error"]) == (400, EMPTY)


def test_a_zero_byte_file_in_a_batch_is_that_items_missing_image(api_client, live_triton):
    png = (IMAGES / "korean.png").read_bytes()
    response = api_client.post("/api/ocr/batch?long_side=64&recognize=false",
                               {"images": [io.BytesIO(b""), io.BytesIO(png)]},
                               format="multipart")
    assert response.status_code == 200
    first, second = response.json()["results"]
    assert (first["status"], first["error"]) == (400, EMPTY)
    assert second["status"] == 200
