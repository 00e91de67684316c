"""gunicorn as a process of this machine: the gateway (or the benchmark's in-process baseline)
with the deployment's own ``deploy/gunicorn.conf.py`` (gthread workers), on 127.0.0.1.

No Django here: the application is a module path that gunicorn's workers import.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from .launcher import free_port
from .processes import spawn, stop_group

REPO_ROOT = Path(__file__).resolve().parent.parent
GUNICORN_CONF = REPO_ROOT / "deploy" / "gunicorn.conf.py"
#: Seconds a stopping gunicorn gets (SIGTERM: its workers finish what they hold) before it is
#: killed: its default graceful_timeout (TRITON_TIMEOUT_S + 10, deploy/gunicorn.conf.py).
STOP_GRACE_S = 40.0


class ServerStartError(RuntimeError):
    """A server exited or did not answer in time; the message has the log tail."""


def log_tail(path: Path | None, lines: int = 30) -> str:
    """The last ``lines`` lines of a log file."""
    if path is None:
        return "(its output went to the terminal)"
    try:
        return "\n".join(Path(path).read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


class Gunicorn:
    """One gunicorn server for ``app`` (a WSGI module path) on 127.0.0.1:``port``.

    Args:
        app: e.g. ``gateway.wsgi`` or ``bench.inprocess.wsgi``.
        port: TCP port (0 picks a free one).
        workers, threads: gthread workers and threads per worker (None:
            ``deploy/gunicorn.conf.py``'s, from ``GUNICORN_WORKERS`` and ``GUNICORN_THREADS``).
        env: extra environment variables.
        log_path: gunicorn's stdout and stderr (access log included); None: this process's
            (the terminal of ``make serve``).
    """

    def __init__(self, app: str, port: int = 0, workers: int | None = None,
                 threads: int | None = None, env: dict | None = None,
                 log_path: Path | None = None):
        self.app, self.port = app, port or free_port()
        self.workers, self.threads = workers, threads
        self.env = dict(env or {})
        self.log_path = Path(log_path) if log_path is not None else None
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, ready_path: str, timeout_s: float = 300.0,
              count_pids: bool = False) -> "Gunicorn":
        """Start gunicorn and wait until it answers ``GET ready_path`` with 200 (with a log
        file and a number of workers: once every worker has booted).

        With ``count_pids`` the answer must carry the worker's ``pid``, and the wait lasts
        until every worker has answered (each has loaded its application).

        Raises:
            ServerStartError: gunicorn exited, or did not answer within ``timeout_s``.
        """
        sizes = {name: str(value) for name, value in (("GUNICORN_WORKERS", self.workers),
                                                       ("GUNICORN_THREADS", self.threads))
                 if value is not None}
        env = dict(os.environ, **self.env, HTTP_HOST="127.0.0.1", HTTP_PORT=str(self.port),
                   **sizes)
        command = [sys.executable, "-m", "gunicorn", "-c", str(GUNICORN_CONF),
                   *_no_control_socket(), self.app]
        # A session of its own: a Ctrl-C meant for the caller does not reach it, which stops
        # it with one SIGTERM (gthread workers that get both SIGINT and the master's SIGQUIT
        # can hang on shutdown).
        if self.log_path is None:
            self.process = spawn(command, cwd=REPO_ROOT, env=env)
        else:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.log_path, "ab") as log:
                self.process = spawn(command, cwd=REPO_ROOT, env=env, stdout=log,
                                     stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout_s
        pids = set()
        wanted = self.workers or 1
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ServerStartError(f"gunicorn {self.app} exited with code "
                                       f"{self.process.returncode}\n{log_tail(self.log_path)}")
            answer = self._get(ready_path) if self._booted() else None
            if answer is not None:
                pids.add(answer.get("pid"))
                if not count_pids or len(pids) >= wanted:
                    return self
            time.sleep(0.3)
        self.stop()
        raise ServerStartError(f"gunicorn {self.app} not ready after {timeout_s:.0f} s\n"
                               f"{log_tail(self.log_path)}")

    def _booted(self) -> bool:
        """Every worker has booted, by the log (True when that cannot be told)."""
        if self.log_path is None or self.workers is None:
            return True
        booted = len(re.findall(r"Booting worker with pid",
                                self.log_path.read_text(errors="replace")))
        return booted >= self.workers

    def _get(self, path: str) -> dict | None:
        try:
            with urllib.request.urlopen(f"{self.url}{path}", timeout=5) as r:
                return json.loads(r.read() or b"{}") if r.status == 200 else None
        except (OSError, urllib.error.URLError, ValueError):
            return None

    def get_json(self, path: str) -> dict | None:
        """``GET path`` as JSON, or None when it does not answer 200."""
        return self._get(path)

    @property
    def pid(self) -> int:
        return self.process.pid

    def stop(self, grace_s: float = STOP_GRACE_S) -> None:
        """SIGTERM (graceful), then SIGKILL the process group after ``grace_s`` seconds."""
        stop_group(self.process, signal.SIGTERM, grace_s)


def _no_control_socket() -> list[str]:
    """``--no-control-socket`` where gunicorn has one (>= 25): its default path is shared
    by every gunicorn of the user, and these servers must not disturb others'."""
    try:
        from gunicorn.config import KNOWN_SETTINGS
    except ImportError:
        return []
    flags = {flag for setting in KNOWN_SETTINGS for flag in getattr(setting, "cli", None) or []}
    return ["--no-control-socket"] if "--no-control-socket" in flags else []
