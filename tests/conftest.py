"""Shared fixtures: test data, one real embedded Triton per session, API keys and clients."""

import json
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from rest_framework.test import APIClient

from ocr_api.embedded_triton import EmbeddedTriton
from ocr_api.models import ApiKey

DATA = Path(__file__).parent / "data"


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    """Mark every test that touches the database ``django_db`` (whether it asked through the
    marker or a fixture), so ``-m django_db`` selects them all for the PostgreSQL run."""
    for item in items:
        if {"db", "transactional_db"} & set(item.fixturenames):
            item.add_marker(pytest.mark.django_db)
IMAGES = DATA / "images"
IMAGE_NAMES = sorted(p.name for p in IMAGES.iterdir())


def reference_boxes(long_side: int = 1280) -> dict:
    """``tests/data/reference/craft_boxes_<long_side>.json``: image name -> entry."""
    return json.loads((DATA / "reference" / f"craft_boxes_{long_side}.json").read_text())


@contextmanager
def running_triton(tmp_path_factory, name: str, repository: Path | None = None, **options):
    """A started :class:`EmbeddedTriton` on free ports, logging into a fresh temp folder;
    stopped on exit. ``options`` are EmbeddedTriton's (flavour, cache_bytes, env, ...)."""
    server = EmbeddedTriton(
        repository=repository or django_settings.TRITON_MODEL_REPOSITORY,
        log_path=tmp_path_factory.mktemp(name) / "triton.log", **options)
    try:
        server.start()
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def triton(tmp_path_factory):
    """A real Triton serving ``triton_models/repository`` (cpu flavour, response cache on)."""
    with running_triton(tmp_path_factory, "triton") as server:
        yield server


@pytest.fixture
def live_triton(triton, settings):
    """Points the gateway's Triton client at the session's embedded Triton."""
    settings.TRITON_GRPC_URL = triton.grpc_url
    settings.TRITON_METRICS_URL = triton.metrics_url
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


def copy_repository(target: Path) -> Path:
    """A private copy of the model repository (weights hard-linked, not copied) that a test
    may change: add versions, edit configs."""
    source = Path(django_settings.TRITON_MODEL_REPOSITORY)
    for path in source.rglob("*"):
        if "__pycache__" in path.parts:
            continue
        destination = target / path.relative_to(source)
        if path.is_dir():
            destination.mkdir(parents=True, exist_ok=True)
        elif path.suffix == ".onnx":
            destination.hardlink_to(path)
        else:
            destination.write_bytes(path.read_bytes())
    return target
