"""Model control, versions and the response cache, against real Triton servers."""

import logging
import shutil
import threading

import pytest
import tritonclient.grpc as grpcclient
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import User
from django.core.management import call_command

from ocr_api import detectors
from ocr_inference.client import TritonClient
from ocr_inference.triton_metrics import engine_info

from tests.helpers import IMAGES, copy_repository, running_triton

pytestmark = [pytest.mark.django_db, pytest.mark.triton, pytest.mark.slow]
KOREAN = (IMAGES / "korean.png").read_bytes()
#: Every model the server loads at start (the ensemble, its steps, what its BLS step calls).
SERVED = ["craft", "db", "db_postprocess", "ensemble_ocr", "ensemble_ocr_db", "postprocess",
          "preprocess", "recognize", "recognizer", "refinenet", "tesseract"]


@pytest.fixture(scope="module")
def private_triton(tmp_path_factory):
    """A Triton on a private repository copy that these tests change."""
    repository = copy_repository(tmp_path_factory.mktemp("control") / "repository")
    with running_triton(tmp_path_factory, "control-log", repository, cache_bytes=0) as server:
        yield server


@pytest.fixture
def gateway(private_triton, settings):
    settings.TRITON_GRPC_URL = private_triton.grpc_url
    settings.TRITON_METRICS_URL = private_triton.metrics_url
    return private_triton


def ocr(client, data=KOREAN):
    """Boxes only at long side 640: these tests are about serving, not the model's answer."""
    return client.post("/api/ocr?long_side=640&recognize=false", data=data,
                       content_type="image/png")


def test_models_endpoint_lists_versions_and_readiness(api_client, anonymous_client, gateway):
    assert anonymous_client.get("/api/models").status_code == 401
    body = api_client.get("/api/models").json()
    assert body["models"] == [{"name": name, "version": "1", "state": "READY", "ready": True}
                              for name in SERVED]
    assert sorted(body["engines"]) == ["craft v1", "db v1", "recognizer v1", "refinenet v1"]
    assert all(engine.startswith("openvino ") for engine in body["engines"].values())
    languages = {language["code"]: (language["recognizer"], language["tesseract"])
                 for language in body["languages"]}
    assert (languages["en"], languages["ko"], languages["zh"], len(languages)) == (
        ("ppocr", "eng"), ("tesseract", "kor"), ("ppocr", "chi_sim"), 20)
    # The tests pin CRAFT (tests/conftest.py): the deployment's setting, said so.
    assert body["detectors"] == {"default": "craft", "reason": "OCR_DETECTOR=craft",
                                 "ensembles": {"craft": "ensemble_ocr", "db": "ensemble_ocr_db"}}


def test_auto_chooses_the_detector_from_the_engines_this_triton_measured(api_client, gateway,
                                                                        settings):
    """detector=auto on this CPU: whatever it chooses, it is decide()'s rule on the figures
    this Triton exports (CRAFT's time per photo, measured at its start)."""
    settings.OCR_DETECTOR = "auto"
    body = api_client.get("/api/models").json()
    expected = detectors.decide(engine_info(gateway.metrics_url))
    assert body["detectors"]["default"] == expected.detector
    assert body["detectors"]["reason"] == expected.reason
    assert "CRAFT takes " in expected.reason              # timed here: a CPU


def test_management_command_unloads_and_loads(gateway, capsys):
    call_command("triton_models", "unload", "ensemble_ocr", url=gateway.grpc_url)
    listing = capsys.readouterr().out
    assert "unload: ensemble_ocr: done" in listing
    assert any(line.split()[:3] == ["ensemble_ocr", "1", "UNAVAILABLE"]
               for line in listing.splitlines())
    call_command("triton_models", "load", "ensemble_ocr", url=gateway.grpc_url)
    assert any(line.split()[:3] == ["ensemble_ocr", "1", "READY"]
               for line in capsys.readouterr().out.splitlines())


