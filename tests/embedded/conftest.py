"""Fixtures of the serving-stack tests."""

import pytest

from .stack import start_proxied_gateway

#: Requests without a valid key one address may send per minute, in the shared stack.
UNAUTHENTICATED_RATE = 40


@pytest.fixture(scope="session")
def proxied_gateway(tmp_path_factory):
    """gunicorn + nginx as ``make serve`` runs them, with no Triton behind (for refusals,
    limits and errors, which never reach inference); shared by the session. Tests that
    count per-address refusals send from addresses of their own (127.0.0.x)."""
    stack = start_proxied_gateway(
        tmp_path_factory.mktemp("proxied-gateway"),
        OCR_UNAUTHENTICATED_RATE_PER_MINUTE=str(UNAUTHENTICATED_RATE))
    yield stack
    stack.stop()
