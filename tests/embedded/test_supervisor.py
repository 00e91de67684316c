"""``make serve``'s Triton is supervised: killed for real (as the OOM killer would), it is
started again with the reason logged, and the gateway turns ready again on its own."""

import logging
import os
import signal
import time

import pytest

from ocr_embedded.launcher import EmbeddedTriton
from ocr_embedded.supervisor import TritonSupervisor, exit_reason

from tests.helpers import ENGINE_CACHE, IMAGES, trimmed_repository

pytestmark = pytest.mark.slow


def test_exit_reasons_are_readable():
    assert exit_reason(-signal.SIGKILL) == "was killed by SIGKILL"
    assert exit_reason(1) == "exited with code 1"


@pytest.mark.triton
@pytest.mark.django_db
def test_a_killed_triton_is_restarted_and_the_gateway_turns_ready(tmp_path, settings,
                                                                   api_client,
                                                                   anonymous_client, caplog):
    # Compiled engines cached, as make serve does: the restart loads them instead of compiling.
    triton = EmbeddedTriton(repository=trimmed_repository(tmp_path / "repository"),
                            log_path=tmp_path / "triton.log", cache_bytes=0,
                            env={"OCR_ENGINE_CACHE_DIR": str(ENGINE_CACHE)})
    supervisor = TritonSupervisor(triton, initial_backoff_s=0.5, start_timeout_s=900)
    supervisor.start(timeout_s=900)
    try:
        settings.TRITON_GRPC_URL = triton.grpc_url
        settings.TRITON_TIMEOUT_S = 120.0
        assert anonymous_client.get("/api/ready").status_code == 200
        first_pid = triton.process.pid

        with caplog.at_level(logging.WARNING, logger="ocr_embedded.supervisor"):
            os.kill(first_pid, signal.SIGKILL)          # the server only, not its stubs
            deadline = time.monotonic() + 30
            while anonymous_client.get("/api/ready").status_code != 503:
                assert time.monotonic() < deadline, "the gateway never saw Triton die"
                time.sleep(0.2)
            deadline = time.monotonic() + 900
            while anonymous_client.get("/api/ready").status_code != 200:
                assert time.monotonic() < deadline, "Triton was not restarted"
                time.sleep(1)

        deadline = time.monotonic() + 30       # start() returns within a poll of readiness
        while supervisor.restarts == 0:
            assert time.monotonic() < deadline, "the restart was never completed"
            time.sleep(0.2)
        assert supervisor.restarts == 1 and triton.process.pid != first_pid
        messages = [record.getMessage() for record in caplog.records]
        assert any(f"Triton (pid {first_pid}) was killed by SIGKILL" in m for m in messages)
        assert any("Triton is ready again" in m for m in messages)
        response = api_client.post("/api/ocr?long_side=640&recognize=false",
                                   data=(IMAGES / "img_1.jpg").read_bytes(),
                                   content_type="image/jpeg")
        assert response.status_code == 200 and response.json()["boxes"]
    finally:
        supervisor.stop()
    assert triton.process.poll() is not None
