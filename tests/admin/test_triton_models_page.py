"""The admin's Triton models page: what an unload takes down with it, who may change models.

Against the session's real Triton, read-only: nothing here unloads (the unload itself, its
history entry and log line are tested on a private Triton in tests/inference/
test_model_control.py).
"""

import pytest
from django.conf import settings
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import User
from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2

from ocr_contract.tensors import BLS_CALLS, DB_ENSEMBLE, DETECTOR_ENSEMBLES, ENSEMBLE
from ocr_inference.model_control import (FAILING, UNAVAILABLE, Consequence, ModelControl,
                                         unload_consequences)

pytestmark = pytest.mark.django_db


def repository_ensemble_steps() -> dict[str, tuple[str, ...]]:
    """Each ensemble's steps as its config.pbtxt on disk declares them."""
    steps = {}
    for ensemble in DETECTOR_ENSEMBLES.values():
        path = settings.TRITON_MODEL_REPOSITORY / ensemble / "config.pbtxt"
        config = text_format.Parse(path.read_text(), model_config_pb2.ModelConfig())
        steps[ensemble] = tuple(step.model_name for step in config.ensemble_scheduling.step)
    return steps


def test_unloading_a_step_takes_the_ensemble_down():
    steps = repository_ensemble_steps()
    # craft is a step of the ensemble and also called by recognize (a turned page's second
    # detection).
    assert unload_consequences("craft", steps, BLS_CALLS) == [
        Consequence(ENSEMBLE, UNAVAILABLE, "runs craft as a step"),
        Consequence("recognize", FAILING, "calls craft through BLS"),
        Consequence(DB_ENSEMBLE, FAILING, "runs recognize as a step")]
    # recognize: both pipelines end with it.
    assert unload_consequences("recognize", steps, BLS_CALLS) == [
        Consequence(ENSEMBLE, UNAVAILABLE, "runs recognize as a step"),
        Consequence(DB_ENSEMBLE, UNAVAILABLE, "runs recognize as a step")]
    # An ensemble itself: nothing else goes (its steps stay loaded).
    assert unload_consequences(ENSEMBLE, steps, BLS_CALLS) == []


@pytest.mark.parametrize("called", ["recognizer", "tesseract"])
def test_unloading_a_model_called_through_bls_leaves_the_ensemble_ready_but_failing(called):
    assert unload_consequences(called, repository_ensemble_steps(), BLS_CALLS) == [
        Consequence("recognize", FAILING, f"calls {called} through BLS"),
        Consequence(ENSEMBLE, FAILING, "runs recognize as a step"),
        Consequence(DB_ENSEMBLE, FAILING, "runs recognize as a step")]


@pytest.mark.triton
def test_triton_reports_the_ensemble_steps_the_repository_declares(live_triton):
    assert ModelControl(live_triton.grpc_url).ensemble_steps() == repository_ensemble_steps()


@pytest.mark.triton
def test_an_unload_of_a_model_called_through_bls_is_confirmed_with_its_consequences(
        client, live_triton):
    client.force_login(User.objects.create_superuser("ops", "ops@example.com", "pw-123-long"))
    asked = client.post("/admin/triton/models/", {"model": "recognizer", "action": "unload"})
    page = asked.content.decode()
    assert asked.status_code == 200
    assert ("<strong>recognize</strong> — stays READY but fails: it calls recognizer "
            "through BLS.") in page
    assert f"<strong>{ENSEMBLE}</strong> — stays READY but fails: it runs recognize as a step." \
        in page
    assert "its requests that need recognizer fail" in page
    assert 'value="Yes, unload recognizer"' in page
    # Nothing happened yet: still loaded, nothing recorded.
    index = {m.name: m.state for m in ModelControl(live_triton.grpc_url).index()}
    assert index["recognizer"] == "READY"
    assert not LogEntry.objects.exists()


@pytest.mark.triton
def test_staff_who_may_not_change_models_see_the_index_without_buttons(client, live_triton):
    staff = User.objects.create_user("viewer", password="pw-123-long", is_staff=True)
    client.force_login(staff)
    page = client.get("/admin/triton/models/").content.decode()
    assert "<td>craft</td><td>1</td><td>READY</td>" in page
    assert ('<p id="detector">Requests that name no detector are read by <strong>craft</strong>: '
            "OCR_DETECTOR=craft.</p>") in page
    assert "only superusers may load or unload them" in page
    assert 'name="action"' not in page and "<th>actions</th>" not in page
    # Sent anyway (an old page, a script): refused, nothing changes or is recorded.
    refused = client.post("/admin/triton/models/", {"model": "craft", "action": "unload",
                                                     "confirm": "yes"}, follow=True)
    assert "Only superusers may load or unload models." in refused.content.decode()
    index = {m.name: m.state for m in ModelControl(live_triton.grpc_url).index()}
    assert index["craft"] == "READY"
    assert not LogEntry.objects.exists()
