"""The deployment files in deploy/, checked statically (no GPU or cluster here; the images are
built and the compose stack run for real by ``make test-containers``, tests/containers/).

Kubernetes manifests are rendered the way ``kustomize build deploy/k8s`` renders them (for the
kustomization features they use) and validated offline against the Kubernetes JSON schemas
bundled in kubernetes-validate. Cross-file facts are checked against their sources: the ports
tritonserver really gets (the start script is run with a stand-in tritonserver), the settings
gateway/settings.py really reads, the extras the Makefile really installs.
"""

import copy
import ipaddress
import os
import re
import runpy
import shlex
import subprocess
import sys
import tempfile
import time
import tomllib
from functools import cache
from pathlib import Path

import kubernetes_validate
import pytest
import yaml
from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2

from ocr_contract.limits import LIMITS, MAX_UPLOAD_BYTES

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
K8S = DEPLOY / "k8s"
REPOSITORY = ROOT / "triton_models" / "repository"

#: Oldest Kubernetes release the manifests must be valid for.
K8S_VERSION = "1.30"
#: Extras of the project that only development installs (make setup), never the gateway image.
DEV_ONLY_EXTRAS = {"embedded", "test"}
#: Keys of kustomization.yaml that :func:`render_kustomization` implements.
KUSTOMIZE_KEYS = {"apiVersion", "kind", "namespace", "labels", "resources", "images"}
CLUSTER_SCOPED_KINDS = {"Namespace", "ClusterRole", "ClusterRoleBinding", "PriorityClass",
                        "StorageClass", "IngressClass", "CustomResourceDefinition"}


# --- helpers ------------------------------------------------------------------------------

def pod_template(doc: dict) -> dict | None:
    """The pod template of a workload (Deployment, Job, CronJob, ...), else None."""
    if doc["kind"] in ("Deployment", "Job", "StatefulSet", "DaemonSet"):
        return doc["spec"]["template"]
    if doc["kind"] == "CronJob":
        return doc["spec"]["jobTemplate"]["spec"]["template"]
    return None


def pod_spec(doc: dict) -> dict | None:
    """The pod spec of a workload, else None."""
    template = pod_template(doc)
    return template["spec"] if template else None


def all_containers(doc: dict) -> list[dict]:
    """Containers and init containers of a workload (empty for other kinds)."""
    spec = pod_spec(doc) or {}
    return spec.get("initContainers", []) + spec.get("containers", [])


def render_kustomization(directory: Path) -> list[dict]:
    """The resources ``kustomize build directory`` prints, for the features used there.

    Implements ``resources`` (files), ``namespace``, ``labels`` (metadata only) and
    ``images``. Any other key raises, so this stays an honest stand-in for kustomize.

    Raises:
        ValueError: an unsupported kustomization feature, or two resources with one name.
        FileNotFoundError: a listed resource file does not exist.
    """
    kustomization = yaml.safe_load((directory / "kustomization.yaml").read_text())
    unsupported = set(kustomization) - KUSTOMIZE_KEYS
    if unsupported:
        raise ValueError(f"kustomization.yaml uses {sorted(unsupported)}: not rendered here")
    docs = []
    for entry in kustomization["resources"]:
        path = directory / entry
        if not path.is_file():
            raise FileNotFoundError(f"kustomization.yaml lists {entry}, which does not exist")
        docs += [doc for doc in yaml.safe_load_all(path.read_text()) if doc]

    namespace = kustomization.get("namespace")
    for doc in docs:
        metadata = doc["metadata"]
        if namespace and doc["kind"] == "Namespace":
            metadata["name"] = namespace
        elif namespace and doc["kind"] not in CLUSTER_SCOPED_KINDS:
            metadata["namespace"] = namespace
        for label_set in kustomization.get("labels", []):
            if label_set.get("includeSelectors") or label_set.get("includeTemplates"):
                raise ValueError("labels with includeSelectors/includeTemplates: not rendered here")
            metadata.setdefault("labels", {}).update(label_set["pairs"])
        for container in all_containers(doc):
            for image in kustomization.get("images", []):
                name, _, tag = container["image"].partition(":")
                if name == image["name"]:
                    container["image"] = (f"{image.get('newName', name)}:"
                                          f"{image.get('newTag', tag or 'latest')}")

    keys = [(doc["kind"], doc["metadata"]["name"]) for doc in docs]
    duplicates = {key for key in keys if keys.count(key) > 1}
    if duplicates:
        raise ValueError(f"resources defined twice: {sorted(duplicates)}")
    return docs


@cache
def rendered() -> tuple[dict, ...]:
    """deploy/k8s rendered once per test session."""
    return tuple(render_kustomization(K8S))


def resource(kind: str, name: str) -> dict:
    """One rendered resource by kind and name (a copy, so tests cannot disturb each other)."""
    matches = [doc for doc in rendered() if doc["kind"] == kind and doc["metadata"]["name"] == name]
    assert len(matches) == 1, f"expected one {kind} {name!r}, found {len(matches)}"
    return copy.deepcopy(matches[0])


def container(doc: dict, name: str) -> dict:
    """A workload's (non-init) container by name."""
    matches = [c for c in pod_spec(doc)["containers"] if c["name"] == name]
    assert len(matches) == 1, f"{doc['metadata']['name']} has no container {name!r}"
    return matches[0]


def container_port(doc: dict, port) -> int:
    """A container port of a workload given by number or by name."""
    if isinstance(port, int):
        numbers = {p["containerPort"] for c in all_containers(doc) for p in c.get("ports", [])}
        assert port in numbers, f"{doc['metadata']['name']} exposes no port {port}"
        return port
    named = {p["name"]: p["containerPort"]
             for c in all_containers(doc) for p in c.get("ports", []) if "name" in p}
    assert port in named, f"{doc['metadata']['name']} has no port named {port!r}"
    return named[port]


def settings_configmap() -> dict:
    """The gateway's settings as Kubernetes gives them (ConfigMap ocr-settings)."""
    return resource("ConfigMap", "ocr-settings")["data"]


def gunicorn_settings(environ: dict[str, str]) -> dict:
    """deploy/gunicorn.conf.py's values when run with ``environ`` added to the environment."""
    saved = dict(os.environ)
    os.environ.update(environ)
    try:
        return runpy.run_path(str(DEPLOY / "gunicorn.conf.py"))
    finally:
        os.environ.clear()
        os.environ.update(saved)


