"""Errors that say what to do: an unknown Host, a key sent the wrong way, a content type the
endpoint does not read. Each keeps its stable code and says what to send or set instead."""

from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client

from ocr_api.models import OcrRequest

from tests.helpers import IMAGES

pytestmark = pytest.mark.django_db
PNG = (IMAGES / "korean.png").read_bytes()
EXPECTED = "Send the API key as 'Authorization: Api-Key <key>'."


def error(response) -> dict:
    return response.json()["error"]


def test_an_unknown_host_names_itself_and_the_setting_that_allows_it():
    response = Client().get("/api/health", HTTP_HOST="192.168.1.20:8000")
    assert response.status_code == 400
    assert error(response) == {
        "code": "malformed_request",
        "message": "This server does not answer to the host name '192.168.1.20': its operator "
                   "must add '192.168.1.20' to the DJANGO_ALLOWED_HOSTS setting "
                   "(comma-separated), or call it by a name listed there."}
    assert "192.168.1.20" not in settings.ALLOWED_HOSTS
    garbage = Client().get("/api/health", HTTP_HOST="bad host!")
    assert (garbage.status_code, error(garbage)["message"]) == (
        400, "The Host header 'bad host!' is not a valid host name.")
    # The README's paragraph for phones and other computers says the same.
    readme = (Path(settings.BASE_DIR) / "README.md").read_text()
    assert "DJANGO_ALLOWED_HOSTS=localhost,127.0.0.1,192.168.1.20 make serve" in readme


@pytest.mark.parametrize(("headers", "said"), [
    ({}, "No API key: send it as 'Authorization: Api-Key <key>'."),
    ({"HTTP_AUTHORIZATION": "{key}"},
     f"The Authorization header has no scheme (a bare key). {EXPECTED}"),
    ({"HTTP_AUTHORIZATION": "Bearer {key}"},
     f"The Authorization header uses the 'Bearer' scheme. {EXPECTED}"),
    ({"HTTP_AUTHORIZATION": "Api-Key: {key}"},
     f"The Authorization value starts 'Api-Key:': no colon after the scheme. {EXPECTED}"),
    ({"HTTP_AUTHORIZATION": "Api-Key "},
     f"The Authorization header has the Api-Key scheme but no key. {EXPECTED}"),
    ({"HTTP_AUTHORIZATION": "Token abc {key}"},
     f"The Authorization header uses the 'Token' scheme. {EXPECTED}"),
    ({"HTTP_X_API_KEY": "{key}"}, f"The X-Api-Key header is not read. {EXPECTED}"),
])
def test_a_key_sent_the_wrong_way_is_told_the_expected_form(api_key, headers, said):
    key = api_key[1]
    response = Client().post("/api/ocr", data=PNG, content_type="image/png",
                             **{name: value.format(key=key) for name, value in headers.items()})
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Api-Key"
    assert error(response) == {"code": "not_authenticated", "message": said}
    assert key not in response.content.decode()


SINGLE = ("send the image or PDF as multipart/form-data field 'image', or as the raw body "
          "with its image/* or application/pdf content type (or application/octet-stream); "
          "formats: JPEG, PNG")


@pytest.mark.parametrize(("path", "content_type", "body", "said"), [
    ("/api/ocr", "application/json", b'{"image": "..."}',
     f"Content type 'application/json' is not accepted: {SINGLE}"),
    ("/api/ocr", "text/csv", b"a,b\n",
     f"Content type 'text/csv' is not accepted: {SINGLE}"),
    ("/api/ocr", "application/x-www-form-urlencoded", PNG,
     f"Content type 'application/x-www-form-urlencoded' is not accepted: {SINGLE}"),
    ("/api/ocr/batch", "image/png", PNG,
     "Content type 'image/png' is not accepted: send the images as multipart/form-data, each "
     "in a field 'images' (one image or PDF alone can also go to /api/ocr as the raw body)."),
])
def test_a_content_type_the_endpoint_does_not_read_is_told_what_it_reads(
        api_client, path, content_type, body, said):
    response = api_client.post(path, data=body, content_type=content_type)
    assert response.status_code == 415
    assert error(response)["code"] == "unsupported_media_type"
    assert error(response)["message"].startswith(said)
    if content_type == "application/x-www-form-urlencoded":
        assert error(response)["message"].endswith(
            "With curl: -F image=@photo.jpg, or --data-binary @photo.jpg -H 'Content-Type: "
            "image/jpeg' (--data-binary alone sends a form encoding).")
    row = OcrRequest.objects.get(request_id=response.json()["request_id"])
    assert (row.http_status, row.error_code) == (415, "unsupported_media_type")
