"""Two real Triton replicas behind one gateway (``TRITON_GRPC_URL=ipv4:a,b``): one killed
under traffic costs no client an error (the calls on it are sent again to the other), and
once back it takes traffic again; ``/api/ready`` counts the ready replicas."""

import json
import threading
import time
import urllib.error
import urllib.request

import pytest


from ocr_embedded.gunicorn_server import Gunicorn
from ocr_embedded.launcher import EmbeddedTriton, free_port
from ocr_embedded.stack import prepare_gateway_state

from tests.helpers import ENGINE_CACHE, IMAGES, ensemble_inferences, trimmed_repository

pytestmark = [pytest.mark.triton, pytest.mark.slow]
IMAGE = (IMAGES / "img_1.jpg").read_bytes()


@pytest.fixture(scope="module")
def replicas(tmp_path_factory):
    """Two Tritons sharing the tests' compiled-engine cache, so that neither (nor a restart)
    compiles again."""
    servers = []
    repository = trimmed_repository(tmp_path_factory.mktemp("replicas") / "repository")
    try:
        for name in ("replica-a", "replica-b"):
            folder = tmp_path_factory.mktemp(name)
            server = EmbeddedTriton(repository=repository,
                                    log_path=folder / "triton.log", cache_bytes=0,
                                    env={"OCR_ENGINE_CACHE_DIR": str(ENGINE_CACHE)})
            servers.append(server)
            server.start(timeout_s=900)
        yield tuple(servers)
    finally:
        for server in servers:
            server.stop()


@pytest.fixture(scope="module")
def gateway(replicas, tmp_path_factory):
    var = tmp_path_factory.mktemp("replicas-gateway")
    env, key = prepare_gateway_state(var)
    target = "ipv4:" + ",".join(server.grpc_url for server in replicas)
    server = Gunicorn("gateway.wsgi", free_port(), 1, 4, dict(
        env, TRITON_GRPC_URL=target, TRITON_TIMEOUT_S="120",
        PROMETHEUS_MULTIPROC_DIR=str(var / "prometheus"), METRICS_PORT=str(free_port())), var / "gunicorn.log")
    server.start("/api/health")
    try:
        yield server, key
    finally:
        server.stop()


def ready(port: int) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/ready", timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


class Traffic:
    """``threads`` clients posting the same small image until stopped; every outcome kept."""

    def __init__(self, port: int, key: str, threads: int = 4):
        self.port, self.key = port, key
        self.outcomes: list[tuple[float, int, str]] = []
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, daemon=True) for _ in range(threads)]

    def _run(self):
        while not self._stop.is_set():
            request = urllib.request.Request(
                f"http://127.0.0.1:{self.port}/api/ocr?long_side=320&recognize=false",
                data=IMAGE, headers={"Authorization": f"Api-Key {self.key}",
                                     "Content-Type": "image/jpeg"})
            try:
                with urllib.request.urlopen(request, timeout=150) as response:
                    outcome = (time.monotonic(), response.status, "")
            except urllib.error.HTTPError as error:
                outcome = (time.monotonic(), error.code, error.read().decode()[:200])
            self.outcomes.append(outcome)

    def __enter__(self):
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc_info):
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=200)

    def wait_for(self, count: int, timeout_s: float = 300):
        deadline = time.monotonic() + timeout_s
        while len(self.outcomes) < count:
            assert time.monotonic() < deadline, f"only {len(self.outcomes)} answers"
            time.sleep(0.2)


def test_a_replica_killed_under_traffic_costs_no_client_an_error(replicas, gateway):
    a, b = replicas
    server, key = gateway
    status, body = ready(server.port)
    body.pop("load")                                 # admission's view (tests/api/test_ocr.py)
    assert (status, body) == (200, {"status": "ready",
                                    "model": {"name": "ensemble_ocr", "ready": True},
                                    "replicas": {"ready": 2, "total": 2}})
    with Traffic(server.port, key) as traffic:
        traffic.wait_for(12)
        assert ensemble_inferences(a) > 0 and ensemble_inferences(b) > 0   # round-robin: both
        killed_at = len(traffic.outcomes)
        a.kill()                                                # requests in flight on it
        traffic.wait_for(killed_at + 16)
        status, body = ready(server.port)
        assert (status, body["replicas"]) == (200, {"ready": 1, "total": 2})

        a.start(timeout_s=900)                                  # same ports: it comes back
        deadline = time.monotonic() + 60
        while ready(server.port)[1]["replicas"]["ready"] != 2:
            assert time.monotonic() < deadline, "the gateway did not see the replica again"
            time.sleep(0.5)
        served_before = ensemble_inferences(a)
        traffic.wait_for(len(traffic.outcomes) + 16)
    assert ensemble_inferences(a) > served_before          # it takes traffic again
    errors = [outcome for outcome in traffic.outcomes if outcome[1] != 200]
    assert errors == []
    assert len(traffic.outcomes) >= killed_at + 32