def dockerfile(name: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of a Dockerfile, continuation lines joined, comments dropped."""
    instructions, pending = [], ""
    for raw in (DEPLOY / name).read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        keyword, _, arguments = (pending + line).partition(" ")
        instructions.append((keyword.upper(), arguments.strip()))
        pending = ""
    return instructions


def instruction_args(name: str, keyword: str) -> list[str]:
    """Arguments of every ``keyword`` instruction (FROM, RUN, ...) of a Dockerfile in deploy/."""
    return [args for key, args in dockerfile(name) if key == keyword]


def gateway_image_environment() -> dict[str, str]:
    """The variables deploy/Dockerfile.gateway sets with ENV (PATH left out)."""
    found = re.findall(r"\b([A-Z][A-Z0-9_]*)=(\S+)", " ".join(
        instruction_args("Dockerfile.gateway", "ENV")))
    return {name: value for name, value in found if name != "PATH"}


def pip_install_targets(command: str) -> list[list[str]]:
    """Positional arguments of each ``python -m pip install`` in a shell command."""
    found = []
    for part in re.split(r"&&|\|\||;", command):
        if "pip install" not in part:
            continue  # (and a `;` in another command's quotes may have cut it anywhere)
        words = shlex.split(part)
        for i in range(len(words) - 2):
            if words[i:i + 3] == ["-m", "pip", "install"]:
                found.append([w for w in words[i + 3:] if not w.startswith("-")])
    return found


def split_extras(target: str) -> tuple[str, set[str]]:
    """``".[a,b]"`` -> ``(".", {"a", "b"})``."""
    match = re.fullmatch(r"([^\[]+)(?:\[([^\]]*)\])?", target)
    assert match, target
    return match.group(1), {e.strip() for e in (match.group(2) or "").split(",") if e.strip()}


def env_file(path: Path) -> tuple[dict[str, str], set[str]]:
    """(set variables, commented-out variable names) of a KEY=value file."""
    values, commented = {}, set()
    for line in path.read_text().splitlines():
        if match := re.fullmatch(r"([A-Z][A-Z0-9_]*)=(.*)", line):
            values[match.group(1)] = match.group(2)
        elif match := re.fullmatch(r"#\s?([A-Z][A-Z0-9_]*)=.*", line):
            commented.add(match.group(1))
    return values, commented


#: Where the product's code reads its settings: the gateway, its packages, the contract, the
#: model repository's code, gunicorn's config.
SETTINGS_SOURCES = ("gateway", "ocr_api", "ocr_admin", "ocr_ops", "ocr_inference", "ocr_embedded",
                    "ocr_proxy", "contract", "triton_models/ocr_pipeline",
                    "triton_models/repository", "deploy/gunicorn.conf.py")
#: Upper-case names in that code that are not settings: request headers (Django's META
#: names), Django's own bootstrap variable, the tests' Chromium.
#: Request headers, Django's own, and the test runs' knobs (tests/runner.py sets
#: OCR_PROCESS_GROUPS_FILE for ocr_embedded.processes): nothing an operator sets.
NOT_SETTINGS = {"HTTP_X_FORWARDED_FOR", "HTTP_X_FORWARDED_PROTO", "HTTP_AUTHORIZATION",
                "HTTP_X_API_KEY", "HTTP_X_REQUEST_ID", "DJANGO_SETTINGS_MODULE",
                "OCR_TEST_CHROMIUM", "OCR_PROCESS_GROUPS_FILE"}
SETTING_NAME = re.compile(r"[\"']((?:OCR|TRITON|DJANGO|GUNICORN|HTTP|LOG|DATABASE|CACHE|"
                          r"PROMETHEUS|TESSDATA|METRICS)_[A-Z0-9_]+|OCR_ENGINE)[\"']")


def settings_read_from_environment() -> set[str]:
    """Every environment variable the product reads: each string literal of its code that looks
    like a setting (``OCR_…``, ``TRITON_…``, ``DJANGO_…``, ``GUNICORN_…``…)."""
    names = set()
    for source in SETTINGS_SOURCES:
        path = ROOT / source
        for file in ([path] if path.is_file() else path.rglob("*.py")):
            names |= set(SETTING_NAME.findall(file.read_text()))
    return names - NOT_SETTINGS


class _ComposeLoader(yaml.SafeLoader):
    """YAML loader for compose files: knows compose's ``!reset`` and ``!override`` tags."""


_ComposeLoader.add_constructor("!reset", lambda loader, node: {"!reset": True})
_ComposeLoader.add_constructor(
    "!override", lambda loader, node: loader.construct_mapping(node)
    if isinstance(node, yaml.MappingNode) else loader.construct_sequence(node))


def compose(name: str = "docker-compose.yml") -> dict:
    """A compose file of deploy/, parsed."""
    return yaml.load((DEPLOY / name).read_text(), Loader=_ComposeLoader)


def size_bytes(text: str) -> int:
    """Docker's size strings: ``2gb``, ``512m``, ``67108864``."""
    match = re.fullmatch(r"(\d+)\s*([kmg]?)i?b?", str(text).lower())
    assert match, text
    return int(match.group(1)) * 1024 ** " kmg".index(match.group(2) or " ")


def k8s_quantity_bytes(text: str) -> int:
    """Kubernetes binary quantities: ``2Gi``, ``512Mi``."""
    match = re.fullmatch(r"(\d+)(Ki|Mi|Gi)?", str(text))
    assert match, text
    return int(match.group(1)) * {None: 1, "Ki": 1024, "Mi": 1024**2, "Gi": 1024**3}[match.group(2)]


TRITON_START = [sys.executable, "-m", "ocr_pipeline.tritonserver"]


@cache
def triton_command(flavour: str, extra: str = "") -> tuple[str, ...]:
    """The tritonserver arguments the Triton image's start command (``python3 -m
    ocr_pipeline.tritonserver``) really passes, to a stand-in binary."""
    with tempfile.TemporaryDirectory() as tmp:
        fake = Path(tmp) / "tritonserver"
        fake.write_text('#!/bin/sh\nfor arg in "$@"; do echo "$arg"; done\n')
        fake.chmod(0o755)
        environ = {k: v for k, v in os.environ.items() if not k.startswith("TRITON_")}
        environ.update(PATH=f"{tmp}:{os.environ['PATH']}", OCR_TRITON_FLAVOUR=flavour,
                       TRITON_EXTRA_ARGS=extra)
        done = subprocess.run(TRITON_START, env=environ, capture_output=True, text=True,
                              timeout=30)
    assert done.returncode == 0, done.stderr
    return tuple(done.stdout.splitlines())


def flag(arguments, name: str) -> list[str]:
    """Values of ``--name=value`` flags."""
    return [a.split("=", 1)[1] for a in arguments if a.startswith(f"--{name}=")]

def flavours() -> set[str]:
    """The repository's flavours: cpu (each config.pbtxt) and every configs/<name>.pbtxt."""
    return {"cpu"} | {p.stem for p in REPOSITORY.glob("*/configs/*.pbtxt")}


def model_config(model: str, flavour: str) -> model_config_pb2.ModelConfig:
    """The config Triton loads for ``model`` with ``--model-config-name=<flavour>``."""
    custom = REPOSITORY / model / "configs" / f"{flavour}.pbtxt"
    path = custom if flavour != "cpu" and custom.exists() else REPOSITORY / model / "config.pbtxt"
    return text_format.Parse(path.read_text(), model_config_pb2.ModelConfig())


def minimum_shared_memory() -> int:
    """/dev/shm the Python backend needs at start: one pool per Python model instance, in the
    flavour with the most of them."""
    pool = int(flag(triton_command("cpu"), "backend-config")[0].rsplit("=", 1)[1])
    models = [p.parent.name for p in REPOSITORY.glob("*/config.pbtxt")]
    instances = []
    for flavour in flavours():
        configs = [model_config(model, flavour) for model in models]
        instances.append(sum(sum(g.count for g in c.instance_group) or 1
                             for c in configs if c.backend == "python"))
    assert max(instances) >= 2
    return max(instances) * pool


# --- Kubernetes ---------------------------------------------------------------------------

def test_kustomization_lists_every_manifest_and_renders():
    listed = yaml.safe_load((K8S / "kustomization.yaml").read_text())["resources"]
    on_disk = {p.name for p in K8S.glob("*.yaml")} - {"kustomization.yaml"}
    assert set(listed) == on_disk
    kinds = {(doc["kind"], doc["metadata"]["name"]) for doc in rendered()}
    assert {("Deployment", "ocr-gateway"), ("Deployment", "ocr-triton"),
            ("Service", "ocr-gateway"), ("Service", "ocr-triton-headless"),
            ("Ingress", "ocr-gateway"), ("HorizontalPodAutoscaler", "ocr-gateway"),
            ("HorizontalPodAutoscaler", "ocr-triton"), ("Job", "ocr-gateway-migrate"),
            ("ConfigMap", "ocr-settings"), ("Secret", "ocr-secrets"),
            ("CronJob", "ocr-audit-purge"), ("NetworkPolicy", "ocr-triton")} <= kinds


def test_every_manifest_validates_against_the_kubernetes_schemas_offline():
    errors = []
    for doc in rendered():
        try:
            kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
        except kubernetes_validate.ValidationError as exc:
            path = ".".join(str(p) for p in exc.path)
            errors.append(f"{doc['kind']}/{doc['metadata']['name']}: {path}: {exc.message}")
    assert not errors, "\n".join(errors)


def test_the_schema_check_catches_a_misspelt_field():
    deployment = resource("Deployment", "ocr-gateway")
    container(deployment, "gateway")["livenesProbe"] = {"httpGet": {"path": "/", "port": 80}}
    with pytest.raises(kubernetes_validate.ValidationError, match="livenesProbe"):
        kubernetes_validate.validate(deployment, K8S_VERSION, strict=True)


def test_render_refuses_kustomize_features_it_does_not_implement(tmp_path):
    (tmp_path / "kustomization.yaml").write_text("resources: []\npatches: []\n")
    with pytest.raises(ValueError, match="patches"):
        render_kustomization(tmp_path)


def test_everything_lands_in_the_kustomization_namespace():
    namespace = yaml.safe_load((K8S / "kustomization.yaml").read_text())["namespace"]
    assert resource("Namespace", namespace)
    for doc in rendered():
        if doc["kind"] not in CLUSTER_SCOPED_KINDS:
            assert doc["metadata"]["namespace"] == namespace, doc["metadata"]["name"]
        assert doc["metadata"]["labels"]["app.kubernetes.io/part-of"] == "ocr-gateway"


def test_images_are_set_by_kustomize():
    images = {c["image"] for doc in rendered() for c in all_containers(doc)}
    assert images == {"registry.example.com/ocr/ocr-gateway:1.0.0",
                      "registry.example.com/ocr/ocr-triton:1.0.0", "redis:7-bookworm"}


def test_workloads_select_their_own_pods_only():
    workloads = [doc for doc in rendered() if pod_template(doc)]
    assert len(workloads) == 6
    for doc in workloads:
        labels = pod_template(doc)["metadata"]["labels"]
        selector = doc["spec"].get("selector", {}).get("matchLabels", labels)
        assert selector.items() <= labels.items(), doc["metadata"]["name"]
        others = [other["metadata"]["name"] for other in workloads if other is not doc
                  and selector.items() <= pod_template(other)["metadata"]["labels"].items()]
        assert not others, f"{doc['metadata']['name']}'s selector also matches {others}"


def _selected_workload(selector: dict) -> dict:
    matches = [doc for doc in rendered() if doc["kind"] == "Deployment"
               and selector.items() <= doc["spec"]["template"]["metadata"]["labels"].items()]
    assert len(matches) == 1, f"selector {selector} matches {len(matches)} Deployments"
    return matches[0]


def test_services_route_to_the_deployments_container_ports():
    routes = {}
    for service in (d for d in rendered() if d["kind"] == "Service"):
        workload = _selected_workload(service["spec"]["selector"])
        for port in service["spec"]["ports"]:
            routes[(service["metadata"]["name"], port["port"])] = (
                workload["metadata"]["name"], container_port(workload, port["targetPort"]))
    assert routes == {
        ("ocr-gateway", 80): ("ocr-gateway", 8000),
        ("ocr-triton-headless", 8001): ("ocr-triton", 8001),
        ("ocr-triton-headless", 8000): ("ocr-triton", 8000),
        ("ocr-triton-headless", 8002): ("ocr-triton", 8002),
        ("ocr-redis", 6379): ("ocr-redis", 6379),
    }


def test_gateway_balances_over_every_triton_pod_through_the_headless_service():
    from ocr_inference.client import CHANNEL_ARGS

    url = settings_configmap()["TRITON_GRPC_URL"]
    match = re.fullmatch(r"dns:///([a-z0-9-]+):(\d+)", url)
    assert match, f"TRITON_GRPC_URL {url!r} is not a dns:/// target"
    service = resource("Service", match.group(1))
    assert service["spec"]["clusterIP"] == "None"
    grpc = [p for p in service["spec"]["ports"] if p["port"] == int(match.group(2))]
    assert grpc and grpc[0]["name"] == "grpc"
    triton = _selected_workload(service["spec"]["selector"])
    assert triton["metadata"]["name"] == "ocr-triton"
    assert container_port(triton, grpc[0]["targetPort"]) == int(flag(triton_command("gpu"), "grpc-port")[0])
    # dns:/// alone resolves every address; round_robin makes the channel use them all.
    assert ("grpc.lb_policy_name", "round_robin") in CHANNEL_ARGS
    metrics = settings_configmap()["TRITON_METRICS_URL"]
    assert metrics == f"http://{match.group(1)}:8002/metrics"


def test_gateway_and_migration_job_read_the_configmap_and_secret():
    sources = {"configMapRef": "ocr-settings", "secretRef": "ocr-secrets"}
    for doc in (resource("Deployment", "ocr-gateway"), resource("Job", "ocr-gateway-migrate"),
                resource("CronJob", "ocr-audit-purge")):
        for c in all_containers(doc):
            assert [{k: v["name"]} for e in c["envFrom"] for k, v in e.items()] == \
                [{k: v} for k, v in sources.items()], c["name"]
    assert resource("Secret", "ocr-secrets")["stringData"].keys() == {"DJANGO_SECRET_KEY", "DATABASE_URL"}
    # Committed values are placeholders, never real secrets.
    assert all("REPLACE-ME" in v for v in resource("Secret", "ocr-secrets")["stringData"].values())


def container_environment(doc: dict, name: str, pod_ip: str) -> dict[str, str]:
    """A container's environment as the kubelet builds it: envFrom first, then env in order,
    each value's $(VAR) expanded from what is defined so far; env overrides envFrom."""
    environment = {}
    c = container(doc, name)
    for source in c.get("envFrom", []):
        if "configMapRef" in source:
            environment.update(resource("ConfigMap", source["configMapRef"]["name"])["data"])
        if "secretRef" in source:
            environment.update(resource("Secret", source["secretRef"]["name"])["stringData"])
    for variable in c.get("env", []):
        if "value" in variable:
            value = re.sub(r"\$\((\w+)\)", lambda m: environment.get(m.group(1), m.group(0)),
                           variable["value"])
        else:
            assert variable["valueFrom"] == {"fieldRef": {"fieldPath": "status.podIP"}}
            value = pod_ip
        environment[variable["name"]] = value
    return environment


def test_gateway_probes_hit_real_urls_with_an_allowed_host():
    from django.urls import resolve

    deployment = resource("Deployment", "ocr-gateway")
    gateway = container(deployment, "gateway")
    probes = {kind: gateway[kind]["httpGet"] for kind in ("livenessProbe", "readinessProbe")}
    assert probes["livenessProbe"]["path"] == "/api/health"
    assert probes["readinessProbe"]["path"] == "/api/ready"
    # Probes (and Prometheus) send Host: <pod IP>; Django must accept it.
    allowed = container_environment(deployment, "gateway", "10.4.2.7")["DJANGO_ALLOWED_HOSTS"]
    assert allowed.split(",") == settings_configmap()["DJANGO_ALLOWED_HOSTS"].split(",") + ["10.4.2.7"]
    for probe in probes.values():
        assert resolve(probe["path"]).url_name in ("health", "ready")
        assert container_port(deployment, probe["port"]) == 8000
        assert "httpHeaders" not in probe
    # Prometheus scrapes the metrics port gunicorn's master serves, not the API's port.
    annotations = deployment["spec"]["template"]["metadata"]["annotations"]
    conf = gunicorn_settings({**gateway_image_environment(), **settings_configmap()})
    assert (annotations["prometheus.io/path"], int(annotations["prometheus.io/port"])) == (
        "/metrics", container_port(deployment, "metrics"))
    assert (conf["metrics_host"], conf["metrics_port"]) == (
        "0.0.0.0", container_port(deployment, "metrics"))
    assert container_port(deployment, "metrics") != container_port(deployment, "http")
    # A busy gateway is not restarted: liveness gives up only after the longest inference.
    liveness = gateway["livenessProbe"]
    timeout_s = float(settings_configmap()["TRITON_TIMEOUT_S"])
    assert liveness["periodSeconds"] * liveness["failureThreshold"] > timeout_s
    assert gateway["resources"]["requests"]["cpu"]  # the CPU HPA's 100 %


def test_gateway_pods_outlive_their_in_flight_requests():
    deployment = resource("Deployment", "ocr-gateway")
    gateway = container(deployment, "gateway")
    graceful = gunicorn_settings(settings_configmap())["graceful_timeout"]
    pre_stop = int(gateway["lifecycle"]["preStop"]["exec"]["command"][-1])
    assert pod_spec(deployment)["terminationGracePeriodSeconds"] > pre_stop + graceful
    assert deployment["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
    waits = pod_spec(deployment)["initContainers"][0]["command"][-1]
    assert "manage.py migrate --check" in waits


def test_triton_pod_gets_a_gpu_probes_metrics_and_shared_memory():
    deployment = resource("Deployment", "ocr-triton")
    triton = container(deployment, "triton")
    assert triton["resources"]["limits"]["nvidia.com/gpu"] == 1
    assert triton["resources"]["requests"]["nvidia.com/gpu"] == 1
    arguments = triton_command("gpu")
    http_port = int(flag(arguments, "http-port")[0])
    assert triton["livenessProbe"]["httpGet"]["path"] == "/v2/health/live"
    for probe in ("readinessProbe", "startupProbe"):
        assert triton[probe]["httpGet"]["path"] == "/v2/health/ready"
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        assert container_port(deployment, triton[probe]["httpGet"]["port"]) == http_port
    annotations = deployment["spec"]["template"]["metadata"]["annotations"]
    assert annotations["prometheus.io/scrape"] == "true"
    assert annotations["prometheus.io/path"] == "/metrics"
    assert int(annotations["prometheus.io/port"]) == container_port(deployment, "metrics") \
        == int(flag(arguments, "metrics-port")[0])
    mounts = {m["mountPath"]: m["name"] for m in triton["volumeMounts"]}
    shm = {v["name"]: v for v in pod_spec(deployment)["volumes"]}[mounts["/dev/shm"]]["emptyDir"]
    assert shm["medium"] == "Memory"
    assert k8s_quantity_bytes(shm["sizeLimit"]) >= minimum_shared_memory()


def test_hpas_scale_the_deployments_they_name():
    gateway, triton = resource("HorizontalPodAutoscaler", "ocr-gateway"), resource(
        "HorizontalPodAutoscaler", "ocr-triton")
    assert gateway["spec"]["scaleTargetRef"]["name"] == "ocr-gateway"
    assert gateway["spec"]["metrics"][0]["resource"]["name"] == "cpu"
    assert triton["spec"]["scaleTargetRef"]["name"] == "ocr-triton"
    metric = triton["spec"]["metrics"][0]
    assert metric["type"] == "Pods"
    # The adapter rule that produces the metric is written out next to it, from Triton's
    # queue-time counter.
    text = (K8S / "triton-hpa.yaml").read_text()
    assert f'as: "{metric["pods"]["metric"]["name"]}"' in text
    assert "rate(nv_inference_queue_duration_us{" in text
    for hpa in (gateway, triton):
        target = resource("Deployment", hpa["spec"]["scaleTargetRef"]["name"])
        assert "replicas" not in target["spec"], "the HPA owns the replica count"
        assert hpa["spec"]["minReplicas"] >= 1


def ingress_routes(paths: list[dict], url_path: str) -> bool:
    """Whether an Ingress rule's ``paths`` send ``url_path`` to a backend (Exact: the whole
    path; Prefix: whole path elements, as the Kubernetes Ingress API defines them)."""
    for entry in paths:
        if entry["pathType"] == "Exact" and url_path == entry["path"]:
            return True
        if entry["pathType"] == "Prefix":
            prefix = entry["path"].rstrip("/")
            if url_path == prefix or url_path.startswith(prefix + "/"):
                return True
    return False


def gateway_limit(setting: str) -> int:
    """A limit as the Kubernetes gateway gets it: the ConfigMap's value, else the contract's
    default."""
    limit = next(limit for limit in LIMITS if limit.setting == setting)
    return int(settings_configmap().get(setting, limit.default))


def test_ingress_routes_every_page_the_site_links_to_but_not_metrics():
    from django.contrib import admin
    from django.templatetags.static import static
    from django.urls import Resolver404, resolve, reverse

    ingress = resource("Ingress", "ocr-gateway")
    rule = ingress["spec"]["rules"][0]
    paths = rule["http"]["paths"]
    # The demo page (also admin's "view site" link, and where the demo's sign-in returns),
    # the API and its docs, the admin, the static files.
    linked = ["/", admin.site.site_url, reverse("ocr"), reverse("docs"), reverse("admin:index"),
              reverse("admin:login"), static("ocr_api/demo.js")]
    for url_path in linked:
        assert ingress_routes(paths, url_path), f"the Ingress does not route {url_path}"
        if not url_path.startswith(static("")):
            resolve(url_path)  # a page of the gateway, not a 404
    # Nothing else: not the metrics, not an unknown path at the top.
    assert not ingress_routes(paths, "/metrics")
    assert not ingress_routes(paths, "/anything")
    with pytest.raises(Resolver404):
        resolve("/metrics")      # metrics are on their own port, not the API's
    for path in paths:
        backend = path["backend"]["service"]
        service = resource("Service", backend["name"])
        assert backend["name"] == "ocr-gateway"
        assert backend["port"]["name"] in {p["name"] for p in service["spec"]["ports"]}
    assert rule["host"] in settings_configmap()["DJANGO_ALLOWED_HOSTS"].split(",")
    # TLS with the Secret the runbook has the operator create.
    assert ingress["spec"]["tls"] == [{"hosts": [rule["host"]], "secretName": "ocr-gateway-tls"}]


def test_ingress_lets_every_body_the_gateway_judges_reach_it():
    """nginx refuses a body over proxy-body-size with an HTML 413: every body the gateway
    accepts, single image or batch, plus the multipart framing it allows, must pass."""
    from ocr_api.intake.uploads import MULTIPART_SLACK_BYTES

    annotations = resource("Ingress", "ocr-gateway")["metadata"]["annotations"]
    proxy_limit = size_bytes(annotations["nginx.ingress.kubernetes.io/proxy-body-size"])
    largest = max(gateway_limit("OCR_MAX_UPLOAD_BYTES"),
                  gateway_limit("OCR_BATCH_MAX_UPLOAD_BYTES")) + MULTIPART_SLACK_BYTES
    assert gateway_limit("OCR_BATCH_MAX_UPLOAD_BYTES") == 40 * 1024 * 1024
    assert proxy_limit > largest
    assert int(annotations["nginx.ingress.kubernetes.io/proxy-read-timeout"]) > float(
        settings_configmap()["TRITON_TIMEOUT_S"])
    # Jobs take larger documents, on their own path only.
    jobs = resource("Ingress", "ocr-gateway-jobs")
    paths = jobs["spec"]["rules"][0]["http"]["paths"]
    assert [(p["path"], p["pathType"]) for p in paths] == [("/api/jobs", "Exact")]
    assert size_bytes(jobs["metadata"]["annotations"][
        "nginx.ingress.kubernetes.io/proxy-body-size"]) > \
        gateway_limit("OCR_JOB_MAX_BYTES") + MULTIPART_SLACK_BYTES
    assert jobs["spec"]["tls"] == resource("Ingress", "ocr-gateway")["spec"]["tls"]
    # The runbook's proxy for compose gets the same limit.
    assert f"client_max_body_size {annotations['nginx.ingress.kubernetes.io/proxy-body-size']}" \
        in (DEPLOY / "README.md").read_text()


def test_migration_job_migrates_with_the_gateway_image():
    job = resource("Job", "ocr-gateway-migrate")
    migrate = container(job, "migrate")
    assert migrate["command"] == ["python", "manage.py", "migrate", "--no-input"]
    assert migrate["image"] == container(resource("Deployment", "ocr-gateway"), "gateway")["image"]


def test_audit_purge_runs_an_existing_command_with_the_gateway_image():
    purge = container(resource("CronJob", "ocr-audit-purge"), "purge")
    assert purge["command"][:2] == ["python", "manage.py"]
    command = ROOT / "ocr_api" / "management" / "commands" / f"{purge['command'][2]}.py"
    assert command.is_file(), f"no management command {purge['command'][2]}"
    assert purge["image"] == container(resource("Deployment", "ocr-gateway"), "gateway")["image"]
    # Expired jobs too, with their uploads (on the jobs' volume).
    jobs = container(resource("CronJob", "ocr-audit-purge"), "purge-jobs")
    assert jobs["command"] == ["python", "manage.py", "purge_jobs"]
    assert (ROOT / "ocr_jobs" / "management" / "commands" / "purge_jobs.py").is_file()
    assert jobs["image"] == purge["image"]
    assert {"name": "jobs", "mountPath": "/app/var/jobs"} in jobs["volumeMounts"]


def _claim(doc: dict, volume: str) -> str:
    return next(v for v in pod_spec(doc)["volumes"]
                if v["name"] == volume)["persistentVolumeClaim"]["claimName"]


def test_redis_is_one_pod_with_its_append_only_file_on_a_volume():
    redis = resource("Deployment", "ocr-redis")
    assert redis["spec"]["replicas"] == 1 and redis["spec"]["strategy"] == {"type": "Recreate"}
    server = container(redis, "redis")
    options = dict(zip(server["command"][1::2], server["command"][2::2]))
    assert server["command"][0] == "redis-server" and options["--appendonly"] == "yes"
    mount = next(m for m in server["volumeMounts"] if m["mountPath"] == options["--dir"])
    claim = resource("PersistentVolumeClaim", _claim(redis, mount["name"]))
    assert claim["spec"]["accessModes"] == ["ReadWriteOnce"]
    url = settings_configmap()["OCR_BROKER_URL"]
    match = re.fullmatch(r"redis://([a-z0-9-]+):(\d+)/0", url)
    assert match and resource("Service", match.group(1))["spec"]["ports"][0]["port"] == \
        int(match.group(2))
    # Only the gateway and the job workers reach it.
    policy = resource("NetworkPolicy", "ocr-redis")
    sources = [peer["podSelector"]["matchLabels"]["app.kubernetes.io/name"]
               for rule in policy["spec"]["ingress"] for peer in rule["from"]]
    assert sorted(sources) == ["ocr-gateway", "ocr-job-workers"]


def test_job_workers_run_with_the_gateway_image_settings_and_uploads():
    workers, gateway = resource("Deployment", "ocr-job-workers"), resource("Deployment",
                                                                           "ocr-gateway")
    worker = container(workers, "worker")
    assert worker["command"][:3] == ["python", "manage.py", "run_job_workers"]
    assert worker["image"] == container(gateway, "gateway")["image"]
    assert worker["envFrom"] == container(gateway, "gateway")["envFrom"]
    # Both see the same uploads, on a volume pods on several nodes share.
    var = gateway_image_environment()["OCR_VAR_DIR"]
    for doc, name in ((workers, "worker"), (gateway, "gateway")):
        mount = next(m for m in container(doc, name)["volumeMounts"]
                     if m["mountPath"] == f"{var}/jobs")
        assert _claim(doc, mount["name"]) == "ocr-jobs"
        assert pod_spec(doc)["securityContext"]["fsGroup"] == 10001
    assert resource("PersistentVolumeClaim", "ocr-jobs")["spec"]["accessModes"] == [
        "ReadWriteMany"]


def test_keda_scales_the_job_workers_on_the_pages_still_to_read():
    """KEDA's ScaledObject is a custom resource (no schema in kubernetes-validate): kept out of
    the kustomization, in keda/, and checked here field by field."""
    from ocr_jobs.models import JobPage

    docs = [d for d in yaml.safe_load_all((K8S / "keda" / "job-workers-scaledobject.yaml")
                                          .read_text()) if d]
    assert len(docs) == 1
    scaled = docs[0]
    assert (scaled["apiVersion"], scaled["kind"]) == ("keda.sh/v1alpha1", "ScaledObject")
    namespace = yaml.safe_load((K8S / "kustomization.yaml").read_text())["namespace"]
    assert scaled["metadata"]["namespace"] == namespace
    assert scaled["spec"]["scaleTargetRef"]["name"] == "ocr-job-workers"
    assert resource("Deployment", "ocr-job-workers")
    assert 1 <= scaled["spec"]["minReplicaCount"] <= scaled["spec"]["maxReplicaCount"]
    trigger, = scaled["spec"]["triggers"]
    assert trigger["type"] == "postgresql"
    query = trigger["metadata"]["query"]
    table, column = JobPage._meta.db_table, JobPage._meta.get_field("status").column
    assert f"FROM {table} WHERE {column} IN ('pending', 'queued')" in query
    assert {JobPage.PENDING, JobPage.QUEUED} == {"pending", "queued"}
    assert int(trigger["metadata"]["targetQueryValue"]) > 0
    # The connection string is an environment variable of the scaled container.
    assert trigger["metadata"]["connectionFromEnv"] in resource("Secret", "ocr-secrets")[
        "stringData"]


def test_only_the_gateway_reaches_tritons_grpc_port():
    policy = resource("NetworkPolicy", "ocr-triton")
    assert _selected_workload(policy["spec"]["podSelector"]["matchLabels"])["metadata"]["name"] == "ocr-triton"
    grpc_from = [rule["from"] for rule in policy["spec"]["ingress"]
                 if {"port": "grpc"} in rule["ports"]]
    assert grpc_from == [[{"podSelector": {"matchLabels": {"app.kubernetes.io/name": "ocr-gateway"}}}]]
    assert not any({"port": "http"} in rule["ports"] for rule in policy["spec"]["ingress"])


# --- Triton image -------------------------------------------------------------------------



def arg_default(name: str, arg: str) -> str:
    """The default of ``ARG arg=...`` in a Dockerfile of deploy/ (declared once with one)."""
    values = [a.split("=", 1)[1] for a in instruction_args(name, "ARG")
              if a.startswith(f"{arg}=")]
    assert len(values) == 1, f"{name}: ARG {arg} has {len(values)} defaults"
    return values[0]


def stages(name: str) -> dict[str, str]:
    """A Dockerfile's named stages: name -> what it is built FROM."""
    found = {}
    for arguments in instruction_args(name, "FROM"):
        words = arguments.split()
        if len(words) == 3 and words[1].upper() == "AS":
            found[words[2]] = words[0]
    return found


def test_triton_image_pins_a_release_whose_python_runs_ocr_pipeline():
    tag = arg_default("Dockerfile.triton", "TRITON_TAG")
    match = re.fullmatch(r"(\d\d)\.(\d\d)-py3", tag)
    assert match, f"TRITON_TAG {tag!r} is not a pinned NGC release"
    # The base is a build argument (a registry mirror, a stand-in), NGC's release by default.
    assert arg_default("Dockerfile.triton", "TRITON_IMAGE") == \
        "nvcr.io/nvidia/tritonserver:${TRITON_TAG}"
    assert stages("Dockerfile.triton")["server-gpu"] == "${TRITON_IMAGE}"
    # Releases before 24.12 ship Python 3.10; ocr_pipeline requires a newer one.
    requires = tomllib.loads((ROOT / "triton_models" / "pyproject.toml").read_text())["project"][
        "requires-python"]
    assert requires == ">=3.11"
    assert (int(match.group(1)), int(match.group(2))) >= (24, 12)


def test_triton_image_installs_ocr_pipeline_and_fetches_verified_weights():
    runs = instruction_args("Dockerfile.triton", "RUN")
    installs = [t for run in runs for t in pip_install_targets(run)]
    # The contract first (triton_models depends on it), then the model code with its extras.
    # (pip itself first, in the cpu flavours' virtualenv)
    assert installs == [["pip"], ["./contract", "./triton_models${extras}"]]
    install_run = next(run for run in runs if "pip install" in run and "triton_models" in run)
    extras = {flavour: value for patterns, value in re.findall(r"([\w|]+)\) extras=\"([^\"]*)\"",
                                                               install_run)
              for flavour in patterns.split("|")}
    optional = tomllib.loads((ROOT / "triton_models" / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    # Every flavour builds; only gpu runs the networks outside Python, without the cpu engines,
    # on NGC's server; the others on the one nvidia-pytriton carries.
    assert extras == {flavour: "" if flavour == "gpu" else "[cpu,quantize,tritonserver]"
                      for flavour in flavours()}
    assert {"cpu", "quantize"} <= optional.keys()
    assert [r for r in optional["tritonserver"] if r.startswith("nvidia-pytriton")] == [
        "nvidia-pytriton==0.7.0"]
    # cpu flavours also make the INT8 networks, calibrated on the calibration set (never the
    # test images), and carry the validation set precision auto checks them against.
    from ocr_pipeline import quantization, validation

    quantize = [run for run in runs if "ocr_pipeline.quantization" in run]
    assert len(quantize) == 1
    assert "--repository /models --images /opt/ocr/data/calibration" in quantize[0]
    copies = instruction_args("Dockerfile.triton", "COPY")
    assert f"tests/data/{quantization.DEFAULT_IMAGES.name} /opt/ocr/data/calibration" in copies
    assert f"tests/data/{validation.DEFAULT_FOLDER.name} /opt/ocr/data/validation" in copies
    assert f"{validation.ENVIRONMENT}=/opt/ocr/data/validation" in " ".join(
        instruction_args("Dockerfile.triton", "ENV")).split()
    assert "COPY triton_models/repository /models" in [
        f"{k} {a}" for k, a in dockerfile("Dockerfile.triton")]
    fetch = [run for run in runs if "ocr_pipeline.weights" in run]
    assert len(fetch) == 1 and "python3 -m ocr_pipeline.weights --repository /models" in fetch[0]
    assert flag(triton_command("gpu"), "model-repository") == ["/models"]
    assert "FLAVOUR=gpu" in instruction_args("Dockerfile.triton", "ARG")
    image_env = " ".join(instruction_args("Dockerfile.triton", "ENV")).split()
    assert "OCR_TRITON_FLAVOUR=${FLAVOUR}" in image_env
    # Compiled models and precision decisions somewhere the non-root user may write.
    assert "OCR_ENGINE_CACHE_DIR=/tmp/ocr-engine-cache" in image_env


@pytest.mark.parametrize("flavour", sorted(flavours()))
def test_triton_starts_the_ensembles_in_explicit_mode(flavour):
    arguments = triton_command(flavour)
    assert flag(arguments, "model-control-mode") == ["explicit"]
    assert flag(arguments, "load-model") == ["ensemble_ocr", "ensemble_ocr_db", "recognizer",
                                             "tesseract"]
    assert (REPOSITORY / "ensemble_ocr" / "config.pbtxt").is_file()
    assert (REPOSITORY / "ensemble_ocr_db" / "config.pbtxt").is_file()
    assert flag(arguments, "allow-metrics") == ["true"]
    assert int(flag(arguments, "backend-config")[0].rsplit("=", 1)[1]) >= 64 * 1024 * 1024
    assert flag(arguments, "model-config-name") == ([] if flavour == "cpu" else [flavour])
    # Rate-limiter resources in a config only take effect with the rate limiter on.
    models = [p.parent.name for p in REPOSITORY.glob("*/config.pbtxt")]
    if any(group.HasField("rate_limiter") for model in models
           for group in model_config(model, flavour).instance_group):
        assert flag(arguments, "rate-limit") == ["execution_count"]


def test_gpu_flavour_puts_the_networks_on_the_gpu_and_extra_flags_pass_through():
    on_gpu = {model for model in (p.parent.name for p in REPOSITORY.glob("*/config.pbtxt"))
              if any(g.kind == model_config_pb2.ModelInstanceGroup.KIND_GPU
                     for g in model_config(model, "gpu").instance_group)}
    assert on_gpu == {"craft", "refinenet", "db", "recognizer"}
    assert flag(triton_command("gpu"), "model-config-name") == ["gpu"]
    assert triton_command("gpu", "--log-verbose=1")[-1] == "--log-verbose=1"


def test_cpu_image_runs_the_tritonserver_of_the_nvidia_pytriton_wheel(tmp_path):
    from ocr_pipeline import tritonserver

    stage, set_in = None, {}
    for keyword, arguments in dockerfile("Dockerfile.triton"):
        if keyword == "FROM":
            stage = arguments.split()[-1]
        elif keyword == "ENV" and "OCR_TRITON_SERVER=" in arguments:
            set_in[stage] = re.search(r"OCR_TRITON_SERVER=(\S+)", arguments).group(1)
    assert set_in == {"server-cpu": "pytriton"}      # batched builds on server-cpu
    assert stages("Dockerfile.triton")["server-batched"] == "server-cpu"
    server_dir = tritonserver.container_server_dir({"OCR_TRITON_SERVER": "pytriton"})
    assert server_dir == tritonserver.pytriton_server_dir()   # the wheel of this venv
    assert tritonserver.program(server_dir) == str(server_dir / "bin" / "tritonserver")
    assert (server_dir / "bin" / "tritonserver").is_file()
    flags = tritonserver.container_arguments({"OCR_TRITON_FLAVOUR": "cpu"}, server_dir=server_dir)
    assert flag(flags, "backend-directory") == [str(server_dir / "backends")]
    assert flag(flags, "cache-directory") == [str(server_dir / "caches")]
    no_cache = tritonserver.container_arguments(
        {"OCR_TRITON_FLAVOUR": "cpu", "TRITON_CACHE_BYTES": "0"}, server_dir=server_dir)
    assert flag(no_cache, "cache-directory") == [] and flag(no_cache, "cache-config") == []
    # NGC's image: tritonserver on PATH, its own backends and caches.
    assert tritonserver.container_server_dir({}) is None
    assert tritonserver.program(None) == "tritonserver"
    assert flag(triton_command("gpu"), "backend-directory") == []
    with pytest.raises(ValueError, match="pytriton or unset"):
        tritonserver.container_server_dir({"OCR_TRITON_SERVER": "ngc"})


def test_python_stub_is_copied_for_this_python_or_refused(tmp_path):
    from ocr_pipeline import tritonserver

    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    stub = tmp_path / "python_backend_stubs" / version / "triton_python_backend_stub"
    stub.parent.mkdir(parents=True)
    stub.write_bytes(b"stub")
    (tmp_path / "backends" / "python").mkdir(parents=True)
    target = tritonserver.install_python_stub(tmp_path)
    assert target == tmp_path / "backends" / "python" / "triton_python_backend_stub"
    assert target.read_bytes() == b"stub"
    stub.unlink()
    with pytest.raises(FileNotFoundError, match=f"no Python-backend stub for Python {version}"):
        tritonserver.install_python_stub(tmp_path)


def test_triton_start_command_refuses_an_unknown_flavour():
    done = subprocess.run(TRITON_START, capture_output=True, text=True,
                          env=dict(os.environ, OCR_TRITON_FLAVOUR="tpu"), timeout=30)
    assert done.returncode == 2 and "cpu, batched, gpu" in done.stderr


# --- gateway image ------------------------------------------------------------------------

def test_gateway_image_installs_what_make_setup_installs_minus_dev_extras():
    makefile = (ROOT / "Makefile").read_text().replace("\\\n", " ")  # continued lines
    make_targets = [t for line in makefile.splitlines() if "pip install" in line
                    for t in pip_install_targets(line.replace("$(BIN)/python", "python"))]
    make_project = [split_extras(t) for targets in make_targets for t in targets
                    if split_extras(t)[0] == "."]
    assert len(make_project) == 1, "the Makefile installs the project once"
    optional = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert DEV_ONLY_EXTRAS <= optional.keys()

    runs = instruction_args("Dockerfile.gateway", "RUN")
    installs = [t for run in runs for t in pip_install_targets(run)]
    project = [split_extras(t) for targets in installs for t in targets
               if t not in ("pip", "./contract")]
    assert project == [(".", make_project[0][1] - DEV_ONLY_EXTRAS)]
    # No second dependency list: nothing but the contract, the project (and pip itself).
    assert all(t in ("./contract", ".", "pip") for targets in installs for t in targets)
    assert any("./contract" in targets for targets in make_targets)
    assert not re.search(r"requirements|constraints|\s-[rc]\s", " ".join(runs))
    # In place (-e), like make setup: the code runs from the copied tree, subpackages and all.
    editable = r'-m pip install [^&;]*-e "\.(\[[^\]]*\])?"'
    assert re.search(editable, makefile) and any(re.search(editable, run) for run in runs)
    copies = instruction_args("Dockerfile.gateway", "COPY")
    assert any(c.split()[0] == "pyproject.toml" for c in copies)


def test_gateway_image_serves_with_gunicorn_as_a_non_root_user():
    instructions = dockerfile("Dockerfile.gateway")
    assert instructions[-1] == ("CMD", '["gunicorn", "--config", "deploy/gunicorn.conf.py", '
                                       '"gateway.wsgi:application"]')
    assert "application = " in (ROOT / "gateway" / "wsgi.py").read_text()
    users = instruction_args("Dockerfile.gateway", "USER")
    assert users and users[-1] not in ("root", "0")
    assert any("collectstatic --no-input" in run for run in instruction_args("Dockerfile.gateway", "RUN"))
    health = instruction_args("Dockerfile.gateway", "HEALTHCHECK")
    assert len(health) == 1 and "/api/health" in health[0] and "'Host': 'localhost'" in health[0]
    # The image's Python satisfies the project's requirement; the base is a build argument,
    # the official image by default, for the build stage and the image alike.
    image = arg_default("Dockerfile.gateway", "PYTHON_IMAGE")
    version = re.fullmatch(r"python:(\d+)\.(\d+)-slim-bookworm", image)
    assert version and tuple(map(int, version.groups())) >= (3, 11)
    assert [a.split()[0] for a in instruction_args("Dockerfile.gateway", "FROM")] == [
        "${PYTHON_IMAGE}", "${PYTHON_IMAGE}"]
    # The cpu Triton image starts from the same base.
    assert arg_default("Dockerfile.triton", "PYTHON_IMAGE") == image
    assert stages("Dockerfile.triton")["server-cpu"] == "${PYTHON_IMAGE}"


@pytest.mark.parametrize("name", ["Dockerfile.gateway", "Dockerfile.triton"])
def test_every_copied_or_mounted_path_exists_and_passes_the_dockerignore(name):
    ignore = [line for line in (DEPLOY / f"{name}.dockerignore").read_text().splitlines()
              if line and not line.startswith("#")]
    assert ignore[0] == "*", "allow-list: the context starts empty (no .venv, no weights)"
    allowed = [line[1:] for line in ignore if line.startswith("!")]
    sources = []
    for arguments in instruction_args(name, "COPY"):
        if arguments.startswith("--from"):
            continue  # from another build stage, not the context
        sources += [w for w in arguments.split() if not w.startswith("--")][:-1]
    # RUN --mount=type=bind,source=...: the wheelhouse, mounted while pip installs.
    mounts = re.findall(r"--mount=type=bind,source=([^,\s]+)", " ".join(
        instruction_args(name, "RUN")))
    assert "deploy/wheelhouse" in mounts
    for source in sources + mounts:
        assert (ROOT / source).exists(), f"{name} uses {source}, which does not exist"
        assert any(source == a or source.startswith(a + "/") for a in allowed), source


# --- gunicorn -----------------------------------------------------------------------------

@pytest.mark.parametrize("timeout_s", ["5", "30", "120"])
def test_gunicorn_workers_outlive_the_inference_timeout(timeout_s):
    conf = gunicorn_settings({"TRITON_TIMEOUT_S": timeout_s, "GUNICORN_TIMEOUT": "1"})
    assert conf["worker_class"] == "gthread"
    assert conf["timeout"] > float(timeout_s)
    assert conf["graceful_timeout"] > float(timeout_s)


def test_gunicorn_reads_workers_and_threads_from_the_environment():
    conf = gunicorn_settings({"GUNICORN_WORKERS": "3", "GUNICORN_THREADS": "16", "HTTP_PORT": "9000"})
    assert (conf["workers"], conf["threads"], conf["bind"]) == (3, 16, "0.0.0.0:9000")


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_manage_py_runs_in_the_image_before_gunicorn_made_the_metrics_directory(tmp_path):
    """The image sets PROMETHEUS_MULTIPROC_DIR; the migrate service, the migration Job, the
    init container and the purge CronJob run manage.py there before (or without) gunicorn,
    whose start hook used to be the only thing creating the directory."""
    image_env = gateway_image_environment()
    assert image_env["PROMETHEUS_MULTIPROC_DIR"].startswith("/dev/shm/")
    (tmp_path / "var").mkdir()                       # the image's /app/var
    # What the migrate service / Job, the init container and the CronJob run, each in a
    # fresh container (a fresh /dev/shm).
    for i, command in enumerate((["check"], ["migrate", "--no-input"],
                                 ["migrate", "--check", "--no-input"], ["purge_audit_log"])):
        fresh = tmp_path / f"shm-{i}" / "ocr-metrics"
        environ = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}  # SQLite here
        environ.update(PROMETHEUS_MULTIPROC_DIR=str(fresh), OCR_VAR_DIR=str(tmp_path / "var"),
                       DJANGO_SECRET_KEY="x" * 50)
        done = subprocess.run([sys.executable, "manage.py", *command], cwd=ROOT, env=environ,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
        assert fresh.is_dir()


def test_gunicorn_serves_metrics_on_their_own_port_never_the_apis(tmp_path):
    import urllib.error
    import urllib.request

    api_port, metrics_port = free_port(), free_port()
    environ = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    environ.update(HTTP_HOST="127.0.0.1", HTTP_PORT=str(api_port),
                   METRICS_PORT=str(metrics_port), GUNICORN_WORKERS="2",
                   PROMETHEUS_MULTIPROC_DIR=str(tmp_path / "metrics"),
                   OCR_VAR_DIR=str(tmp_path / "var"), DJANGO_SECRET_KEY="x" * 50)
    assert gunicorn_settings({"METRICS_PORT": "9999"})["metrics_port"] == 9999
    assert gunicorn_settings({})["metrics_host"] == "127.0.0.1"   # make serve: loopback
    server = subprocess.Popen([sys.executable, "-m", "gunicorn", "-c", "deploy/gunicorn.conf.py",
                               "gateway.wsgi:application"], cwd=ROOT, env=environ,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    def get(port: int, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=60) as answer:
                return answer.status, answer.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()

    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                assert get(api_port, "/api/health")[0] == 200
                break
            except OSError:                              # not listening yet
                assert server.poll() is None and time.monotonic() < deadline, server.stderr.read()
                time.sleep(0.3)
        status, body = get(api_port, "/metrics")
        assert status == 404 and '"code":"not_found"' in body
        status, body = get(metrics_port, "/metrics")
        assert status == 200
        # Pooled from the worker that answered /api/health (it loaded the URLconf).
        assert "ocr_requests_in_flight 0.0" in body
    finally:
        server.terminate()
        server.wait(timeout=60)


# --- docker compose and .env.example ------------------------------------------------------

def test_compose_services_start_in_health_gated_order():
    services = compose()["services"]
    assert set(services) == {"postgres", "triton", "migrate", "gateway", "proxy-config", "proxy",
                             "redis", "job-workers"}
    for name, service in services.items():
        gates = service.get("depends_on", {})
        one_shot = service.get("restart") == "no"        # waited for by completion
        assert "healthcheck" in service or gates or one_shot, \
            f"{name}: neither a healthcheck nor a gate"
        for target, condition in gates.items():
            wanted = condition["condition"]
            assert wanted in ("service_healthy", "service_completed_successfully"), name
            if wanted == "service_healthy":
                assert "healthcheck" in services[target], f"{name} waits on {target}'s health"
    assert services["gateway"]["depends_on"] == services["job-workers"]["depends_on"] == {
        "postgres": {"condition": "service_healthy"},
        "migrate": {"condition": "service_completed_successfully"},
        "triton": {"condition": "service_healthy"},
        "redis": {"condition": "service_healthy"},
    }
    assert services["migrate"]["command"] == ["python", "manage.py", "migrate", "--no-input"]
    assert services["migrate"]["image"] == services["gateway"]["image"]
    assert services["migrate"]["build"] == services["gateway"]["build"]


def test_compose_healthchecks_probe_the_right_endpoints():
    services = compose()["services"]
    assert "/api/health" in " ".join(services["gateway"]["healthcheck"]["test"])
    assert "127.0.0.1:8000/v2/health/ready" in " ".join(services["triton"]["healthcheck"]["test"])
    assert "pg_isready" in " ".join(services["postgres"]["healthcheck"]["test"])
    assert "redis-cli ping" in " ".join(services["redis"]["healthcheck"]["test"])


def test_compose_runs_the_broker_with_its_append_only_file_and_workers_like_the_gateway():
    """Redis without AOF loses queued pages when killed (docs/jobs-broker.md); the workers
    run the gateway's image with its settings, and read the uploads the gateway writes."""
    services = compose()["services"]
    redis, workers, gateway = services["redis"], services["job-workers"], services["gateway"]
    command = redis["command"]
    assert command[0] == "redis-server"
    options = dict(zip(command[1::2], command[2::2]))
    assert options["--appendonly"] == "yes" and options["--dir"] == "/data"
    assert any(v.endswith(":/data") and v.split(":")[0] in compose()["volumes"]
               for v in redis["volumes"])
    assert "ports" not in redis                          # the compose network only
    assert workers["command"][:3] == ["python", "manage.py", "run_job_workers"]
    assert (ROOT / "ocr_jobs" / "management" / "commands" / "run_job_workers.py").is_file()
    assert workers["image"] == gateway["image"] and workers["build"] == gateway["build"]
    assert workers["env_file"] == gateway["env_file"]
    for name in ("DATABASE_URL", "DJANGO_SECRET_KEY", "TRITON_GRPC_URL", "OCR_BROKER_URL"):
        assert workers["environment"][name] == gateway["environment"][name], name
    assert gateway["environment"]["OCR_BROKER_URL"] == "redis://redis:6379/0"
    # The uploads (OCR_VAR_DIR/jobs) on one volume for both.
    var = gateway_image_environment()["OCR_VAR_DIR"]
    assert f"jobs:{var}/jobs" in workers["volumes"] and f"jobs:{var}/jobs" in gateway["volumes"]
    assert workers["read_only"] is True and workers["tmpfs"] == gateway["tmpfs"]


def test_compose_gives_triton_the_gpus_and_enough_shared_memory():
    triton = compose()["services"]["triton"]
    assert triton["runtime"] == "nvidia"
    assert triton["environment"]["NVIDIA_VISIBLE_DEVICES"] == "all"
    assert "deploy" not in triton       # a device reservation Compose v1 could not remove
    assert size_bytes(triton["shm_size"]) >= minimum_shared_memory()
    assert triton["build"]["dockerfile"] == "deploy/Dockerfile.triton"
    assert (DEPLOY / triton["build"]["context"] / triton["build"]["dockerfile"]).is_file()
    cpu = compose("docker-compose.cpu.yml")["services"]["triton"]
    assert cpu["build"]["args"]["FLAVOUR"] == "cpu" and cpu["runtime"] == "runc"
    assert triton["ulimits"]["memlock"] == -1 and cpu["ulimits"]["memlock"] == 8 * 1024 * 1024


@pytest.mark.parametrize("name", ["docker-compose.yml", "docker-compose.cpu.yml"])
def test_compose_files_are_plain_yaml_that_compose_v1_reads_too(name):
    """Debian's docker-compose (1.29) knows neither a top-level ``name`` nor ``!reset``."""
    text = (DEPLOY / name).read_text()
    assert "!reset" not in text and "!override" not in text
    document = yaml.safe_load(text)
    assert set(document) <= {"services", "volumes", "networks"} | {
        key for key in document if key.startswith("x-")}
    assert env_file(DEPLOY / ".env.example")[0]["COMPOSE_PROJECT_NAME"] == "ocr-gateway"


def test_gateway_runs_as_its_user_on_a_read_only_root_in_compose():
    services = compose()["services"]
    assert services["gateway"]["read_only"] is True
    # Where it writes, the same folders as the Kubernetes pod's emptyDirs.
    pod = resource("Deployment", "ocr-gateway")
    mounts = {m["mountPath"] for m in container(pod, "gateway")["volumeMounts"]}
    tmpfs = dict(entry.partition(":")[::2] for entry in services["gateway"]["tmpfs"])
    # (and the jobs' uploads, a volume shared with the job workers in both)
    assert set(tmpfs) == mounts - {"/app/var/jobs"} == {"/tmp", "/app/var"}
    # Written by the image's user (the image's /app/var is its, a new tmpfs root's).
    uid = next(a for k, a in dockerfile("Dockerfile.gateway") if k == "USER")
    assert f"uid={uid}" in tmpfs["/app/var"].split(",")
    assert gateway_image_environment()["OCR_VAR_DIR"] == "/app/var"
    for one_shot in ("migrate", "proxy-config"):
        assert services[one_shot]["read_only"] is True


def test_compose_gateway_balances_over_triton_and_uses_postgres():
    services = compose()["services"]
    environment = services["gateway"]["environment"]
    assert environment["TRITON_GRPC_URL"] == "dns:///triton:{}".format(
        flag(triton_command("gpu"), "grpc-port")[0])
    assert re.fullmatch(r"postgres://\$\{POSTGRES_USER[^}]*\}:\$\{POSTGRES_PASSWORD[^}]*\}"
                        r"@postgres:5432/\$\{POSTGRES_DB[^}]*\}", environment["DATABASE_URL"])
    assert environment["DATABASE_URL"] == services["migrate"]["environment"]["DATABASE_URL"]
    graceful = gunicorn_settings(env_file(DEPLOY / ".env.example")[0])["graceful_timeout"]
    assert int(services["gateway"]["stop_grace_period"].rstrip("s")) > graceful


def substitute(text: str, values: dict[str, str]) -> str:
    """compose's ``${NAME:-default}`` / ``${NAME}`` substitution from ``values``."""
    def one(match):
        name, default = match.group(1), match.group(3) or ""
        return values.get(name) or default
    return re.sub(r"\$\{([A-Z][A-Z0-9_]*)(:?[-?]([^}]*))?\}", one, text)


def published_ports(values: dict[str, str]) -> dict[str, list[tuple[str, range]]]:
    """Per compose service: (host address, host ports) of each ``ports`` entry, with the
    variables of deploy/.env set to ``values``."""
    found = {}
    for name, service in compose()["services"].items():
        for entry in service.get("ports", []):
            match = re.fullmatch(r"(?:([\d.]+):)?(\d+)(?:-(\d+))?:(\d+)", substitute(entry, values))
            assert match, f"{name}: cannot read the port mapping {entry!r}"
            first = int(match.group(2))
            found.setdefault(name, []).append(
                (match.group(1) or "0.0.0.0", range(first, int(match.group(3) or first) + 1)))
    return found


def runbook_scale_examples() -> list[tuple[str, int, dict[str, str]]]:
    """Every ``--scale SERVICE=N`` of deploy/README.md, with the ``NAME=value`` settings its
    paragraph sets in code spans."""
    examples = []
    for paragraph in re.split(r"\n\s*\n|\n- ", (DEPLOY / "README.md").read_text()):
        for service, count in re.findall(r"--scale ([\w-]+)=(\d+)", paragraph):
            settings = dict(re.findall(r"`([A-Z][A-Z0-9_]*)=([^`\s]+)`", paragraph))
            examples.append((service, int(count), settings))
    return examples


def test_compose_host_ports_never_collide_also_when_scaled_as_the_runbook_says():
    defaults, _ = env_file(DEPLOY / ".env.example")
    examples = runbook_scale_examples()
    assert [(service, count) for service, count, _ in examples] == [("gateway", 4),
                                                                    ("job-workers", 3)]
    for service, count, settings in [(None, 1, {})] + examples:
        ports = published_ports({**defaults, **settings})
        taken = []
        for name, entries in ports.items():
            replicas = count if name == service else 1
            for address, hosts in entries:
                # Each replica takes one port of a range: a fixed port cannot be scaled.
                assert len(hosts) >= replicas, f"{name} x{replicas}: {address}:{hosts}"
                for other_address, other_hosts, other in taken:
                    if "0.0.0.0" in (address, other_address) or address == other_address:
                        assert not set(hosts) & set(other_hosts), f"{name} and {other} collide"
                taken.append((address, hosts, name))
    # Only the API is published on every interface; Triton's control and metrics ports and
    # the gateway's metrics only on the loopback.
    ports = published_ports(defaults)
    assert [address for address, _ in ports["triton"]] == ["127.0.0.1", "127.0.0.1"]
    assert [(address, hosts) for address, hosts in ports["gateway"]] == [
        ("127.0.0.1", range(8004, 8005))]
    assert [(address, hosts) for address, hosts in ports["proxy"]] == [
        ("0.0.0.0", range(8000, 8001))]


def test_compose_publishes_the_gateway_metrics_port_gunicorn_serves():
    gateway = compose()["services"]["gateway"]
    conf = gunicorn_settings({**gateway_image_environment(), **gateway["environment"]})
    container_ports = [int(entry.rsplit(":", 1)[1]) for entry in gateway["ports"]]
    assert container_ports == [conf["metrics_port"]]       # the API only through the proxy
    assert conf["metrics_host"] == "0.0.0.0"       # reachable through Docker's port mapping
    assert "8004" in instruction_args("Dockerfile.gateway", "EXPOSE")[0].split()


def test_compose_puts_the_buffering_proxy_in_front_of_the_gateway(tmp_path):
    from ocr_proxy import config as proxy

    services = compose()["services"]
    gateway, writer, nginx = services["gateway"], services["proxy-config"], services["proxy"]
    command = writer["command"]
    assert command[:3] == ["python", "-m", "ocr_proxy"]
    assert writer["image"] == gateway["image"] and writer["build"] == gateway["build"]
    assert writer["env_file"] == gateway["env_file"]        # the same limits as the gateway
    options = dict(zip(command[3::2], command[4::2]))
    assert options["--upstream"] == f"gateway:{gateway['environment']['HTTP_PORT']}"
    # The proxy listens where the config says, and reads the file the writer wrote.
    assert nginx["ports"] == ["${GATEWAY_PUBLISH:-8000}:" + options["--listen"]]
    volume, mount = writer["volumes"][0].split(":")
    assert Path(options["--output"]).parent == Path(mount)
    assert nginx["volumes"] == [f"{volume}:/etc/nginx/conf.d:ro"]
    assert volume in compose()["volumes"]
    assert nginx["depends_on"] == {"proxy-config": {"condition": "service_completed_successfully"},
                                   "gateway": {"condition": "service_healthy"}}
    # The gateway believes the proxy's X-Forwarded-For when .env leaves the setting empty.
    defaults, _ = env_file(DEPLOY / ".env.example")
    assert substitute(gateway["environment"]["OCR_TRUSTED_PROXIES"], defaults) == \
        "172.16.0.0/12,192.168.0.0/16"
    # The writer runs and writes a configuration with the .env limits.
    output = tmp_path / "gateway.conf"
    assert proxy.main([*command[3:-2], "--output", str(output)]) == 0
    text = output.read_text()
    assert f"client_max_body_size {MAX_UPLOAD_BYTES.read(defaults) + 65536};" in text
    assert f"listen {options['--listen']};" in text and "server gateway:8000;" in text


def test_env_example_lists_every_setting_the_product_reads():
    names = settings_read_from_environment()
    assert {"DATABASE_URL", "DJANGO_SECRET_KEY", "TRITON_GRPC_URL", "GUNICORN_WORKERS",
            "OCR_ENGINE_PRECISION", "OCR_CANVAS", "TESSDATA_PREFIX"} <= names  # the scan works
    values, commented = env_file(DEPLOY / ".env.example")
    assert names - values.keys() - commented == set()


def test_env_example_leaves_every_limit_to_the_contract():
    """Each limit is named (commented out) and left unset: its default is the contract's."""
    values, commented = env_file(DEPLOY / ".env.example")
    assert {limit.setting for limit in LIMITS} <= commented - values.keys()


def test_env_example_covers_compose_and_overrides_nothing_the_image_fixes():
    values, commented = env_file(DEPLOY / ".env.example")
    referenced = set()
    for name in ("docker-compose.yml", "docker-compose.cpu.yml"):
        referenced |= set(re.findall(r"\$\{([A-Z][A-Z0-9_]*)", (DEPLOY / name).read_text()))
    assert referenced - values.keys() == set()
    image_env = set(re.findall(r"\b([A-Z][A-Z0-9_]*)=", " ".join(
        instruction_args("Dockerfile.gateway", "ENV")))) - {"PATH"}
    # Compose fixes a gateway variable unless it only passes the same .env entry through.
    set_by_compose = {name for name, value in compose()["services"]["gateway"]["environment"].items()
                      if not re.fullmatch(r"\$\{" + name + r"(:[-?][^}]*)?\}", str(value))}
    assert {"DATABASE_URL", "TRITON_GRPC_URL", "HTTP_PORT"} <= set_by_compose
    assert {"OCR_VAR_DIR", "DJANGO_STATIC_ROOT", "HTTP_PORT"} <= image_env
    assert values.keys() & (image_env | set_by_compose) == set()
    assert "localhost" in values["DJANGO_ALLOWED_HOSTS"].split(",")
    assert values["DJANGO_SECRET_KEY"] == values["POSTGRES_PASSWORD"] == ""
    for value in (values["OCR_TRUSTED_PROXIES"], settings_configmap()["OCR_TRUSTED_PROXIES"]):
        for network in filter(None, value.split(",")):
            ipaddress.ip_network(network)


# --- runbook ------------------------------------------------------------------------------

def test_runbook_covers_the_operations_with_real_commands_and_paths():
    text = (DEPLOY / "README.md").read_text()
    for needed in ("docker compose -f deploy/docker-compose.yml", "kubectl apply -k deploy/k8s",
                   "/v2/repository/models/ensemble_ocr/load", "nv_inference_request_success",
                   "nv_inference_queue_duration_us", "nv_inference_compute_infer_duration_us",
                   "nvidia-ctk", "--scale"):
        assert needed in text, needed
    commands = set(re.findall(r"manage\.py (\w+)", text))
    available = {p.stem for p in ROOT.glob("ocr_*/management/commands/*.py")}
    assert "create_api_key" in commands
    assert commands - available - {"migrate", "createsuperuser", "collectstatic", "check"} == set()
    # deploy/.env is the operator's copy of .env.example, never committed.
    # (kubectl's `exec [-it] deploy/NAME` names a Deployment, not a path)
    for path in set(re.findall(r"(?<!exec )(?<!-it )\bdeploy/[\w./-]+\w", text)) - {"deploy/.env"}:
        assert (ROOT / path).exists(), f"deploy/README.md names {path}, which does not exist"


def runbook_section(title: str) -> str:
    """The text of one ``## title`` section of deploy/README.md."""
    text = (DEPLOY / "README.md").read_text()
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    assert match, f"deploy/README.md has no section {title!r}"
    return match.group(1)


def shell_commands(text: str) -> list[str]:
    """The commands of the ``sh`` code blocks in ``text``, continuation lines joined."""
    commands = []
    for block in re.findall(r"```sh\n(.*?)```", text, re.S):
        for line in re.sub(r"\\\n\s*", " ", block).splitlines():
            line = line.split("#", 1)[0].strip() if " #" in line else line.strip()
            if line:
                commands.append(line)
    return commands


def test_rollout_copies_everything_a_version_folder_holds():
    """A new version folder gets what version 1 is made of: its weights (fetched into it:
    ocr_pipeline.weights) and, for the cpu flavours' Python models, its code (model.py)."""
    from ocr_pipeline.weights import WEIGHTS

    commands = shell_commands(runbook_section("Roll out a new model version"))
    created = [c.split()[-1] for c in commands if c.startswith("mkdir -p triton_models/")]
    assert created == ["triton_models/repository/craft/2"]
    version = created[0]
    copied = set()
    for command in commands:
        words = shlex.split(command)
        if words[0] == "cp" and words[-1].rstrip("/").startswith(version):
            target = words[-1]
            copied.add(target[len(version) + 1:] if not target.endswith("/")
                       else Path(words[-2]).name)
    version_1 = REPOSITORY / "craft" / "1"
    shipped = ({p.name for p in version_1.glob("*.py")}
               | {weight.filename for weight in WEIGHTS if weight.model == "craft"})
    assert shipped == {"model.onnx", "model.py"}
    assert copied == shipped
    # The container gets the folder, then Triton loads it.
    assert any(c.startswith("docker compose") and f" cp {version} " in c for c in commands)


def test_kubernetes_runbook_creates_the_namespace_tls_secret_and_an_admin_in_order():
    section = runbook_section("Kubernetes")
    commands = shell_commands(section)
    namespace = yaml.safe_load((K8S / "kustomization.yaml").read_text())["namespace"]

    def first(predicate) -> int:
        matches = [i for i, command in enumerate(commands) if predicate(command)]
        assert matches, "missing command"
        return matches[0]

    namespace_created = first(lambda c: c == "kubectl apply -f deploy/k8s/namespace.yaml")
    assert resource("Namespace", namespace)
    secret = resource("Ingress", "ocr-gateway")["spec"]["tls"][0]["secretName"]
    tls = first(lambda c: c.startswith(f"kubectl -n {namespace} create secret tls {secret} "))
    applied = first(lambda c: c == "kubectl apply -k deploy/k8s")
    admin = first(lambda c: f"kubectl -n {namespace} exec -it deploy/ocr-gateway -c gateway --"
                  in c and c.endswith("python manage.py createsuperuser"))
    rolled_out = first(lambda c: c.startswith(f"kubectl -n {namespace} rollout status "
                                              "deployment/ocr-gateway"))
    # Every command in the namespace comes after it exists; the admin after the rollout.
    in_namespace = [i for i, c in enumerate(commands) if f"-n {namespace} " in c]
    assert min(in_namespace) > namespace_created
    assert namespace_created < tls < applied < rolled_out < admin
    # `kustomize edit` is a separate binary: the runbook says so before using it.
    kustomize_used = section.index("kustomize edit set image")
    assert "standalone" in section[:kustomize_used] and "kustomize" in section[:kustomize_used]
