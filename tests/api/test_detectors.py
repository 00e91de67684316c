"""The detector a request without one gets (ocr_api.detectors): the rule on the engine figures
of CPUs this one is not, and the parameter through the gateway."""

import pytest

from ocr_api import detectors
from ocr_api.intake import uploads

AGREES = {"text_f": 0.97, "words": 0.95, "fingerprint": "x"}


def test_the_agreement_was_measured_on_the_networks_and_the_set_served():
    """ocr_api/detector_agreement.json is current: measured by ``python -m bench.detectors
    --record`` on this tree's networks and validation set (run it again when they change)."""
    from bench.detectors import fingerprint

    assert detectors.AGREEMENT["fingerprint"] == fingerprint()


def engines(craft: str) -> dict[str, str]:
    """Triton's ocr_engine_info with CRAFT's entry ``craft``."""
    return {"craft v1": craft, "db v1": "openvino 2026.4.1 FP32 LATENCY (auto: fp32 260 ms, "
                                        "bf16 300 ms per warm-up input -> fp32)",
            "refinenet v1": "openvino 2026.4.1 INT8 LATENCY", "recognizer v1": "x"}


#: CRAFT on a 2-core AVX2 EPYC (issue 53) and on a Xeon with AMX (bench/results).
EPYC = ("openvino 2026.4.1 INT8 LATENCY (auto: int8 9236 ms agrees (boxes F 1.000 on a.jpg "
        "(worst of 11 images), at least 0.98), fp32 12032 ms per warm-up input -> int8)")
FAST = "openvino 2026.4.1 BF16 LATENCY (auto: bf16 420 ms agrees (x), fp32 2503 ms per " \
       "warm-up input -> bf16)"


def test_the_served_precisions_time_is_read_from_its_reason():
    assert detectors.served_ms(EPYC) == 9236.0
    assert detectors.served_ms(FAST) == 420.0
    assert detectors.served_ms("openvino 2026.4.1 INT8 LATENCY (forced int8 agrees with FP32 "
                               "(x))") is None
    assert detectors.served_ms("onnxruntime 1.20 FP32") is None


def test_db_where_craft_is_over_budget_and_db_agrees():
    choice = detectors.decide(engines(EPYC), AGREES)
    assert choice == detectors.Choice(
        "db", "CRAFT takes 9236 ms per 1280x736 photo here, over 500 ms; DB's answers on the "
              "validation set agree with CRAFT's: text F 0.970, words 0.950 (floors 0.9, 0.85): "
              "DB")


def test_craft_where_it_is_affordable_or_db_does_not_agree():
    assert detectors.decide(engines(FAST), AGREES) == detectors.Choice(
        "craft", "CRAFT takes 420 ms per 1280x736 photo here, within 500 ms: CRAFT")
    weak = detectors.decide(engines(EPYC), {"text_f": 0.97, "words": 0.8})
    assert weak.detector == "craft" and "words 0.800 (floors 0.9, 0.85): CRAFT" in weak.reason


def test_craft_without_cpu_figures_or_a_measured_precision():
    assert detectors.decide({}, AGREES).detector == "craft"               # the gpu flavour
    forced = engines("openvino 2026.4.1 INT8 LATENCY (forced int8 agrees with FP32 (x))")
    assert detectors.decide(forced, AGREES).reason.startswith(
        "CRAFT's precision was not chosen by measurement here")


def test_a_deployments_setting_and_a_requests_own_detector_win(settings, rf):
    settings.OCR_DETECTOR = "db"
    assert detectors.choose() == detectors.Choice("db", "OCR_DETECTOR=db")
    assert detectors.resolved({})["detector"] == "db"
    assert detectors.resolved({"detector": "auto"})["detector"] == "db"
    assert detectors.resolved({"detector": "craft"})["detector"] == "craft"


@pytest.mark.parametrize("query, detector", [("", "craft"), ("?detector=db", "db"),
                                             ("?detector=auto", "craft")])
def test_the_parameter_is_made_concrete_at_intake(settings, rf, query, detector):
    from rest_framework.parsers import MultiPartParser
    from rest_framework.request import Request

    settings.OCR_DETECTOR = "craft"
    request = Request(rf.post(f"/api/ocr{query}", {}), parsers=[MultiPartParser()])
    assert uploads.parameters(request)["detector"] == detector


def test_an_unknown_detector_is_a_400_naming_the_choices(api_client):
    response = api_client.post("/api/ocr?detector=east", b"\x89PNG", content_type="image/png")
    assert response.status_code == 400
    error = response.json()["error"]
    assert (error["code"], error["field"]) == ("invalid_parameter", "detector")
    assert error["message"] == 'detector: "east" is not one of auto, craft, db.'
