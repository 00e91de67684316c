"""Run a real Triton Inference Server without Docker: the binary carried by ``nvidia-pytriton``.

Used by ``python manage.py serve_embedded`` and by the test suite. The server is configured by
this project's own model repository, exactly like the production container; PyTriton only
carries ``tritonserver``, ``libtritonserver``, the Python backend and the local response cache.

What it takes to run that binary here:

* the Python backend needs ``triton_python_backend_stub`` for the running Python version in
  ``backends/python/``: it is copied there from ``python_backend_stubs/<X.Y>/``
  (:func:`ocr_pipeline.tritonserver.install_python_stub`, which the cpu Triton image runs too);
* the stub's embedded interpreter imports packages from the virtualenv whose ``bin/`` is first
  on ``PATH``, so that directory is put first;
* the OS's ``libpython3.X.so`` must exist (Debian/Ubuntu package ``libpython3.X``).

This module never imports Django, so it also works from plain scripts (benchmarks). The
server's flags are the repository's own (:mod:`ocr_pipeline.tritonserver`, also the Triton
container's start command) plus what only an embedded server needs.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import sysconfig
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import tritonclient.grpc as grpcclient
from ocr_contract.settings import TRITON_CACHE_BYTES
from ocr_pipeline import tritonserver
from tritonclient.utils import InferenceServerException

from .processes import spawn


class TritonStartError(RuntimeError):
    """Triton exited or did not get the models ready in time; the message has the log tail."""


def pytriton_server_dir() -> Path:
    """``<site-packages>/pytriton/tritonserver`` of the installed nvidia-pytriton wheel.

    Raises:
        TritonStartError: nvidia-pytriton is not installed.
    """
    server_dir = tritonserver.pytriton_server_dir()
    if server_dir is None:
        raise TritonStartError("nvidia-pytriton is not installed: pip install -e "
                               "'./triton_models[tritonserver]'")
    return server_dir


def install_python_stub(server_dir: Path) -> Path:
    """:func:`ocr_pipeline.tritonserver.install_python_stub`, its failure a
    :class:`TritonStartError`."""
    try:
        return tritonserver.install_python_stub(server_dir)
    except FileNotFoundError as exc:
        raise TritonStartError(str(exc)) from exc


#: The Python backend's shared-memory regions are ``/dev/shm/<this prefix><uuid>``, one per stub.
REGION_PREFIX = "triton_python_backend_shm_region_"


def orphaned_regions(min_age_s: float = 60.0, shm: Path = Path("/dev/shm")) -> list[Path]:
    """This user's Python-backend regions that no process of this user maps or holds open,
    older than ``min_age_s`` seconds: what a Triton killed with its stubs (SIGKILL, the OOM
    killer, a test run killed) leaves behind, 64 MiB or more each. A region is younger than
    ``min_age_s`` for the moment between a starting server creating it and its stub mapping it.
    """
    uid, now = os.getuid(), time.time()
    regions = {}
    for path in shm.glob(REGION_PREFIX + "*"):
        try:
            stat = path.stat()
        except OSError:
            continue
        if stat.st_uid == uid and now - stat.st_mtime >= min_age_s:
            regions[path.name] = path
    if not regions:
        return []
    in_use = set()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if proc.stat().st_uid != uid:
                continue
            held = (proc / "maps").read_text().split()
            held += [os.readlink(fd) for fd in (proc / "fd").iterdir()]
        except OSError:
            continue
        in_use.update(Path(entry).name for entry in held if entry.startswith(str(shm)))
    return [path for name, path in regions.items() if name not in in_use]


def remove_orphaned_regions(min_age_s: float = 60.0) -> int:
    """Unlink :func:`orphaned_regions`; returns how many."""
    removed = 0
    for path in orphaned_regions(min_age_s):
        try:
            path.unlink()
            removed += 1
        except OSError:
            pass
    return removed


def free_port() -> int:
    """A TCP port that is free on localhost right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class EmbeddedTriton:
    """One ``tritonserver`` process serving ``repository`` in explicit model-control mode.

    Args:
        repository: the model repository directory.
        log_path: file that receives the server's stdout and stderr.
        models: models loaded at start (an ensemble loads its composing models too).
        flavour: ``cpu``, ``batched`` or ``gpu`` (``""`` = cpu: each model's config.pbtxt).
        http_port, grpc_port, metrics_port: 0 picks a free port.
        address: interface the three endpoints listen on (loopback by default).
        cache_bytes: size of the local response cache (0 disables the cache).
        extra_args: more ``tritonserver`` flags.
        env: extra environment variables for the server (e.g. ``OCR_ENGINE``).
    """

    repository: Path
    log_path: Path
    models: tuple[str, ...] = tritonserver.MODELS_AT_START
    flavour: str = ""
    http_port: int = 0
    grpc_port: int = 0
    metrics_port: int = 0
    cache_bytes: int = TRITON_CACHE_BYTES.default
    address: str = "127.0.0.1"
    extra_args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    process: subprocess.Popen | None = field(default=None, init=False)
    #: ``--id`` of this server, unique per instance: readiness is only believed from it.
    server_id: str = field(default="", init=False)

    def __post_init__(self):
        self.server_id = f"ocr-embedded-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.repository = Path(self.repository).resolve()
        self.log_path = Path(self.log_path)
        self.http_port = self.http_port or free_port()
        self.grpc_port = self.grpc_port or free_port()
        self.metrics_port = self.metrics_port or free_port()

    @property
    def grpc_url(self) -> str:
        return f"{self._host}:{self.grpc_port}"

    @property
    def metrics_url(self) -> str:
        return f"http://{self._host}:{self.metrics_port}/metrics"

    @property
    def _host(self) -> str:
        return "127.0.0.1" if self.address in ("", "0.0.0.0") else self.address

    def command(self) -> list[str]:
        """The ``tritonserver`` command line: the repository's own flags with the paths
        inside the nvidia-pytriton wheel (:func:`ocr_pipeline.tritonserver.arguments`), plus
        this server's id and addresses."""
        server_dir = pytriton_server_dir()
        args = [
            tritonserver.program(server_dir),
            f"--id={self.server_id}",
            *tritonserver.arguments(self.repository, self.flavour or "cpu",
                                    http_port=self.http_port, grpc_port=self.grpc_port,
                                    metrics_port=self.metrics_port,
                                    cache_bytes=self.cache_bytes, exit_timeout_s=10,
                                    models=self.models, server_dir=server_dir),
            # Loopback only: the embedded server has no authentication of its own.
            f"--http-address={self.address}", f"--grpc-address={self.address}",
            f"--metrics-address={self.address}",
        ]
        return args + list(self.extra_args)

    def environment(self) -> dict[str, str]:
        """The server's environment: this venv's ``bin/`` first on PATH, libpython findable."""
        env = dict(os.environ, **self.env)
        venv_bin = str(Path(sys.executable).parent)
        env["PATH"] = os.pathsep.join([venv_bin, env.get("PATH", "")])
        libdir = sysconfig.get_config_var("LIBDIR")
        if libdir:
            env["LD_LIBRARY_PATH"] = os.pathsep.join(
                p for p in (env.get("LD_LIBRARY_PATH", ""), libdir) if p)
        return env

    def start(self, timeout_s: float = 300.0) -> "EmbeddedTriton":
        """Start the server and wait until every model in ``models`` is ready.

        Raises:
            TritonStartError: the process exited or models were not ready within
                ``timeout_s``; the message ends with the last lines of the log.
        """
        if self.process is not None and self.process.poll() is None:
            return self
        install_python_stub(pytriton_server_dir())
        remove_orphaned_regions()          # a dead server's stubs could not unlink theirs
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")
        try:
            self.process = spawn(self.command(), stdout=log, stderr=subprocess.STDOUT,
                                 env=self.environment())
        finally:
            log.close()
        self.wait_ready(timeout_s)
        return self

    def wait_ready(self, timeout_s: float) -> None:
        """Block until the server is live and every model in ``models`` is ready.

        Raises:
            TritonStartError: see :meth:`start`.
        """
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self.kill()  # its Python stubs may still run; they hold shared memory
                raise TritonStartError(
                    f"tritonserver exited with code {self.process.returncode}.\n"
                    f"{self.log_tail()}")
            # A client per attempt: a gRPC channel refused while Triton was still loading backs
            # off its reconnects up to 2 minutes, which a new user saw as a silent wait.
            client = grpcclient.InferenceServerClient(self.grpc_url)
            try:
                # The id tells our server from another one that already holds the port.
                if (client.get_server_metadata(client_timeout=2).name == self.server_id
                        and all(client.is_model_ready(name, client_timeout=2)
                                for name in self.models)):
                    return
            except InferenceServerException:
                pass
            finally:
                client.close()
            time.sleep(0.5)
        self.stop()
        raise TritonStartError(
            f"models {', '.join(self.models)} not ready after {timeout_s:.0f} s.\n"
            f"{self.log_tail()}")

    def stop(self, grace_s: float = 15.0) -> None:
        """SIGTERM, then SIGKILL if the server is still running after ``grace_s`` seconds."""
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.terminate()  # Triton drains, then stops its Python stubs itself
            try:
                self.process.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                pass
        self.kill()

    def kill(self) -> None:
        """SIGKILL the server and its Python stubs at once (also how fault tests crash it)."""
        if self.process is None:
            return
        regions = self.stub_shm_regions()
        # The server runs in its own session: killing the group takes the stubs with it.
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.process.wait(timeout=10)
        # Killed stubs cannot unlink their shared memory; do it for them.
        for region in regions:
            Path("/dev/shm", region).unlink(missing_ok=True)

    def stubs(self) -> dict[int, list[str]]:
        """This server's Python-backend stub processes: ``{pid: command line}``
        (``triton_python_backend_stub <repository>/<model>/<version>/model.py <region> ...``),
        found in the server's process group."""
        found = {}
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit():
                continue
            try:
                if os.getpgid(int(proc.name)) != self.process.pid:
                    continue
                arguments = (proc / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if any(a.startswith(REGION_PREFIX.encode()) for a in arguments):
                found[int(proc.name)] = [a.decode(errors="replace") for a in arguments]
        return found

    def stub_shm_regions(self) -> list[str]:
        """Shared-memory regions of this server's Python-backend stubs, read from the stubs'
        command lines (:meth:`stubs`)."""
        return [a for arguments in self.stubs().values() for a in arguments
                if a.startswith(REGION_PREFIX)]

    def log_tail(self, lines: int = 40) -> str:
        """The last ``lines`` lines of the server log."""
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc_info):
        self.stop()
