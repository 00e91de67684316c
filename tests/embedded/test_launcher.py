"""The embedded-Triton launcher, for real (no mocks)."""

import os
import sys
from pathlib import Path

import pytest

from ocr_embedded.launcher import EmbeddedTriton, TritonStartError

pytestmark = [pytest.mark.triton, pytest.mark.slow]


def test_a_repository_that_cannot_load_fails_fast_with_the_log_tail(tmp_path):
    repository = tmp_path / "repository"
    (repository / "ensemble_ocr").mkdir(parents=True)
    (repository / "ensemble_ocr" / "config.pbtxt").write_text('name: "ensemble_ocr"\nthis is {')
    server = EmbeddedTriton(repository=repository, log_path=tmp_path / "triton.log",
                            cache_bytes=0)
    with pytest.raises(TritonStartError) as failure:
        server.start(timeout_s=120)
    message = str(failure.value)
    assert "tritonserver exited with code" in message
    assert "ensemble_ocr" in message                  # the log's tail names the culprit
    assert server.process.poll() is not None


def test_command_line_carries_the_documented_flags(tmp_path):
    server = EmbeddedTriton(repository=tmp_path, log_path=tmp_path / "log", flavour="gpu",
                            grpc_port=9101, http_port=9102, metrics_port=9103,
                            cache_bytes=1024)
    command = server.command()
    for flag in ("--model-control-mode=explicit", "--load-model=ensemble_ocr",
                 "--grpc-port=9101", "--http-port=9102", "--metrics-port=9103",
                 "--model-config-name=gpu", "--cache-config=local,size=1024",
                 "--rate-limit=execution_count"):
        assert flag in command, flag
    assert server.environment()["PATH"].split(os.pathsep)[0] == str(Path(sys.executable).parent)
