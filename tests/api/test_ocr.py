"""POST /api/ocr through a real embedded Triton: contract, auth, refusals, audit (box parity at
the served working size: test_served_parity.py)."""

import numpy as np
import pytest
import tritonclient.grpc as grpcclient

from ocr_api.models import OcrRequest
from ocr_inference.requests import build_inputs
from ocr_pipeline.boxes import ROW_PEAK_SHARE

from tests.helpers import DATA, IMAGES, reference_boxes

pytestmark = [pytest.mark.django_db, pytest.mark.triton]


def post_image(client, path, **params):
    with open(path, "rb") as handle:
        return client.post("/api/ocr", {"image": handle, **params}, format="multipart")


def box_points(body) -> list:
    return [box["points"] for box in body["boxes"]]


def test_response_follows_the_documented_contract(api_client, live_triton):
    response = post_image(api_client, IMAGES / "korean.png")
    body = response.json()
    assert set(body) == {"request_id", "model", "image", "text", "boxes", "lines", "paragraphs",
                         "timing_ms"}
    assert [line["boxes"] for line in body["lines"]] == [[0, 1], [2, 3], [4, 5]]
    # The names, their romanisation and the distances: past PARAGRAPH_SIZE_RATIO (73 against
    # 40 px) and PARAGRAPH_GAP once levelled.
    assert [p["lines"] for p in body["paragraphs"]] == [[0], [1], [2]]
    assert body["request_id"] == response["X-Request-ID"]
    assert body["model"] == {"name": "ensemble_ocr", "version": "1"}
    assert body["image"] == {"width": 629, "height": 420, "format": "PNG", "angle": 0}
    assert len(body["boxes"]) == 6
    for box in body["boxes"]:
        assert len(box["points"]) == 4 and all(len(p) == 2 for p in box["points"])
        assert all(0 <= x <= 629 and 0 <= y <= 420 for x, y in box["points"])
        assert 0.7 <= box["score"] <= 1.0
        assert set(box) == {"points", "score", "text", "text_score"}
    assert body["timing_ms"]["total"] >= body["timing_ms"]["inference"] > 0


def test_webp_named_jpg_is_sniffed_as_webp(api_client, live_triton):
    body = post_image(api_client, IMAGES / "idcard2_webp_named.jpg").json()
    assert body["image"]["format"] == "WEBP"
    assert len(body["boxes"]) == 22


def test_raw_image_body_gives_the_same_boxes_as_multipart(api_client, live_triton):
    data = (IMAGES / "img_1.jpg").read_bytes()
    raw = api_client.post("/api/ocr", data=data, content_type="image/jpeg")
    multipart = post_image(api_client, IMAGES / "img_1.jpg")
    assert raw.status_code == 200
    assert box_points(raw.json()) == box_points(multipart.json())


def test_parameters_reach_the_ensemble(api_client, live_triton):
    default = post_image(api_client, IMAGES / "example.png").json()
    strict = post_image(api_client, IMAGES / "example.png", text_threshold="0.95").json()
    small = post_image(api_client, IMAGES / "img_1.jpg", long_side="640").json()
    assert len(strict["boxes"]) < len(default["boxes"]) == 41
    # A word needs 0.95; a character between the words of its row, ROW_PEAK_SHARE of it
    # (one here, at 0.92 with FP32 and INT8 score maps).
    scores = [box["score"] for box in strict["boxes"]]
    assert min(scores) >= 0.95 * ROW_PEAK_SHARE and sum(score < 0.95 for score in scores) == 1
    assert len(small["boxes"]) == len(reference_boxes(640)["img_1.jpg"]["boxes"]) == 6


def test_gateway_adds_nothing_but_transport(api_client, live_triton):
    client = grpcclient.InferenceServerClient(live_triton.grpc_url)
    for name in ("korean.png", "img_1.jpg"):
        data = (IMAGES / name).read_bytes()
        direct = client.infer("ensemble_ocr", build_inputs(data, {}))
        gateway = post_image(api_client, IMAGES / name).json()
        np.testing.assert_allclose(np.array(box_points(gateway)).reshape(-1, 4, 2),
                                   direct.as_numpy("BOXES"), atol=0.05)
        np.testing.assert_allclose([b["score"] for b in gateway["boxes"]],
                                   direct.as_numpy("SCORES"), atol=5e-5)
    client.close()


