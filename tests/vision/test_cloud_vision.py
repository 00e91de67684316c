"""Google's own Cloud Vision client (``google-cloud-vision``, REST transport) pointed at the
gateway: ``images:annotate`` and ``files:annotate`` answered from the real embedded Triton,
refusals raised as the client's typed exceptions. Served by pytest-django's live server (a
thread of this process), so the client talks real HTTP."""

from __future__ import annotations

import base64

import pytest
import requests
from google.api_core import exceptions as google_exceptions
from google.cloud import vision

from ocr_api.models import ApiKey
from ocr_pipeline.text_evaluation import load_text_truth, score_text
from tests.helpers import DATA, IMAGES
from tests.image_factory import images_pdf, text_page

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.triton]

TRUTH = {truth.image: truth for truth in load_text_truth(DATA / "recognition" / "text_gt.json")}


@pytest.fixture
def key(db):
    return ApiKey.objects.create_key(name="vision", rate_per_minute=10_000)[1]


@pytest.fixture
def client(live_server, live_triton, key):
    return vision.ImageAnnotatorClient(
        client_options={"api_endpoint": live_server.url, "api_key": key}, transport="rest")


def ocr(api_client_key: str, live_server, image: bytes, **fields) -> dict:
    """The gateway's own answer for ``image`` (words and their characters)."""
    response = requests.post(f"{live_server.url}/api/ocr", files={"image": image},
                             data={"detail": "characters", **fields},
                             headers={"Authorization": f"Api-Key {api_client_key}"}, timeout=300)
    assert response.status_code == 200, response.text
    return response.json()


def words_of(answer: dict) -> list[dict]:
    return [word for line in answer["lines"] for word in line["words"] if word["text"]]


def vertices(points) -> list[tuple[int, int]]:
    return [(round(x), round(y)) for x, y in points]


@pytest.mark.parametrize("name", ["english.png", "idcard.png"])
def test_document_text_detection_reads_what_api_ocr_reads(client, live_server, key, name):
    data = (IMAGES / name).read_bytes()
    response = client.document_text_detection(image=vision.Image(content=data))
    assert not response.error.message
    own = ocr(key, live_server, data)
    words = words_of(own)
    page = response.full_text_annotation.pages[0]
    assert (page.width, page.height) == (own["image"]["width"], own["image"]["height"])
    vision_words = [word for block in page.blocks for paragraph in block.paragraphs
                    for word in paragraph.words]
    # Every word: its text from its symbols, the gateway's box and confidence.
    assert ["".join(s.text for s in w.symbols) for w in vision_words] == [
        w["text"] for w in words]
    assert [[(v.x, v.y) for v in w.bounding_box.vertices] for w in vision_words] == [
        vertices(w["points"]) for w in words]
    assert all(len(w.bounding_box.vertices) == 4 for w in vision_words)
    # The gateway's confidence, 0-1 (Tesseract, which reads idcard.png's Turkish, may say 0).
    assert [w.confidence for w in vision_words] == pytest.approx(
        [w["confidence"] for w in words], abs=1e-6)
    assert all(0 <= w.confidence <= 1 for w in vision_words)
    symbols = [s for w in vision_words for s in w.symbols]
    assert [[(v.x, v.y) for v in s.bounding_box.vertices] for s in symbols] == [
        vertices(c["points"]) for w in words for c in w["characters"]]
    text = response.full_text_annotation.text
    assert text.endswith("\n") and text.split() == [w["text"] for w in words]
    assert score_text(text, TRUTH[name].words).f_score == pytest.approx(
        score_text(own["text"], TRUTH[name].words).f_score, abs=0.005)
    if name == "english.png":
        assert score_text(text, TRUTH[name].words).f_score >= 0.95
    # The annotations: the whole text first, then each word with its box.
    annotations = response.text_annotations
    assert annotations[0].description == text
    assert [a.description for a in annotations[1:]] == [w["text"] for w in words]
    assert [len(a.bounding_poly.vertices) for a in annotations] == [4] * (len(words) + 1)


