"""The jobs' broker and workers as child processes of ``make serve`` (and the tests), no
Django: :class:`RedisServer` (Debian's ``redis-server``, loopback, its own folder, append-only
file: docs/jobs-broker.md) and :class:`JobWorkers` (N ``manage.py run_job_workers`` processes,
restarted when they exit).

Stack usage (what ``ocr_embedded.stack.Stack`` should call)::

    redis = RedisServer(var / "redis").start()          # before gunicorn
    gateway_env["OCR_BROKER_URL"] = redis.url           # gunicorn and the workers
    workers = JobWorkers(manage_py, env={**gateway_env}, processes=2, threads=2,
                         log_path=var / "logs" / "job-workers.log").start()
    ...
    workers.stop(); redis.stop()                        # after gunicorn, in this order
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from .launcher import free_port
from .processes import spawn, stop_group


class BrokerStartError(RuntimeError):
    pass


def redis_server_program() -> str | None:
    """Debian's ``redis-server`` (package ``redis-server``), or None."""
    return shutil.which("redis-server") or (
        "/usr/bin/redis-server" if Path("/usr/bin/redis-server").exists() else None)


def ping(port: int, host: str = "127.0.0.1", timeout_s: float = 1.0) -> bool:
    """Redis answers PING with PONG (RESP, no client library)."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as sock:
            sock.sendall(b"*1\r\n$4\r\nPING\r\n")
            return sock.recv(64).startswith(b"+PONG")
    except OSError:
        return False


@dataclass
class RedisServer:
    """One ``redis-server`` on 127.0.0.1 with its data (the append-only file) in ``folder``.

    Args:
        folder: its own directory (data and log); kept across restarts, so a restarted server
            has every message it had (``--appendonly yes``, ``--appendfsync everysec``).
        port: 0 picks a free port (kept across restarts).
    """

    folder: Path
    port: int = 0
    process: subprocess.Popen | None = field(default=None, init=False)

    def __post_init__(self):
        self.folder = Path(self.folder)
        self.port = self.port or free_port()

    @property
    def url(self) -> str:
        """``OCR_BROKER_URL`` for this server."""
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def log_path(self) -> Path:
        return self.folder / "redis.log"

    def command(self) -> list[str]:
        program = redis_server_program()
        if program is None:
            raise BrokerStartError("redis-server is missing: apt-get install -y redis-server")
        return [program, "--bind", "127.0.0.1", "--port", str(self.port),
                "--dir", str(self.folder.resolve()), "--save", "", "--appendonly", "yes",
                "--appendfsync", "everysec", "--daemonize", "no", "--protected-mode", "yes",
                "--logfile", ""]

    def start(self, timeout_s: float = 30.0) -> "RedisServer":
        """Start it and wait for PING.

        Raises:
            BrokerStartError: it exited, or did not answer within ``timeout_s``.
        """
        if self.running:
            return self
        self.folder.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            self.process = spawn(self.command(), stdout=log, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise BrokerStartError(f"redis-server exited with {self.process.returncode}:\n"
                                       f"{self.log_tail()}")
            if ping(self.port):
                return self
            time.sleep(0.05)
        self.kill()
        raise BrokerStartError(f"redis-server did not answer in {timeout_s} s:\n"
                               f"{self.log_tail()}")

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, grace_s: float = 10.0) -> None:
        """SIGTERM (Redis flushes the append-only file), SIGKILL after ``grace_s``."""
        stop_group(self.process, signal.SIGTERM, grace_s)

    def kill(self) -> None:
        """SIGKILL (what the broker-restart tests do; the append-only file keeps the
        messages written up to a second before)."""
        if self.running:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"


@dataclass
class JobWorkers:
    """``processes`` job worker processes (``manage.py run_job_workers``), each restarted
    (after ``restart_delay_s``) when it exits, until :meth:`stop`. The first start of the first
    process recovers what a killed gateway left queued (``--recover``).

    Args:
        manage_py: the project's ``manage.py``.
        env: the workers' environment on top of this process's (the gateway's settings:
            ``DATABASE_URL``/``OCR_VAR_DIR``, ``OCR_BROKER_URL``, ``TRITON_GRPC_URL``...).
        processes, threads: worker processes, and threads of each.
        log_path: the workers' stdout and stderr (appended).
    """

    manage_py: Path
    env: dict[str, str] = field(default_factory=dict)
    processes: int = 1
    threads: int = 2
    log_path: Path | None = None
    restart_delay_s: float = 0.5
    python: str = sys.executable
    children: list[subprocess.Popen | None] = field(default_factory=list, init=False)
    restarts: int = field(default=0, init=False)

    def __post_init__(self):
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._watcher: threading.Thread | None = None

    def command(self, recover: bool) -> list[str]:
        return [self.python, str(self.manage_py), "run_job_workers",
                "--threads", str(self.threads), *(["--recover"] if recover else [])]

    def _spawn(self, recover: bool) -> subprocess.Popen:
        log = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL
        try:
            return spawn(self.command(recover), stdout=log, stderr=subprocess.STDOUT,
                         stdin=subprocess.DEVNULL, env={**os.environ, **self.env},
                         cwd=str(Path(self.manage_py).parent))
        finally:
            if log is not subprocess.DEVNULL:
                log.close()

    def start(self) -> "JobWorkers":
        if self.log_path:
            Path(self.log_path).parent.mkdir(parents=True, exist_ok=True)
        self._stopping.clear()
        with self._lock:
            self.children = [self._spawn(recover=index == 0)
                             for index in range(self.processes)]
        self._watcher = threading.Thread(target=self._watch, name="job-workers", daemon=True)
        self._watcher.start()
        return self

    @property
    def pids(self) -> list[int]:
        with self._lock:
            return [child.pid for child in self.children
                    if child is not None and child.poll() is None]

    def _watch(self) -> None:
        while not self._stopping.wait(0.2):
            with self._lock:
                for index, child in enumerate(self.children):
                    if child is not None and child.poll() is not None:
                        if self._stopping.is_set():
                            return
                        time.sleep(self.restart_delay_s)
                        self.children[index] = self._spawn(recover=False)
                        self.restarts += 1

    def stop(self, grace_s: float = 15.0) -> None:
        """SIGTERM every worker (each finishes its pages in progress), SIGKILL after
        ``grace_s``."""
        self._stopping.set()
        if self._watcher is not None:
            self._watcher.join(timeout=5)
        with self._lock:
            for child in self.children:
                if child is not None and child.poll() is None:
                    child.send_signal(signal.SIGTERM)
            for child in self.children:
                stop_group(child, signal.SIGTERM, grace_s)