# -- refusals ------------------------------------------------------------------------------

def test_missing_key_is_401_with_challenge(anonymous_client, live_triton):
    response = post_image(anonymous_client, IMAGES / "korean.png")
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Api-Key"
    assert response.json()["error"]["code"] == "not_authenticated"


def test_wrong_key_is_401(anonymous_client, api_key, live_triton):
    anonymous_client.credentials(HTTP_AUTHORIZATION="Api-Key " + api_key[1][:-2] + "xx")
    response = post_image(anonymous_client, IMAGES / "korean.png")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "authentication_failed"


def test_truncated_jpeg_is_400_json(api_client, live_triton):
    response = post_image(api_client, DATA / "bad" / "truncated.jpg")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "image_undecodable"


def test_cut_jpeg_fails_inside_triton_as_400(api_client, live_triton):
    data = (IMAGES / "img_1.jpg").read_bytes()
    response = api_client.post("/api/ocr", data=data[: len(data) // 2],
                               content_type="image/jpeg")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "image_undecodable"
    assert "truncated" in response.json()["error"]["message"]
    assert post_image(api_client, IMAGES / "korean.png").status_code == 200  # still serving


def test_text_file_is_415(api_client, live_triton, tmp_path):
    text = tmp_path / "notes.png"
    text.write_text("this is plain text, not a picture\n")
    response = post_image(api_client, text)
    assert response.status_code == 415
    assert response.json()["error"]["code"] == "unsupported_media_type"
    assert "JPEG, PNG" in response.json()["error"]["message"]


def test_ready_is_200_with_triton_up(anonymous_client, live_triton):
    response = anonymous_client.get("/api/ready")
    assert response.status_code == 200
    body = response.json()
    load = body.pop("load")
    assert body == {"status": "ready", "model": {"name": "ensemble_ocr", "ready": True},
                    "replicas": {"ready": 1, "total": 1}}
    # Nothing in flight; admission's share of the tests' 180-s deadline (80 %).
    assert (load["pages_in_flight"], load["backlog_s"], load["saturated"]) == (0, 0.0, False)
    assert load["limit_s"] == 144.0 and set(load["page_s"]) == {"image", "document"}


def test_health_needs_no_key(anonymous_client):
    assert anonymous_client.get("/api/health").json() == {"status": "ok"}


def test_every_request_leaves_an_audit_row(api_client, api_key, live_triton):
    ok = post_image(api_client, IMAGES / "korean.png")
    bad = post_image(api_client, DATA / "bad" / "truncated.jpg")
    rows = {row.request_id: row for row in OcrRequest.objects.all()}
    success, failure = rows[ok.json()["request_id"]], rows[bad.json()["request_id"]]
    assert (success.http_status, success.error_code, success.box_count) == (200, "", 6)
    assert (success.image_format, success.width, success.height) == ("PNG", 629, 420)
    assert success.api_key == api_key[0] and success.model_version == "1"
    assert success.bytes_received == (IMAGES / "korean.png").stat().st_size
    assert (failure.http_status, failure.error_code) == (400, "image_undecodable")


def test_triton_refusing_a_parameter_names_the_field(api_client, live_triton, settings):
    # The gateway allows more than the Triton it talks to (their OCR_LONG_SIDE_MAX disagree):
    # preprocess refuses, and the answer still names the field.
    settings.OCR_LONG_SIDE_MAX = 4096
    response = post_image(api_client, IMAGES / "korean.png", long_side="3000")
    assert response.status_code == 400
    assert response.json()["error"] == {
        "code": "invalid_parameter", "field": "long_side",
        "message": "long_side must be in [64, 2560], got 3000"}
