"""Checks of the compose stack that ``make test-containers`` (tests/containers/run.sh) built and
started as deploy/README.md says; run by it, never by ``make test`` (the file name keeps it out
of pytest's collection there: it needs the running stack).

The driver passes the stack in the environment: ``STACK_DIR`` (the tree compose runs from),
``STACK_COMPOSE`` (the compose command), ``STACK_API_PORT``, ``STACK_METRICS_PORT``,
``STACK_TRITON_HTTP_PORT``, ``STACK_TRITON_METRICS_PORT`` (host ports), ``STACK_API_KEY``,
``STACK_PUBLIC_ADDRESS`` (this machine's address on its network), ``STACK_ANSWERS`` (the folder
with ``make-serve-answer.json`` and ``stack-answer.json``, what the two curl lines answered, and
the ``/api/models`` of each) and ``STACK_FIGURES`` (where the parity figures are appended).
The tests run in file order; the last one takes the stack down.
"""

import json
import os
import shlex
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from PIL import Image

from tests.helpers import IMAGES, pdftotext
from tests.image_factory import heic, images_pdf
from tests.parity import PARITY_F, parity_f

ENV = os.environ
try:
    ANSWERS = Path(ENV["STACK_ANSWERS"])
    API = f"http://127.0.0.1:{ENV['STACK_API_PORT']}"
except KeyError as missing:  # run by hand without the driver
    raise pytest.UsageError(f"{missing} is not set: run `make test-containers`, which starts "
                            "the stack and runs these checks") from None
#: Most seconds Triton may take to become ready again after a restart (models loaded,
#: OpenVINO's compiled models still in the container's /tmp).
TRITON_RESTART_S = 600
#: The Host header Django accepts (deploy/.env.example's DJANGO_ALLOWED_HOSTS has localhost).
HOST = {"Host": "localhost"}


def compose(*arguments: str, check: bool = True) -> subprocess.CompletedProcess:
    """The stack's compose command with ``arguments``, run from its tree."""
    return subprocess.run([*shlex.split(ENV["STACK_COMPOSE"]), *arguments], cwd=ENV["STACK_DIR"],
                          capture_output=True, text=True, timeout=600, check=check)


def docker(*arguments: str, check: bool = True) -> subprocess.CompletedProcess:
    """``docker ARGUMENTS`` on the private daemon (DOCKER_HOST is set by the driver)."""
    return subprocess.run(["docker", *arguments], capture_output=True, text=True, timeout=120,
                          check=check)


def container(service: str) -> str:
    """The id of a compose service's container."""
    found = compose("ps", "-q", service).stdout.split()
    assert len(found) == 1, f"{service}: {len(found)} containers"
    return found[0]


def inspect(service: str) -> dict:
    """``docker inspect`` of a service's container."""
    return json.loads(docker("inspect", container(service)).stdout)[0]


def request(url: str, *, data: bytes | None = None, headers: dict | None = None,
            timeout_s: float = 180) -> tuple[int, dict, bytes]:
    """``(status, headers, body)`` of one HTTP request; 4xx and 5xx are answers too."""
    call = urllib.request.Request(url, data=data, headers={**HOST, **(headers or {})})
    try:
        with urllib.request.urlopen(call, timeout=timeout_s) as answer:
            return answer.status, dict(answer.headers), answer.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def post_ocr(data: bytes, content_type: str, query: str = "") -> tuple[int, dict, bytes]:
    """POST ``data`` to /api/ocr as the raw body, with the stack's key."""
    return request(f"{API}/api/ocr{query}", data=data,
                   headers={"Authorization": f"Api-Key {ENV['STACK_API_KEY']}",
                            "Content-Type": content_type})


def post_korean() -> tuple[int, dict, dict]:
    """POST tests/data/images/korean.png to /api/ocr as the raw body, with the stack's key."""
    status, headers, body = post_ocr((IMAGES / "korean.png").read_bytes(), "image/png")
    return status, headers, json.loads(body)


def answer(name: str) -> dict:
    return json.loads((ANSWERS / name).read_text())


def craft_engine(models: dict) -> str:
    """What runs CRAFT, from an ``/api/models`` answer (its ``engines``)."""
    return next((engine for name, engine in models.get("engines", {}).items()
                 if name.startswith("craft ")), "(not reported)")