def test_text_detection_with_a_language_hint(client):
    data = (IMAGES / "korean.png").read_bytes()
    response = client.text_detection(image=vision.Image(content=data),
                                     image_context={"language_hints": ["ko"]})
    first = response.text_annotations[0]
    assert first.locale == "ko"
    assert first.description.split() == ["서울", "평양", "Seoul", "Pyeongyang", "56Km", "205Km"]
    assert [a.description for a in response.text_annotations[1:]] == first.description.split()
    page = response.full_text_annotation.pages[0]
    assert [lang.language_code for lang in page.property.detected_languages] == ["ko"]
    breaks = [w.symbols[-1].property.detected_break.type_ for b in page.blocks
              for p in b.paragraphs for w in p.words]
    BreakType = vision.TextAnnotation.DetectedBreak.BreakType
    assert breaks == [BreakType.SPACE, BreakType.EOL_SURE_SPACE] * 3


def test_files_annotate_reads_each_page_of_a_pdf(client):
    pdf = images_pdf([text_page([["alpha", "beta"]]), text_page([["gamma", "delta"]])])
    request = vision.AnnotateFileRequest(
        input_config=vision.InputConfig(content=pdf, mime_type="application/pdf"),
        features=[vision.Feature(type_=vision.Feature.Type.DOCUMENT_TEXT_DETECTION)])
    response = client.batch_annotate_files(requests=[request])
    [file] = response.responses
    assert file.total_pages == 2
    assert [page.context.page_number for page in file.responses] == [1, 2]
    assert [page.full_text_annotation.text.split() for page in file.responses] == [
        ["alpha", "beta"], ["gamma", "delta"]]


def test_a_wrong_key_and_a_rate_limit_raise_the_clients_exceptions(live_server, live_triton):
    data = (IMAGES / "korean.png").read_bytes()
    wrong = vision.ImageAnnotatorClient(client_options={
        "api_endpoint": live_server.url, "api_key": "nope.nope"}, transport="rest")
    with pytest.raises(google_exceptions.Unauthorized) as raised:
        wrong.text_detection(image=vision.Image(content=data))
    assert raised.value.code == 401 and "Unknown or revoked API key." in raised.value.message
    slow = ApiKey.objects.create_key(name="slow", rate_per_minute=1)[1]
    client = vision.ImageAnnotatorClient(client_options={
        "api_endpoint": live_server.url, "api_key": slow}, transport="rest")
    client.text_detection(image=vision.Image(content=data), image_context={
        "language_hints": ["ko"]})
    with pytest.raises(google_exceptions.TooManyRequests) as raised:
        client.text_detection(image=vision.Image(content=data))
    assert raised.value.code == 429


def test_a_raw_rest_call_with_string_enums_and_a_key_in_the_query(live_server, live_triton,
                                                                   key):
    data = base64.b64encode((IMAGES / "korean.png").read_bytes()).decode()
    body = {"requests": [
        {"image": {"content": data}, "features": [{"type": "TEXT_DETECTION"}],
         "imageContext": {"languageHints": ["ko"]}},
        {"image": {"content": data}, "features": [{"type": "LABEL_DETECTION"}]},
        {"image": {"source": {"imageUri": "https://example.com/a.png"}},
         "features": [{"type": 11}]},
        {"image": {"content": base64.b64encode(b"not an image").decode()},
         "features": [{"type": 11}]},
    ]}
    response = requests.post(f"{live_server.url}/v1/images:annotate?key={key}", json=body,
                             timeout=300)
    assert response.status_code == 200, response.text
    first, label, uri, junk = response.json()["responses"]
    assert first["textAnnotations"][0]["description"].split()[:2] == ["서울", "평양"]
    assert label == {"error": {"code": 3, "message": (
        "features: LABEL_DETECTION not supported here; this service answers TEXT_DETECTION "
        "and DOCUMENT_TEXT_DETECTION.")}}
    assert uri["error"]["code"] == 3 and "fetches nothing" in uri["error"]["message"]
    assert junk["error"]["code"] == 3
    # One audit row per request of the batch, no text.
    rows = list(ApiKey.objects.get_from_key(key).requests.order_by("id").values_list(
        "endpoint", "http_status", "error_code"))
    assert rows == [("vision_images", 200, ""), ("vision_images", 400, "invalid_parameter"),
                    ("vision_images", 400, "invalid_parameter"),
                    ("vision_images", 415, "unsupported_media_type")]