def test_admin_page_confirms_an_unload_records_it_and_loads_again(client, gateway, caplog):
    assert client.get("/admin/triton/models/").status_code == 302        # login first
    ops = User.objects.create_superuser("ops", "ops@example.com", "pw-123-long")
    client.force_login(ops)
    page = client.get("/admin/triton/models/").content.decode()
    for name in SERVED:
        assert f"<td>{name}</td><td>1</td><td>READY</td>" in page
    # First click: a confirmation naming what else stops; nothing is unloaded yet.
    asked = client.post("/admin/triton/models/", {"model": "postprocess", "action": "unload"})
    assert asked.status_code == 200
    text = asked.content.decode()
    assert "<strong>ensemble_ocr</strong> — becomes UNAVAILABLE: it runs postprocess as a step." \
        in text
    assert 'name="confirm" value="yes"' in text and "every OCR request answers 503" in text
    assert "<td>postprocess</td><td>1</td><td>READY</td>" in client.get(
        "/admin/triton/models/").content.decode()
    with caplog.at_level(logging.INFO, logger="ocr_admin.model_changes"):
        response = client.post("/admin/triton/models/", {"model": "postprocess",
                                                          "action": "unload", "confirm": "yes"},
                               follow=True)
    page = response.content.decode()
    said = ("Unloaded postprocess. Also affected: ensemble_ocr UNAVAILABLE (runs postprocess as "
            "a step); recognize READY, failing (calls postprocess through BLS); ensemble_ocr_db "
            "READY, failing (runs recognize as a step).")
    assert said in page
    assert "<td>postprocess</td><td>1</td><td>UNAVAILABLE</td>" in page
    assert "<td>ensemble_ocr</td><td>1</td><td>UNAVAILABLE</td>" in page
    # Who did what: the admin history (also on this page) and the log.
    entry = LogEntry.objects.get()
    assert (entry.user, entry.object_repr, entry.change_message) == (
        ops, "Triton model postprocess", said)
    assert f"<td>ops</td><td>{said}</td>" in page
    assert [(r.levelname, r.getMessage()) for r in caplog.records
            if r.name == "ocr_admin.model_changes"] == [("WARNING", f"admin user ops: {said}")]
    response = client.post("/admin/triton/models/", {"model": "ensemble_ocr",
                                                      "action": "load"}, follow=True)
    page = response.content.decode()
    assert "Loaded ensemble_ocr." in page
    for name in ("postprocess", "ensemble_ocr"):
        assert f"<td>{name}</td><td>1</td><td>READY</td>" in page
    assert LogEntry.objects.count() == 2
    index = client.get("/admin/").content.decode()
    assert 'href="/admin/triton/models/"' in index


def test_new_version_rolls_out_while_requests_flow(api_client, gateway):
    repository = gateway.repository
    results, errors = [], []

    def roll_out():
        try:
            for model in ("craft", "ensemble_ocr"):
                shutil.copytree(repository / model / "1", repository / model / "2",
                                copy_function=lambda src, dst: shutil.copy2(src, dst))
            control = grpcclient.InferenceServerClient(gateway.grpc_url)
            control.load_model("craft")          # reload: v2 comes up, v1 retires
            control.load_model("ensemble_ocr")
            control.close()
        except Exception as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    loader = threading.Thread(target=roll_out)
    loader.start()
    while loader.is_alive():
        response = ocr(api_client)
        results.append((response.status_code, response.json().get("model", {}).get("version")))
    for _ in range(2):
        response = ocr(api_client)
        results.append((response.status_code, response.json()["model"]["version"]))
    assert not errors
    assert len(results) >= 3
    assert all(status == 200 for status, _ in results), results
    assert results[0][1] == "1" and results[-1][1] == "2" and results[-2][1] == "2"
    models = api_client.get("/api/models").json()["models"]
    ready = {(m["name"], m["version"]) for m in models if m["ready"]}
    assert {("craft", "2"), ("ensemble_ocr", "2")} <= ready
    assert ("craft", "1") not in ready


def cache_hits(url: str) -> int:
    client = grpcclient.InferenceServerClient(url)
    stats = client.get_inference_statistics("ensemble_ocr", as_json=True)
    client.close()
    return sum(int(s["inference_stats"].get("cache_hit", {}).get("count", 0))
               for s in stats["model_stats"])


def test_second_identical_request_is_a_response_cache_hit(api_client, live_triton):
    # With the text read: an answer with an empty output tensor (no boxes, or recognize=false's
    # empty texts) is not cached, see ensemble_ocr/config.pbtxt.
    image = (IMAGES / "img_3.jpg").read_bytes()

    def read(query=""):
        return api_client.post(f"/api/ocr?long_side=640{query}", data=image,
                               content_type="image/jpeg")

    before = cache_hits(live_triton.grpc_url)
    first = read().json()
    after_first = cache_hits(live_triton.grpc_url)
    second = read().json()
    assert cache_hits(live_triton.grpc_url) == after_first + 1
    assert after_first in (before, before + 1)   # +1 only if an earlier test sent the same
    assert second["boxes"] == first["boxes"] and second["text"] == first["text"] != ""
    # Same bytes, other parameters: a different cache key, so computed again.
    other = read("&low_text=0.45")
    assert other.status_code == 200
    assert cache_hits(live_triton.grpc_url) == after_first + 1


def test_the_client_tells_a_cached_answer_from_a_computed_one(live_triton):
    """COMPUTED_FOR: a cached answer carries the request that computed it (admission does not
    take its milliseconds for a page's cost)."""
    client = TritonClient(live_triton.grpc_url, timeout_s=120)
    try:
        parameters = {"long_side": 320, "text_threshold": 0.6912}   # no other test sends it
        first, second = client.infer(KOREAN, parameters), client.infer(KOREAN, parameters)
        assert (first.cached, second.cached) == (False, True)
        assert second.texts == first.texts and len(first.texts) == 6
        assert client.infer(KOREAN, {**parameters, "low_text": 0.41}).cached is False
    finally:
        client.close()
