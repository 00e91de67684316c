"""Content negotiation on every endpoint (``ocr_api.formats.renderers.FormatNegotiation``): a
format or ``Accept`` header the endpoint cannot answer is 406 ``not_acceptable`` naming what it
offers, never a bare 404; what it can answer is answered."""

import pytest

pytestmark = pytest.mark.django_db

JSON_ONLY = "use one of: json."


@pytest.mark.parametrize("path, method", [("/api/ocr/batch?format=text", "post"),
                                          ("/api/ocr/batch?format=pdf", "post"),
                                          ("/api/models?format=xml", "get"),
                                          ("/api/health?format=hocr", "get")])
def test_a_format_an_endpoint_lacks_is_406_naming_its_formats(api_client, path, method):
    response = getattr(api_client, method)(path)
    assert response.status_code == 406, response.content
    fmt = path.split("format=")[1]
    assert response.json()["error"] == {
        "code": "not_acceptable",
        "message": f"format {fmt!r} is not available here; {JSON_ONLY}"}


def test_an_unknown_format_on_api_ocr_lists_its_four(api_client):
    response = api_client.post("/api/ocr?format=docx")
    assert response.status_code == 406
    assert response.json()["error"]["message"] == (
        "format 'docx' is not available here; use one of: json, text, hocr, pdf.")


@pytest.mark.parametrize("path, method, offered", [
    ("/api/ocr", "post", "application/json, text/plain, application/xhtml+xml, "
                         "application/pdf"),
    ("/api/models", "get", "application/json")])
def test_an_accept_header_nothing_matches_is_406_naming_the_types(api_client, path, method,
                                                                   offered):
    response = getattr(api_client, method)(path, HTTP_ACCEPT="image/png")
    assert response.status_code == 406
    assert response["Content-Type"] == "application/json"
    assert response.json()["error"] == {
        "code": "not_acceptable",
        "message": f"Accept 'image/png' matches nothing this endpoint answers; it answers: "
                   f"{offered} (or ?format=)."}


def test_what_an_endpoint_offers_is_answered(api_client):
    assert api_client.get("/api/health?format=json").status_code == 200
    assert api_client.get("/api/health", HTTP_ACCEPT="application/json").status_code == 200
