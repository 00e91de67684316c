"""The demo page at / and the staff-session authentication of POST /api/ocr that it uses
(Django test client; the browser tests are in test_browser.py)."""

import pytest
from django.contrib.auth.models import User
from django.test import Client

from ocr_api.models import ApiKey, OcrRequest

from tests.helpers import IMAGES

pytestmark = pytest.mark.django_db
NOT_AN_IMAGE = b"plain text: refused with 415, after authentication and permission"


def session_client(staff: bool = True) -> Client:
    """A browser-like client (CSRF enforced) logged in as a staff or a plain user."""
    client = Client(enforce_csrf_checks=True)
    make = User.objects.create_superuser if staff else User.objects.create_user
    client.force_login(make("staff" if staff else "user", "u@example.com", "pw-123-long"))
    client.get("/")                                   # sets the csrftoken cookie
    return client


def csrf_header(client: Client) -> dict:
    return {"HTTP_X_CSRFTOKEN": client.cookies["csrftoken"].value}


def send(client: Client, **extra):
    return client.post("/api/ocr", data=NOT_AN_IMAGE, content_type="image/png", **extra)


def test_demo_page_for_anyone():
    client = Client()
    response = client.get("/")
    assert response.status_code == 200
    html = response.content.decode()
    # Images and PDFs; on a phone the picker offers the camera among its sources.
    assert '<input id="image-input" type="file" accept="image/*,application/pdf">' in html
    assert 'data-api-url="/api/ocr"' in html
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in html
    assert '/static/ocr_api/demo.js' in html and '/static/ocr_api/demo.css' in html
    assert 'value="session"' not in html               # no staff session to offer
    assert response.context["csrf_token"] and "csrftoken" in response.cookies
    assert client.post("/").status_code == 405


def test_demo_page_offers_the_staff_session():
    html = session_client().get("/").content.decode()
    assert 'value="session"' in html and 'data-staff="staff"' in html
    assert 'value="session"' not in session_client(staff=False).get("/").content.decode()


def test_staff_session_with_csrf_token_is_accepted_and_audited_with_its_user():
    client = session_client()
    response = send(client, **csrf_header(client))
    assert response.status_code == 415                 # authenticated: the image was judged
    row = OcrRequest.objects.get(request_id=response.json()["request_id"])
    assert (row.api_key, row.user.username, row.error_code) == (
        None, "staff", "unsupported_media_type")


def test_staff_session_without_csrf_token_is_refused():
    response = send(session_client())
    assert response.status_code == 403
    body = response.json()
    assert body["error"]["code"] == "permission_denied"
    assert "CSRF" in body["error"]["message"]


def test_session_of_a_non_staff_user_is_refused():
    client = session_client(staff=False)
    response = send(client, **csrf_header(client))
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "permission_denied"
    # Who was refused is on the row too.
    row = OcrRequest.objects.get(request_id=response.json()["request_id"])
    assert (row.api_key, row.user.username, row.http_status) == (None, "user", 403)


def test_anonymous_request_keeps_the_api_key_challenge():
    response = send(Client(enforce_csrf_checks=True))
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Api-Key"
    assert response.json()["error"]["code"] == "not_authenticated"


def test_a_key_is_judged_alone_even_with_a_staff_session():
    row, key = ApiKey.objects.create_key(name="revoked")
    row.revoked = True
    row.save()
    client = session_client()
    response = send(client, HTTP_AUTHORIZATION=f"Api-Key {key}", **csrf_header(client))
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "authentication_failed"


@pytest.mark.triton
def test_models_takes_the_credentials_ocr_takes(live_triton):
    client = session_client()
    response = client.get("/api/models", **csrf_header(client))
    assert response.status_code == 200
    assert "ensemble_ocr" in {model["name"] for model in response.json()["models"]}
    # Refused the same way as on /api/ocr: 403 for a signed-in non-staff user, 401 anonymous.
    plain = session_client(staff=False)
    refused = plain.get("/api/models", **csrf_header(plain))
    assert (refused.status_code, refused.json()["error"]["code"]) == (403, "permission_denied")
    assert send(plain, **csrf_header(plain)).status_code == 403
    assert Client().get("/api/models").status_code == 401


@pytest.mark.triton
def test_staff_session_gets_boxes(live_triton):
    client = session_client()
    with open(IMAGES / "korean.png", "rb") as handle:
        response = client.post("/api/ocr", {"image": handle}, **csrf_header(client))
    assert response.status_code == 200, response.json()
    body = response.json()
    assert len(body["boxes"]) == 6
    row = OcrRequest.objects.get(request_id=body["request_id"])
    assert (row.api_key, row.http_status, row.box_count) == (None, 200, 6)
