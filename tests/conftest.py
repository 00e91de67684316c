"""Shared fixtures: one real embedded Triton per session, API keys and clients."""

import os
import signal

import pytest
from django.conf import settings as django_settings
from rest_framework.test import APIClient

from ocr_api.models import ApiKey
from ocr_embedded import prerequisites

from .helpers import running_triton


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    """Mark every test that touches the database ``django_db`` (whether it asked through the
    marker or a fixture), so ``-m django_db`` selects them all for the PostgreSQL run."""
    for item in items:
        if {"db", "transactional_db"} & set(item.fixturenames):
            item.add_marker(pytest.mark.django_db)


#: The suite's tiers after the unmarked (fast) tests, in the order they run: quality at the
#: served working size (1280) once per served combination, then the tests that start servers
#: of their own (kill, reload, replicas, proxies, benchmark smoke runs). ``-m 'not slow'``
#: leaves out the last tier, ``-m 'not slow and not quality'`` both.
TIERS = ("quality", "slow")


class TierOrder:
    """Runs the tiers in order, fast first, so a broken change fails in minutes; within the
    fast tier, modules that need no Triton before those that share the session's. A module
    runs in the latest tier of any of its tests, so its module-scoped servers start only once;
    the order within a tier is pytest's and pytest-django's own (this sorts last, stably)."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items):
        def rank(item) -> tuple[int, int]:
            names = {marker.name for marker in item.iter_markers()}
            tier = max((TIERS.index(name) + 1 for name in names & set(TIERS)), default=0)
            return tier, int("triton" in names)

        module_rank: dict[str, tuple[int, int]] = {}
        for item in items:
            module = item.nodeid.split("::")[0]
            module_rank[module] = max(module_rank.get(module, (0, 0)), rank(item))
        items.sort(key=lambda item: module_rank[item.nodeid.split("::")[0]])


#: The tests read CRAFT unless they name a detector: ``auto`` chooses by this CPU's speed
#: (ocr_api.detectors), and what a test asserts must not depend on it. This process's settings
#: and every server the tests start (they inherit the environment).
os.environ.setdefault("OCR_DETECTOR", "craft")
django_settings.OCR_DETECTOR = os.environ["OCR_DETECTOR"]


def _interrupted(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def pytest_configure(config):
    config.pluginmanager.register(TierOrder(), "ocr-tier-order")
    # SIGTERM (a CI timeout, kill) stops the run as Ctrl-C does: pytest then tears the
    # fixtures down, so the servers they started (Triton and its stubs, in sessions of their
    # own) are stopped instead of left running.
    signal.signal(signal.SIGTERM, _interrupted)


def pytest_collection_finish(session):
    """Before the first test: stop at once, with the command that installs them, when the
    operating system lacks what the selected tests need (not after minutes of other tests)."""
    markers = {marker.name for item in session.items for marker in item.iter_markers()}
    if not markers & {"triton", "browser"}:
        return
    problems, packages = prerequisites.missing("test" if "browser" in markers else "serve")
    if problems:
        install = f"\nInstall with: apt-get install -y {' '.join(packages)}" if packages else ""
        pytest.exit("Missing for these tests:\n  - " + "\n  - ".join(problems) + install,
                    returncode=pytest.ExitCode.USAGE_ERROR)


@pytest.fixture(scope="session")
def triton(tmp_path_factory):
    """A real Triton serving ``triton_models/repository`` (cpu flavour, response cache on)."""
    with running_triton(tmp_path_factory, "triton") as server:
        yield server


@pytest.fixture
def live_triton(triton, settings):
    """Points the gateway's Triton client at the session's embedded Triton.

    The inference deadline is raised from the product's 30 s: the tests share two slow cores
    with Triton and each other, and a late answer is not what they check (the deadline itself
    is tested in tests/inference/test_triton_faults.py)."""
    settings.TRITON_GRPC_URL = triton.grpc_url
    settings.TRITON_METRICS_URL = triton.metrics_url
    settings.TRITON_TIMEOUT_S = 180.0
    return triton


@pytest.fixture
def api_key(db):
    """A fresh API key: ``(ApiKey row, key string)``."""
    return ApiKey.objects.create_key(name="test", owner="tests", rate_per_minute=10_000)


@pytest.fixture
def api_client(api_key):
    """A DRF test client that sends the API key."""
    api_client = APIClient()
    api_client.credentials(HTTP_AUTHORIZATION=f"Api-Key {api_key[1]}")
    return api_client


@pytest.fixture
def anonymous_client():
    return APIClient()