def test_refusals_have_the_google_error_shape(live_server, live_triton, key):
    response = requests.post(f"{live_server.url}/v1/images:annotate", json={"requests": []},
                             headers={"x-goog-api-key": key}, timeout=30)
    assert response.status_code == 400
    assert response.json() == {"error": {
        "code": 400, "message": 'Send {"requests": [...]}, one per image.',
        "status": "INVALID_ARGUMENT"}}
    response = requests.post(f"{live_server.url}/v1/images:annotate", json={"requests": []},
                             timeout=30)
    assert response.status_code == 401
    assert response.json()["error"]["status"] == "UNAUTHENTICATED"


PNG = base64.b64encode((IMAGES / "korean.png").read_bytes()).decode()
TEXT = [{"type": "TEXT_DETECTION"}]


@pytest.mark.parametrize("item, message", [
    ({"image": {"content": PNG}, "features": TEXT, "imageContext": "en"}, "imageContext: "),
    ({"image": {"content": PNG}, "features": TEXT, "imageContext": {"languageHints": 5}},
     "imageContext: "),
    ({"image": {"content": PNG}, "features": [{"type": True}]}, "features: unknown type True"),
    ({"image": {"content": PNG}, "features": ["TEXT_DETECTION"]},
     "features: each is an object"),
])
def test_a_malformed_request_is_its_own_error(live_triton, item, message):
    """Never a 500, and the batch's other request is still read (Django's test client)."""
    from rest_framework.test import APIClient

    api = APIClient()
    api.credentials(HTTP_X_GOOG_API_KEY=ApiKey.objects.create_key(name="m")[1])
    response = api.post("/v1/images:annotate", {"requests": [
        item, {"image": {"content": PNG}, "features": TEXT}]}, format="json")
    assert response.status_code == 200, response.content
    bad, good = response.json()["responses"]
    assert bad["error"]["code"] == 3 and bad["error"]["message"].startswith(message)
    assert good["textAnnotations"][0]["description"]


def test_base64_as_proto3_json_allows_it_and_pages_once_each(live_triton, key):
    from rest_framework.test import APIClient

    api = APIClient()
    api.credentials(HTTP_X_GOOG_API_KEY=key)
    raw = (IMAGES / "korean.png").read_bytes()
    urlsafe = base64.urlsafe_b64encode(raw).decode().rstrip("=")
    wrapped = "\n".join(PNG[i:i + 76] for i in range(0, len(PNG), 76))
    response = api.post("/v1/images:annotate", {"requests": [
        {"image": {"content": urlsafe}, "features": TEXT},
        {"image": {"content": wrapped}, "features": TEXT}]}, format="json")
    first, second = response.json()["responses"]
    assert first["textAnnotations"] == second["textAnnotations"]
    pdf = base64.b64encode(images_pdf([text_page([["alpha"]])])).decode()
    response = api.post("/v1/files:annotate", {"requests": [
        {"inputConfig": {"content": pdf}, "features": TEXT, "pages": [1, 1]},
        {"inputConfig": {"content": pdf}, "features": TEXT, "pages": [True]}]}, format="json")
    duplicated, boolean = response.json()["responses"]
    assert duplicated["error"] == {"code": 3, "message": "pages: each page once."}
    assert boolean["error"]["message"].startswith("pages: a list of page numbers")


def test_other_methods_are_405_and_a_missing_key_says_where_it_goes(live_triton, key):
    from rest_framework.test import APIClient

    api = APIClient()
    response = api.get(f"/v1/images:annotate?key={key}")
    assert response.status_code == 405
    assert response.json()["error"]["status"] == "UNIMPLEMENTED"
    response = api.post("/v1/images:annotate", {"requests": []}, format="json",
                        HTTP_AUTHORIZATION=f"Api-Key {key}")
    assert response.status_code == 401
    assert response.json()["error"]["message"] == (
        "No API key: send it as the X-Goog-Api-Key header (the client's api_key option) or "
        "the key query parameter.")
