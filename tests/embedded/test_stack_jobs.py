"""The stack starter's jobs pieces (ocr_embedded.stack.Stack): make serve gets the broker and
the job workers, every other stack (benchmarks, tests) only when it asks."""

import inspect

import pytest

from ocr_embedded.broker import ping
from ocr_embedded.stack import Stack


def test_stacks_run_no_broker_or_workers_unless_asked():
    stack = Stack(logs="/nonexistent", triton=False)
    assert stack.jobs is False and stack.redis is None and stack.job_workers is None
    assert "OCR_BROKER_URL" not in stack.gateway_settings()
    # make serve asks.
    from ocr_ops.management.commands import serve_embedded
    assert "jobs=True" in inspect.getsource(serve_embedded.Command.handle)


@pytest.mark.slow
def test_the_broker_keeps_its_file_in_the_stack_state_and_stops_with_the_gateway(tmp_path):
    stack = Stack(logs=tmp_path / "logs", triton=False, proxy=False, state=tmp_path, jobs=True)
    redis = stack.start_broker()
    try:
        assert ping(redis.port) and redis.folder == tmp_path / "redis"
        # gunicorn and the workers get its URL.
        assert stack.gateway_settings()["OCR_BROKER_URL"] == redis.url
    finally:
        stack.stop()
    assert not redis.running
    assert (tmp_path / "redis" / "appendonlydir").is_dir()        # kept for the next start
