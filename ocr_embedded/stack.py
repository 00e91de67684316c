"""The serving stack on this machine, started in one place: an embedded Triton, gunicorn running
the gateway, the buffering proxy (nginx) in front, and (``jobs=True``: ``make serve``) the
jobs' broker (Debian's ``redis-server``) and job worker processes.

``make serve`` (``manage.py serve_embedded``), every benchmark (``bench/``) and the tests
that need more than one server start them through :class:`Stack`, with the defaults written
here once:

- the model repository of this checkout (:data:`REPOSITORY`), local state in :data:`VAR_DIR`
  (the gateway's ``OCR_VAR_DIR`` where its settings are at hand);
- OpenVINO's compiled models and precision decisions kept between starts in
  ``OCR_ENGINE_CACHE_DIR``, by default ``<var>/cache/openvino`` (:func:`engine_cache_dir`);
- Triton's response cache of ``TRITON_CACHE_BYTES`` (:mod:`ocr_contract.settings`);
- ``make serve``'s ports: ``HTTP_PORT`` (8000, nginx), and Triton's ``TRITON_GRPC_PORT``,
  ``TRITON_HTTP_PORT``, ``TRITON_METRICS_PORT`` (8001-8003); any other stack takes free ports;
- gunicorn with the deployment's ``deploy/gunicorn.conf.py`` on a loopback port, trusting the
  proxy's ``X-Forwarded-For``; nginx with every deployment's configuration
  (:mod:`ocr_proxy.config`) read from the gateway's environment;
- a fresh SQLite database and API key for a private stack (:func:`prepare_gateway_state`);
- with ``jobs``: ``redis-server`` on a free loopback port with its append-only file in
  ``<state or var>/redis`` (kept between starts: queued pages survive a restart), its URL
  given to gunicorn and the workers as ``OCR_BROKER_URL``, and the job workers
  (:class:`~ocr_embedded.broker.JobWorkers`, restarted when they exit). Off by default: the
  benchmarks and the tests that never post a job do not pay for them.

No Django here: the gateway runs in gunicorn's processes, and its state is prepared with
``manage.py``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from ocr_contract.settings import ENGINE_CACHE_DIR, TRITON_CACHE_BYTES, Setting
from ocr_proxy.config import ProxySettings

from .broker import BrokerStartError, JobWorkers, RedisServer
from .gunicorn_server import REPO_ROOT, Gunicorn, ServerStartError
from .launcher import EmbeddedTriton, TritonStartError, free_port
from .proxy import BufferingProxy, ProxyStartError
from .supervisor import TritonSupervisor

#: The model repository of this checkout.
REPOSITORY = REPO_ROOT / "triton_models" / "repository"
#: Local state (logs, caches) of the processes started without the gateway's settings at
#: hand; the gateway's own is its ``VAR_DIR`` (``OCR_VAR_DIR``, by default this folder).
VAR_DIR = REPO_ROOT / "var"
#: The embedded Triton's ports in ``make serve`` (``HTTP_PORT`` is the gateway's:
#: :data:`ocr_contract.settings.HTTP_PORT`).
TRITON_GRPC_PORT = Setting("TRITON_GRPC_PORT", 8001, "port", "make serve's Triton gRPC port")
TRITON_HTTP_PORT = Setting("TRITON_HTTP_PORT", 8002, "port", "make serve's Triton HTTP port")
TRITON_METRICS_PORT = Setting("TRITON_METRICS_PORT", 8003, "port",
                              "make serve's Triton metrics port")
#: The address the gateway trusts the proxy's X-Forwarded-For from: nginx on this machine.
LOOPBACK = "127.0.0.1"
#: Every way a stack fails to start; the message ends with the failing server's log.
START_ERRORS = (TritonStartError, ServerStartError, ProxyStartError, BrokerStartError)


def engine_cache_dir(var_dir: Path = VAR_DIR) -> Path:
    """``OCR_ENGINE_CACHE_DIR``, or ``<var_dir>/cache/openvino``: where the embedded Triton's
    engines keep compiled models and precision decisions, so that a restart reuses them."""
    return Path(ENGINE_CACHE_DIR.read() or var_dir / "cache" / "openvino")


def manage(args: list[str], env: dict) -> str:
    """Run ``python manage.py <args>`` with ``env`` added; return its stdout.

    Raises:
        ServerStartError: the command failed.
    """
    done = subprocess.run([sys.executable, "manage.py", *args], cwd=REPO_ROOT,
                          env=dict(os.environ, **env), capture_output=True, text=True)
    if done.returncode != 0:
        raise ServerStartError(f"manage.py {' '.join(args)} failed:\n{done.stderr[-3000:]}")
    return done.stdout


def prepare_gateway_state(var_dir: Path) -> tuple[dict, str]:
    """A fresh SQLite database in ``var_dir`` for a gateway of its own, and an API key for it
    (a rate of 1,000,000 per minute).

    Returns:
        ``(env, key)``: the environment the gateway needs (``OCR_VAR_DIR``, ``DATABASE_URL``)
        and the key.
    """
    env = {"OCR_VAR_DIR": str(var_dir), "DATABASE_URL": f"sqlite:///{var_dir / 'db.sqlite3'}"}
    manage(["migrate", "--no-input", "--verbosity", "0"], env)
    out = manage(["create_api_key", "benchmark", "--owner", "bench",
                  "--rate-per-minute", "1000000"], env)
    match = re.search(r"API key:\s*(\S+)", out)
    if not match:
        raise ServerStartError(f"create_api_key printed no key: {out!r}")
    return env, match.group(1)


@dataclass
class Stack:
    """Triton, gunicorn running the gateway, and nginx in front: each optional, started in that
    order (each once the one before answers) and stopped in the reverse order; with ``jobs``,
    the broker starts just before gunicorn and the job workers just after it, and both stop
    after gunicorn (the workers first). Used as a
    context manager it starts everything and stops it all on exit; a start that fails stops
    what had started.

    Triton's ports are taken when the stack is made (``make serve`` prints them before the
    start); gunicorn's and nginx's free ports when each starts, so that nothing takes them in
    between (Triton's first start may take minutes).

    Args:
        logs: the folder of the logs (``triton.log``, ``gunicorn.log``, ``proxy.log``).
        log_prefix: put before each log's name.
        triton: start a Triton of this stack's own; without one the gateway talks to
            ``triton_grpc_url`` (None: an address nothing listens on, for a stack whose
            requests never reach inference).
        repository: the model repository Triton serves.
        supervised: start Triton again whenever it dies (:class:`TritonSupervisor`).
        triton_ports: its gRPC, HTTP and metrics ports (0 picks a free port).
        cache_bytes: its response cache, bytes (default ``TRITON_CACHE_BYTES``; 0: off).
        engine_cache: its engines' ``OCR_ENGINE_CACHE_DIR`` (:func:`engine_cache_dir`); None:
            the environment's.
        triton_env: more environment for Triton (``OCR_ENGINE``, ...).
        triton_start_timeout_s: how long Triton may take to get its models ready.
        gateway: start gunicorn running ``app``.
        state: a folder for a fresh database and API key (:func:`prepare_gateway_state`,
            :attr:`key`); None: the gateway's settings' own (``make serve``).
        workers, threads: gunicorn's (None: ``deploy/gunicorn.conf.py``'s).
        gateway_env: more settings of the gateway (also read by the proxy).
        metrics: the workers pool their Prometheus metrics in ``<state or var_dir>/prometheus``
            (``PROMETHEUS_MULTIPROC_DIR``), served by gunicorn's master on ``METRICS_PORT``
            (a free port for a stack with a ``state`` of its own).
        gunicorn_log: gunicorn's output goes to its log (False: to this process's, the
            terminal).
        proxy: nginx in front of gunicorn, with the limits of the gateway's environment
            (``proxy_settings`` to give others).
        listen_host, listen_port: where nginx listens (0 picks a free port).
        var_dir: local state without a ``state``: the Prometheus folder (``make serve``:
            the gateway's ``VAR_DIR``).
        jobs: also run the jobs' broker (``redis-server``, its data in ``<state or
            var_dir>/redis``) and job workers (``job-workers.log``), started with the gateway
            (:meth:`start_gateway`); False by default (only ``make serve`` and stacks that
            post jobs need them).
        job_processes, job_threads: the job worker processes, and threads of each.
    """

    logs: Path
    log_prefix: str = ""
    triton: bool = True
    triton_grpc_url: str | None = None
    repository: Path = REPOSITORY
    supervised: bool = False
    triton_ports: tuple[int, int, int] = (0, 0, 0)
    cache_bytes: int = field(default_factory=TRITON_CACHE_BYTES.read)
    engine_cache: Path | None = None
    triton_env: dict = field(default_factory=dict)
    triton_start_timeout_s: float = 600.0
    gateway: bool = True
    app: str = "gateway.wsgi"
    state: Path | None = None
    workers: int | None = None
    threads: int | None = None
    gateway_env: dict = field(default_factory=dict)
    metrics: bool = True
    gunicorn_log: bool = True
    proxy: bool = True
    listen_host: str = LOOPBACK
    listen_port: int = 0
    proxy_settings: ProxySettings | None = None
    var_dir: Path = VAR_DIR
    jobs: bool = False
    job_processes: int = 1
    job_threads: int = 2
    #: The servers (None where this stack has none, or before it starts).
    embedded_triton: EmbeddedTriton | None = field(default=None, init=False)
    supervisor: TritonSupervisor | None = field(default=None, init=False)
    gunicorn: Gunicorn | None = field(default=None, init=False)
    nginx: BufferingProxy | None = field(default=None, init=False)
    redis: RedisServer | None = field(default=None, init=False)
    job_workers: JobWorkers | None = field(default=None, init=False)
    #: With a ``state``: the API key, and the environment that points a gateway at it.
    key: str | None = field(default=None, init=False)
    state_env: dict = field(default_factory=dict, init=False)
    #: The gateway's metrics port in a stack with a ``state`` (None: gunicorn.conf.py's).
    metrics_port: int | None = field(default=None, init=False)

    def __post_init__(self):
        self.logs = Path(self.logs)
        if not self.triton and self.triton_grpc_url is None:
            self.triton_grpc_url = f"{LOOPBACK}:{free_port()}"
        if self.triton:
            env = dict(self.triton_env)
            if self.engine_cache is not None:
                env[ENGINE_CACHE_DIR.name] = str(self.engine_cache)
            grpc_port, http_port, metrics_port = self.triton_ports
            self.embedded_triton = EmbeddedTriton(
                repository=self.repository, log_path=self._log("triton"),
                grpc_port=grpc_port, http_port=http_port, metrics_port=metrics_port,
                cache_bytes=self.cache_bytes, env=env)
            if self.supervised:
                self.supervisor = TritonSupervisor(self.embedded_triton)

    def _log(self, name: str) -> Path:
        return self.logs / f"{self.log_prefix}{name}.log"

    # -- what the gateway is told ---------------------------------------------------------

    @property
    def grpc_url(self) -> str:
        """The gRPC address of the Triton the gateway talks to."""
        if self.embedded_triton is not None:
            return self.embedded_triton.grpc_url
        return self.triton_grpc_url

    def environment(self) -> dict[str, str]:
        """This process's environment with the gateway's settings on top (what gunicorn and
        the proxy read)."""
        return {**os.environ, **self.gateway_settings()}

    def gateway_settings(self) -> dict[str, str]:
        """The settings the gateway (and its job workers) get besides this process's
        environment: its Triton, its state, its broker, the proxy it trusts, where its metrics
        go, and ``gateway_env``."""
        settings = {"TRITON_GRPC_URL": self.grpc_url}
        if self.embedded_triton is not None:
            settings["TRITON_METRICS_URL"] = self.embedded_triton.metrics_url
        settings.update(self.state_env)
        if self.redis is not None:
            settings["OCR_BROKER_URL"] = self.redis.url
        if self.metrics:
            settings["PROMETHEUS_MULTIPROC_DIR"] = str((self.state or self.var_dir) /
                                                       "prometheus")
        if self.metrics_port is not None:
            settings["METRICS_PORT"] = str(self.metrics_port)
        settings.update(self.gateway_env)
        if self.proxy:
            trusted = [address.strip() for address in {**os.environ, **settings}.get(
                "OCR_TRUSTED_PROXIES", "").split(",") if address.strip()]
            settings["OCR_TRUSTED_PROXIES"] = ",".join(
                trusted + ([LOOPBACK] if LOOPBACK not in trusted else []))
        return settings

    # -- start and stop ---------------------------------------------------------------------

    def start_triton(self) -> EmbeddedTriton:
        """Start Triton (supervised, if asked) and wait until its models are ready.

        Raises:
            TritonStartError: see :meth:`EmbeddedTriton.start`.
        """
        if self.supervisor is not None:
            self.supervisor.start(timeout_s=self.triton_start_timeout_s)
        else:
            self.embedded_triton.start(timeout_s=self.triton_start_timeout_s)
        return self.embedded_triton

    def prepare_state(self) -> dict[str, str]:
        """With a ``state``: its fresh database and API key (:attr:`key`), made once; the
        environment that points the gateway (and ``manage.py``: :func:`manage`) at them.

        Raises:
            ServerStartError: a ``manage.py`` command failed.
        """
        if self.state is not None and self.key is None:
            self.state_env, self.key = prepare_gateway_state(self.state)
        return self.state_env

    def start_broker(self) -> RedisServer:
        """Start ``redis-server`` (append-only file in ``<state or var_dir>/redis``, kept
        between starts) and wait until it answers; the gateway and the workers get its URL
        (``OCR_BROKER_URL``).

        Raises:
            BrokerStartError: redis-server is missing, exited, or did not answer.
        """
        if self.redis is None:
            self.redis = RedisServer((self.state or self.var_dir) / "redis")
        return self.redis.start()

    def start_job_workers(self) -> JobWorkers:
        """Start the job worker processes (``manage.py run_job_workers``) with the gateway's
        settings; the first one sends again what a killed gateway left queued."""
        if self.job_workers is None:
            self.logs.mkdir(parents=True, exist_ok=True)
            self.job_workers = JobWorkers(
                REPO_ROOT / "manage.py", env=self.gateway_settings(),
                processes=self.job_processes, threads=self.job_threads,
                log_path=self._log("job-workers")).start()
        return self.job_workers

    def start_gateway(self, ready_path: str = "/api/health", timeout_s: float = 300.0,
                      count_pids: bool = False) -> Gunicorn:
        """Prepare the gateway's state (:meth:`prepare_state`); with ``jobs``, start the
        broker; start gunicorn and wait until it answers ``ready_path``
        (:meth:`Gunicorn.start`); with ``jobs``, then start the job workers.

        Raises:
            ServerStartError: the state could not be prepared, or gunicorn did not answer.
            BrokerStartError: the broker did not start.
        """
        self.prepare_state()
        if self.jobs:
            self.start_broker()
        if self.metrics and self.state is not None and self.metrics_port is None:
            self.metrics_port = free_port()
        self.gunicorn = Gunicorn(self.app, workers=self.workers, threads=self.threads,
                                 env=self.gateway_settings(),
                                 log_path=self._log("gunicorn") if self.gunicorn_log else None)
        started = self.gunicorn.start(ready_path, timeout_s=timeout_s, count_pids=count_pids)
        if self.jobs:
            self.start_job_workers()
        return started

    def start_proxy(self) -> BufferingProxy:
        """Start nginx in front of the started gunicorn and wait until it listens.

        Raises:
            ProxyStartError: see :meth:`BufferingProxy.start`.
        """
        self.nginx = BufferingProxy(self.listen_host, self.listen_port,
                                    f"{LOOPBACK}:{self.gunicorn.port}", self._log("proxy"),
                                    settings=self.proxy_settings or
                                    ProxySettings.from_environ(self.environment()))
        return self.nginx.start()

    def start(self) -> "Stack":
        """Start every server of this stack in order; on a failure stop those that started.

        Raises:
            TritonStartError, ServerStartError, ProxyStartError: (:data:`START_ERRORS`).
        """
        try:
            if self.triton:
                self.start_triton()
            if self.gateway:
                self.start_gateway()
            if self.proxy:
                self.start_proxy()
        except BaseException:
            self.stop()
            raise
        return self

    def stop_gateway(self) -> None:
        """Stop nginx, then gunicorn (each finishes the requests it holds), then the job
        workers (each finishes its pages in progress) and the broker (which writes its
        append-only file)."""
        if self.nginx is not None:
            self.nginx.stop()
        if self.gunicorn is not None:
            self.gunicorn.stop()
        if self.job_workers is not None:
            self.job_workers.stop()
        if self.redis is not None:
            self.redis.stop()

    def stop_triton(self) -> None:
        """Stop Triton (and its supervisor first, so that it is not started again)."""
        if self.supervisor is not None:
            self.supervisor.stop()
        elif self.embedded_triton is not None:
            self.embedded_triton.stop()

    def stop(self) -> None:
        """Stop everything, the proxy first and Triton last."""
        self.stop_gateway()
        self.stop_triton()

    # -- where clients go -------------------------------------------------------------------

    @property
    def url(self) -> str:
        """Where clients reach the gateway: nginx's address, or gunicorn's without a proxy."""
        return self.nginx.url if self.nginx is not None else self.gunicorn.url

    @property
    def port(self) -> int:
        return self.nginx.listen_port if self.nginx is not None else self.gunicorn.port

    @property
    def database(self) -> Path | None:
        """The SQLite file of a stack with a ``state`` of its own."""
        return self.state / "db.sqlite3" if self.state is not None else None

    def __enter__(self) -> "Stack":
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()
