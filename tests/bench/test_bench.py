"""Smoke run of the benchmark harness (``python -m bench.run``) on one image, and its helpers.

The benchmark itself is not part of the test run; this checks that one tiny run of every
mode works end to end against real servers (its own embedded Triton and gunicorn servers)
and that its JSON has the figures the README quotes. No timing is asserted.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bench.load import percentile
from bench.traffic import tcp_counters

from tests.helpers import ENGINE_CACHE, IMAGES, reference_boxes, trimmed_repository

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]


def test_percentile_interpolates_linearly():
    values = [10.0, 20.0, 30.0, 40.0]
    assert percentile(values, 50) == 25.0
    assert percentile(values, 0) == 10.0 and percentile(values, 100) == 40.0
    assert percentile([5.0], 99) == 5.0


def test_tcp_counters_see_bytes_on_a_real_connection():
    assert shutil.which("ss"), "the benchmark reads TCP counters with ss: apt-get install iproute2"
    import socket

    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port)) as client:
            peer, _ = server.accept()
            with peer:
                client.sendall(b"x" * 70_000)
                received = 0
                while received < 70_000:
                    received += len(peer.recv(65536))
                peer.sendall(b"y" * 3_000)
                received = 0
                while received < 3_000:
                    received += len(client.recv(4096))
                counters = tcp_counters(port)
    # Only the client side (peer port = the server's) is counted.
    assert list(counters.values()) == [(70_000, 3_000)]


@pytest.fixture(scope="module")
def smoke_environment(tmp_path_factory) -> dict[str, str]:
    """What a benchmark's smoke run is given: the tests' engine cache (compiled networks and
    precision decisions: a row's Triton loads them instead of choosing again) and a copy of the
    model repository with only the warm-up input each precision is timed on."""
    repository = trimmed_repository(tmp_path_factory.mktemp("bench") / "repository")
    return {"TRITON_MODEL_REPOSITORY": str(repository), "OCR_ENGINE_CACHE_DIR": str(ENGINE_CACHE)}


@pytest.mark.triton
def test_one_image_run_of_every_mode(tmp_path, smoke_environment):
    images = tmp_path / "images"
    images.mkdir()
    shutil.copy(IMAGES / "img_1.jpg", images / "img_1.jpg")
    out = tmp_path / "results"
    # FP32, whose box count is known: auto's choice is measured at start, and on a CPU where
    # INT8 and FP32 are within noise of each other it may go either way (INT8's parity is
    # tested at 1280 in tests/pipeline/test_engines.py).
    done = subprocess.run(
        [sys.executable, "-m", "bench.run", "--images", str(images), "--concurrency", "1",
         "--requests", "1", "--workers", "1", "--threads", "2", "--long-side", "640",
         "--out", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=600,
        env={**os.environ, **smoke_environment, "OCR_ENGINE_PRECISION": "fp32"})
    assert done.returncode == 0, done.stderr[-4000:]
    assert "Targets:" in done.stdout
    reference_count = len(reference_boxes(640)["img_1.jpg"]["boxes"])

    [json_path] = out.glob("bench-*.json")
    assert json_path.with_suffix(".md").exists()
    results = json.loads(json_path.read_text())
    assert {"started", "command", "config", "machine", "triton", "modes", "summary",
            "box_agreement", "inprocess_engine"} <= set(results)
    assert results["config"]["triton_response_cache_bytes"] == 0
    assert results["cache_hits_total"] == 0
    assert " cores, flags " in results["machine"]
    assert list(results["modes"]) == ["ensemble", "direct", "split", "inprocess"]
    for mode, data in results["modes"].items():
        [cell] = data["cells"]
        assert cell["concurrency"] == 1
        assert cell["ok"] == cell["requests"] == 2, (mode, cell["errors"])
        assert {"p50", "p95", "p99"} <= set(cell["latency_ms"])
        assert cell["throughput_img_s"] > 0
        assert cell["boxes_by_image"] == {"img_1.jpg": reference_count} == {"img_1.jpg": 6}
        assert data["memory"], mode
    assert results["box_agreement"]["differing"] == {}

    # Bytes across the API <-> Triton boundary, against what the tensors must weigh.
    # img_1.jpg is 1280x720, at long side 640: the uint8 input [1,384,640,3] (360 rows padded
    # to 384), float32 maps at half size [*, 192, 320].
    maps = 192 * 320 * 4
    input_tensor, y, feature, refined = 384 * 640 * 3, 2 * maps, 32 * maps, maps
    split = results["modes"]["split"]["cells"][0]["bytes_per_image"]
    assert input_tensor + y + feature <= split["sent"] <= (input_tensor + y + feature) * 1.001
    assert y + feature + refined <= split["received"] <= (y + feature + refined) * 1.001
    file_size = (IMAGES / "img_1.jpg").stat().st_size
    for mode in ("ensemble", "direct"):
        sent = results["modes"][mode]["cells"][0]["bytes_per_image"]["sent"]
        assert file_size < sent < file_size + 1024, mode
    assert results["modes"]["inprocess"]["cells"][0]["bytes_per_image"]["total"] == 0

    summary = results["summary"]
    assert {t["key"] for t in summary["targets"]} == {
        "bytes_ratio", "non_compute_ratio", "gateway_overhead_ms",
        "gateway_overhead_paired_ms", "gateway_throughput_pct", "throughput_ratio_c4",
        "memory_ratio"}
    [row] = summary["per_concurrency"]
    assert row["bytes_ratio_ensemble_split"] < 0.01
    assert summary["memory_ratio_rss"] > 0
    [steps] = summary["ensemble_steps"]
    assert [s["model"] for s in steps["steps"]] == ["preprocess", "craft", "refinenet",
                                                    "postprocess"]
    assert steps["slowest_step"] in ("craft", "refinenet")


def test_engine_comparison_smoke_run(tmp_path, monkeypatch, smoke_environment):
    """``python -m bench.engines`` on one image at long side 640: auto and onnxruntime, with
    parity, recognition's cost and the time around the networks; a row between them whose
    Triton really fails to start (an engine that does not exist) is reported as failed and
    costs the other rows nothing."""
    from bench import engines

    for name, value in smoke_environment.items():
        monkeypatch.setenv(name, value)
    images = tmp_path / "images"
    images.mkdir()
    shutil.copy(IMAGES / "img_1.jpg", images / "img_1.jpg")      # 6 words at 640
    available = engines.engine_rows()
    monkeypatch.setattr(engines, "engine_rows", lambda: {
        "openvino-auto": available["openvino-auto"],
        "no-such-engine": {"OCR_ENGINE": "no-such-engine"},
        "onnxruntime": available["onnxruntime"]})
    status = engines.main(["--engines", "openvino-auto,no-such-engine,onnxruntime",
                           "--long-sides", "640", "--images", str(images),
                           "--out", str(tmp_path)])
    assert status == 1                                      # one row failed
    report = json.loads(next(tmp_path.glob("engines-*.json")).read_text())
    assert list(report["failed"]) == ["no-such-engine"]
    assert report["failed"]["no-such-engine"].startswith(
        "TritonStartError: tritonserver exited with code 1.")
    rows = {row["engine"]: row for row in report["summary"]}
    assert set(rows) == {"openvino-auto", "onnxruntime"}
    assert rows["onnxruntime"]["description"].startswith("onnxruntime ")
    assert rows["openvino-auto"]["description"].startswith("openvino ")
    assert rows["onnxruntime"]["speedup_vs_onnxruntime"] == 1.0
    assert rows["openvino-auto"]["worst_f"] == rows["onnxruntime"]["worst_f"] == 1.0
    auto = report["results"]["openvino-auto"]
    assert len(auto["latency_ms"]["640"]) == len(auto["latency_with_text_ms"]) == 1
    around = auto["around_networks"]
    assert set(around) == {"test images", "12 MP JPEG", "test images, reading text"}
    assert {"preprocess", "craft", "refinenet", "postprocess", "recognize"} <= \
        set(around["test images"]["steps_ms"])
    assert 0 < around["test images"]["outside_networks_ms"] < around["test images"]["ensemble_ms"]
    per_model = {row["model"]: row for row in auto["per_model"]}
    assert {"craft", "refinenet", "recognize", "recognizer"} <= set(per_model)
    # img_1.jpg at long side 640 is padded to 640x384: CRAFT's 335.1 GMAC at 1280x736 scaled
    # by the area (0.261), the refiner's 107.0 likewise.
    assert round(per_model["craft"]["gmac"]) == 87 and round(per_model["refinenet"]["gmac"]) == 28
    assert per_model["craft"]["floor_ms"] is None or per_model["craft"]["floor_ms"] > 0
    assert " cores, flags " in report["machine"]
    table = next(tmp_path.glob("engines-*.md")).read_text()
    assert "recognition adds" in table and "12 MP JPEG" in table
    assert "| craft | openvino " in table and "ms / floor" in table
    assert ("| no-such-engine | failed: TritonStartError: tritonserver exited with code 1. |"
            in table)


def test_the_recognizer_cuts_are_tensors_of_the_served_graph():
    """bench.recognizer_precision cuts the recognizer at named tensors: each is one node's
    output, and the graph's input and outputs are the contract's."""
    import onnx
    from ocr_contract.tensors import RECOGNIZER_INPUT, RECOGNIZER_MODEL, RECOGNIZER_OUTPUTS
    from ocr_pipeline.versions import latest_version

    from bench.recognizer_precision import CUTS, REPOSITORY

    graph = onnx.load(latest_version(REPOSITORY / RECOGNIZER_MODEL), load_external_data=False).graph
    produced = [name for node in graph.node for name in node.output]
    assert [produced.count(tensor) for _, tensor in CUTS] == [1] * len(CUTS)
    assert [i.name for i in graph.input] == [RECOGNIZER_INPUT]
    assert [o.name for o in graph.output] == list(RECOGNIZER_OUTPUTS)
