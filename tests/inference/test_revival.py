"""A dead Python stub: which model it belongs to, read from Triton's error messages, and when
that model is loaded again (with a real Triton: ``test_triton_faults.py``, a model whose stub
died)."""

import threading
import time
from pathlib import Path

import pytest
from tritonclient.utils import InferenceServerException

from ocr_inference import errors, revival
from ocr_inference.model_control import ModelControlError
from ocr_inference.revival import dead_stub_model


@pytest.mark.parametrize("message, model", [
    # Through BLS (recognize calls the recognizer), as Triton 2.51 words it.
    ("in ensemble 'ensemble_ocr', recognizer: Stub process 'recognizer_0_0' is not healthy.",
     "recognizer"),
    # An ensemble step itself, the second instance of its group.
    ("in ensemble 'ensemble_ocr', Stub process 'recognize_0_1' is not healthy.", "recognize"),
    ("Stub process 'ocr_words_12_3' is not healthy.", "ocr_words"),
    ("in ensemble 'ensemble_ocr', Failed to process the request(s) for model instance "
     "'craft_0_0', message: out of memory", None),
    ("", None),
])
def test_the_model_of_a_dead_stub(message, model):
    assert dead_stub_model(message) == model


def test_a_dead_stub_is_unavailable_for_now_not_a_failure():
    exc = InferenceServerException(
        "in ensemble 'ensemble_ocr', recognizer: Stub process 'recognizer_0_0' is not healthy.",
        status="StatusCode.INTERNAL")
    error = errors.from_triton(exc, 30.0)
    assert isinstance(error, errors.InferenceUnavailable)
    assert error.code == "inference_unavailable"
    other = InferenceServerException("in ensemble 'ensemble_ocr', boom",
                                     status="StatusCode.INTERNAL")
    assert isinstance(errors.from_triton(other, 30.0), errors.InferenceFailed)


class FakeControl:
    """ModelControl for one replica: records each load_again, fails on replicas in ``down``;
    with ``held`` set, a load says so in ``entered`` and lasts until ``release`` is set."""

    calls: list = []
    down: set = set()
    held = False
    entered = threading.Event()
    release = threading.Event()

    def __init__(self, url, timeout_s):
        self.url, self.timeout_s = url, timeout_s

    def load_again(self, name, stamp):
        FakeControl.calls.append((self.url, name, round(self.timeout_s, 1)))
        if FakeControl.held:
            FakeControl.entered.set()
            FakeControl.release.wait(10)
        if self.url in FakeControl.down:
            raise ModelControlError(f"{self.url} unreachable")


@pytest.fixture
def control(monkeypatch):
    monkeypatch.setattr(revival, "ModelControl", FakeControl)
    FakeControl.calls, FakeControl.down, FakeControl.held = [], set(), False
    FakeControl.entered, FakeControl.release = threading.Event(), threading.Event()
    return FakeControl


def test_a_model_is_loaded_once_per_cooldown(control, monkeypatch):
    stubs = revival.StubRevival("127.0.0.1:8001")
    assert stubs.revive("recognizer", 5.0) and stubs.revive("recognizer", 5.0)
    assert [name for _, name, _ in control.calls] == ["recognizer"]
    assert stubs.revive("craft", 5.0)                       # another model: its own load
    assert [name for _, name, _ in control.calls] == ["recognizer", "craft"]
    monkeypatch.setattr(revival, "COOLDOWN_S", 0.05)
    time.sleep(0.1)
    assert stubs.revive("recognizer", 5.0)
    assert len(control.calls) == 3


def test_a_failed_load_is_not_tried_again_within_the_cooldown(control):
    control.down = {"127.0.0.1:8001"}
    stubs = revival.StubRevival("127.0.0.1:8001")
    assert not stubs.revive("recognizer", 5.0)
    assert not stubs.revive("recognizer", 5.0)              # the same answer, no second load
    assert len(control.calls) == 1


def test_every_replica_is_loaded_though_one_is_down(control):
    control.down = {"ipv4:10.0.0.1:8001"}
    stubs = revival.StubRevival("ipv4:10.0.0.1:8001,10.0.0.2:8001")
    assert stubs.revive("recognizer", 5.0)
    assert [url for url, _, _ in control.calls] == ["ipv4:10.0.0.1:8001", "ipv4:10.0.0.2:8001"]


def test_no_replica_no_load(control, monkeypatch):
    monkeypatch.setattr(revival.targets, "replicas", lambda url: [])
    assert not revival.StubRevival("dns:///triton:8001").revive("recognizer", 5.0)
    assert control.calls == []


def test_waiting_for_another_threads_load_is_bounded_by_the_time_given(control):
    control.held = True
    stubs = revival.StubRevival("127.0.0.1:8001")
    first = threading.Thread(target=stubs.revive, args=("recognizer", 20.0))
    first.start()
    assert control.entered.wait(5)                          # the first load is under way
    started = time.monotonic()
    assert not stubs.revive("recognizer", 0.3)              # gives up waiting after 0.3 s
    assert 0.25 <= time.monotonic() - started < 3
    control.release.set()
    first.join()
    assert stubs.revive("recognizer", 0.3)                  # that load's answer, no new one
    assert control.calls == [("127.0.0.1:8001", "recognizer", 20.0)]


def test_one_stamp_per_cooldown_step():
    # Workers loading in the same 10 s send one config: Triton starts new instances once.
    assert revival.load_stamp(1_700_000_003.2) == revival.load_stamp(1_700_000_009.9) \
        == "2023-11-14T22:13:20Z"
    assert revival.load_stamp(1_700_000_010.0) == "2023-11-14T22:13:30Z"


def test_no_config_names_its_instance_group():
    # The model is read from the instance's name, ``<model>_<group>_<index>``, which holds
    # only while the group is not named.
    from google.protobuf import text_format
    from tritonclient.grpc import model_config_pb2

    configs = sorted(Path(__file__).resolve().parents[2].glob("triton_models/**/*.pbtxt"))
    assert len(configs) >= 8
    for path in configs:
        config = text_format.Parse(path.read_text(), model_config_pb2.ModelConfig())
        assert not [group.name for group in config.instance_group if group.name], path