def test_the_runbooks_curl_answers_the_boxes_and_text_make_serve_answers():
    reference, stack = answer("make-serve-answer.json"), answer("stack-answer.json")
    assert "boxes" in reference, reference
    assert "boxes" in stack, stack
    assert stack["model"] == reference["model"]
    assert stack["image"] == reference["image"] == {"width": 629, "height": 420, "format": "PNG",
                                                         "angle": 0}
    f = parity_f([b["points"] for b in stack["boxes"]], [b["points"] for b in reference["boxes"]])
    with open(ENV["STACK_FIGURES"], "a") as figures:
        figures.write(
            f"{'parity with make serve (korean.png)':<44} {len(stack['boxes'])} boxes vs "
            f"{len(reference['boxes'])}, F {f:.3f} at IoU 0.8, text "
            f"{'identical' if stack['text'] == reference['text'] else 'DIFFERENT'} "
            f"({len(stack['text'])} characters)\n"
            f"{'  CRAFT, make serve':<44} {craft_engine(answer('make-serve-models.json'))}\n"
            f"{'  CRAFT, the cpu Triton image':<44} {craft_engine(answer('stack-models.json'))}\n")
    assert len(stack["boxes"]) == len(reference["boxes"]) == 6
    assert f >= PARITY_F
    assert stack["text"] == reference["text"]
    assert [b["text"] for b in stack["boxes"]] == [b["text"] for b in reference["boxes"]]


def test_ready_reports_the_replica():
    status, _, body = request(f"{API}/api/ready")
    assert status == 200
    body = json.loads(body)
    load = body.pop("load")
    assert body == {"status": "ready", "model": {"name": "ensemble_ocr", "ready": True},
                    "replicas": {"ready": 1, "total": 1}}
    # Nothing in flight on a quiet stack; the ledger is the compose stack's Redis.
    assert (load["pages_in_flight"], load["backlog_s"], load["saturated"]) == (0, 0.0, False)
    assert load["limit_s"] > 0 and set(load["page_s"]) == {"image", "document"}


def refused(address: str, port: int) -> bool:
    """Nothing accepts a TCP connection on ``address:port``."""
    try:
        socket.create_connection((address, port), timeout=5).close()
    except ConnectionRefusedError:
        return True
    return False


def test_metrics_are_published_on_the_loopback_only():
    public, api_port = ENV["STACK_PUBLIC_ADDRESS"], int(ENV["STACK_API_PORT"])
    assert public and not public.startswith("127."), f"no public address: {public!r}"
    # The API on every interface; /metrics is not one of its pages.
    status, _, _ = request(f"http://{public}:{api_port}/api/health")
    assert status == 200
    status, _, body = request(f"{API}/metrics")
    assert status == 404 and json.loads(body)["error"]["code"] == "not_found"
    for port, service, container_port, metric in (
            (int(ENV["STACK_METRICS_PORT"]), "gateway", "8004/tcp", "ocr_requests_total"),
            (int(ENV["STACK_TRITON_METRICS_PORT"]), "triton", "8002/tcp",
             "nv_inference_request_success"),
            (int(ENV["STACK_TRITON_HTTP_PORT"]), "triton", "8000/tcp", None)):
        bindings = inspect(service)["NetworkSettings"]["Ports"][container_port]
        assert bindings == [{"HostIp": "127.0.0.1", "HostPort": str(port)}]
        if metric:
            status, _, body = request(f"http://127.0.0.1:{port}/metrics")
            assert status == 200 and metric in body.decode()
        assert refused(public, port), f"{service} {container_port} answers on {public}:{port}"


def test_gateway_runs_as_a_non_root_user_on_a_read_only_root():
    details = inspect("gateway")
    assert details["Config"]["User"] == "10001"
    assert details["HostConfig"]["ReadonlyRootfs"] is True
    assert compose("exec", "-T", "gateway", "id", "-u").stdout.strip() == "10001"
    # Every process of the container: gunicorn's master and workers (docker top runs ps on
    # the host, which needs the pid column to pick the container's processes).
    processes = docker("top", container("gateway"), "-eo", "pid,uid,args").stdout.splitlines()[1:]
    assert len(processes) >= 3, processes
    assert all(line.split()[1] == "10001" for line in processes), processes
    written = compose("exec", "-T", "gateway", "touch", "/app/probe", check=False)
    assert written.returncode != 0 and "Read-only file system" in written.stderr
    for folder in ("/tmp", "/app/var"):
        assert compose("exec", "-T", "gateway", "touch", f"{folder}/probe",
                       check=False).returncode == 0, folder


def test_the_images_read_a_pdf_and_answer_its_searchable_pdf(tmp_path):
    page = images_pdf([Image.open(IMAGES / "korean.png")])
    status, _, body = post_ocr(page, "application/pdf")
    assert status == 200, body
    words = json.loads(body)["text"].split()
    assert len(words) == 6
    status, headers, searchable = post_ocr(page, "application/pdf", "?format=pdf")
    assert status == 200 and headers["Content-Type"] == "application/pdf"
    assert sorted(pdftotext(searchable, tmp_path).split()) == sorted(words)


def test_the_images_read_heic():
    status, _, body = post_ocr(heic(Image.open(IMAGES / "korean.png").convert("RGB")),
                               "image/heic")
    assert status == 200, body
    read = json.loads(body)
    assert read["image"] == {"width": 629, "height": 420, "format": "HEIC", "angle": 0}
    png = answer("stack-answer.json")
    assert parity_f([b["points"] for b in read["boxes"]],
                    [b["points"] for b in png["boxes"]]) >= PARITY_F


def test_a_job_is_read_by_the_job_workers_through_redis():
    """POST /api/jobs through the proxy: the gateway stores the upload on the jobs volume and
    queues the pages in redis; the job-workers container reads them."""
    document = images_pdf([Image.open(IMAGES / "korean.png")] * 2)
    key = {"Authorization": f"Api-Key {ENV['STACK_API_KEY']}"}
    status, headers, body = request(f"{API}/api/jobs", data=document,
                                    headers={**key, "Content-Type": "application/pdf"})
    assert status == 202, body
    location = headers["Location"]
    deadline = time.monotonic() + 300
    while True:
        job = json.loads(request(f"{API}{location}", headers=key)[2])
        if job["status"] in ("succeeded", "failed", "cancelled"):
            break
        assert time.monotonic() < deadline, f"job still {job['status']}: {job}\n" + \
            compose("logs", "--tail", "40", "job-workers", check=False).stdout
        time.sleep(1)
    assert job["status"] == "succeeded", job
    status, _, body = request(f"{API}{location}/result", headers=key)
    assert status == 200, body
    result = json.loads(body)
    assert [page["page"] for page in result["pages"]] == [1, 2]
    assert all(len(page["text"].split()) == 6 for page in result["pages"]), result["text"]
    # The broker keeps its queue in an append-only file on its volume.
    redis = inspect("redis")
    assert "--appendonly" in redis["Config"]["Cmd"] and redis["State"]["Running"]
    assert any(mount["Destination"] == "/data" and mount["Type"] == "volume"
               for mount in redis["Mounts"])


def wait_until(predicate, timeout_s: float, what: str) -> float:
    """Seconds until ``predicate()`` is true, polled every second.

    Raises:
        AssertionError: not within ``timeout_s``.
    """
    started = time.monotonic()
    while not predicate():
        assert time.monotonic() - started < timeout_s, f"{what}: not within {timeout_s:.0f} s"
        time.sleep(1)
    return time.monotonic() - started


def test_killed_triton_gives_503_with_retry_after_and_the_gateway_recovers():
    before = post_korean()
    assert before[0] == 200
    compose("kill", "triton")
    assert inspect("triton")["State"]["Running"] is False
    status, headers, body = post_korean()
    assert status == 503, body
    assert body["error"]["code"] == "inference_unavailable"
    assert int(headers["Retry-After"]) > 0
    status, headers, body = request(f"{API}/api/ready")
    assert status == 503 and int(headers["Retry-After"]) > 0
    assert json.loads(body)["replicas"]["ready"] == 0

    compose("start", "triton")
    seconds = wait_until(lambda: request(f"{API}/api/ready", timeout_s=10)[0] == 200,
                         TRITON_RESTART_S, "the gateway ready again")
    with open(ENV["STACK_FIGURES"], "a") as figures:
        figures.write(f"{'Triton killed, then started: ready again':<44} {seconds:.0f} s\n")
    status, _, after = post_korean()
    assert status == 200
    assert after["text"] == before[2]["text"] and len(after["boxes"]) == len(before[2]["boxes"])


def test_compose_down_v_leaves_no_container_network_or_volume():
    compose("down", "-v", "--timeout", "60")
    assert docker("ps", "-aq").stdout.split() == []
    # The private daemon has no default bridge: only its built-in host and none networks stay.
    networks = docker("network", "ls", "--format", "{{.Name}}").stdout.split()
    assert sorted(networks) == ["host", "none"]
    assert docker("volume", "ls", "-q").stdout.split() == []
