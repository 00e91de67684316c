"""The processes the benchmark starts: gunicorn servers (gateway, in-process baseline).

Each runs the gateway's own ``deploy/gunicorn.conf.py`` (gthread workers) on a free port on
127.0.0.1, with its output in a log file. Triton is ``ocr_embedded.launcher.EmbeddedTriton``.
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

from ocr_embedded.processes import stop_group

REPO_ROOT = Path(__file__).resolve().parent.parent
GUNICORN_CONF = REPO_ROOT / "deploy" / "gunicorn.conf.py"


class ServerStartError(RuntimeError):
    """A server exited or did not answer in time; the message has the log tail."""


def log_tail(path: Path, lines: int = 30) -> str:
    """The last ``lines`` lines of a log file."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


class Gunicorn:
    """One gunicorn server for ``app`` (a WSGI module path) on 127.0.0.1:``port``.

    Args:
        app: e.g. ``gateway.wsgi`` or ``bench.inprocess.wsgi``.
        port: TCP port.
        workers, threads: gthread workers and threads per worker.
        env: extra environment variables.
        log_path: gunicorn's stdout and stderr (access log included).
    """

    def __init__(self, app: str, port: int, workers: int, threads: int, env: dict,
                 log_path: Path):
        self.app, self.port, self.workers, self.threads = app, port, workers, threads
        self.env, self.log_path = env, Path(log_path)
        self.process: subprocess.Popen | None = None

    def start(self, ready_path: str, timeout_s: float = 300.0,
              count_pids: bool = False) -> None:
        """Start gunicorn and wait until it answers ``GET ready_path`` with 200.

        With ``count_pids`` the answer must carry the worker's ``pid``, and the wait lasts
        until every worker has answered (each has loaded its application).

        Raises:
            ServerStartError: gunicorn exited, or did not answer within ``timeout_s``.
        """
        env = dict(os.environ, **self.env, HTTP_HOST="127.0.0.1", HTTP_PORT=str(self.port),
                   GUNICORN_WORKERS=str(self.workers), GUNICORN_THREADS=str(self.threads))
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "gunicorn", "-c", str(GUNICORN_CONF),
                 *_no_control_socket(), self.app],
                cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True)
        deadline = time.monotonic() + timeout_s
        pids = set()
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ServerStartError(f"gunicorn {self.app} exited with code "
                                       f"{self.process.returncode}\n{log_tail(self.log_path)}")
            answer = self._get(ready_path) if self._workers_booted() >= self.workers else None
            if answer is not None:
                pids.add(answer.get("pid"))
                if not count_pids or len(pids) >= self.workers:
                    return
            time.sleep(0.3)
        self.stop()
        raise ServerStartError(f"gunicorn {self.app} not ready after {timeout_s:.0f} s\n"
                               f"{log_tail(self.log_path)}")

    def _workers_booted(self) -> int:
        return len(re.findall(r"Booting worker with pid",
                              self.log_path.read_text(errors="replace")))

    def _get(self, path: str) -> dict | None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=5) as r:
                return json.loads(r.read() or b"{}") if r.status == 200 else None
        except (OSError, urllib.error.URLError, ValueError):
            return None

    def get_json(self, path: str) -> dict | None:
        """``GET path`` as JSON, or None when it does not answer 200."""
        return self._get(path)

    @property
    def pid(self) -> int:
        return self.process.pid

    def stop(self, grace_s: float = 30.0) -> None:
        """SIGTERM (graceful), then SIGKILL the process group after ``grace_s`` seconds."""
        stop_group(self.process, signal.SIGTERM, grace_s)


def _no_control_socket() -> list[str]:
    """``--no-control-socket`` where gunicorn has one (>= 25): its default path is shared
    by every gunicorn of the user, and the benchmark's servers must not disturb others'."""
    try:
        from gunicorn.config import KNOWN_SETTINGS
    except ImportError:
        return []
    flags = {flag for setting in KNOWN_SETTINGS for flag in getattr(setting, "cli", None) or []}
    return ["--no-control-socket"] if "--no-control-socket" in flags else []


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
    """A fresh SQLite database for the benchmark's gateway, and an API key for it.

    Returns:
        ``(env, key)``: the environment the gateway needs (``OCR_VAR_DIR``) and the key.
    """
    env = {"OCR_VAR_DIR": str(var_dir), "DATABASE_URL": f"sqlite:///{var_dir / 'db.sqlite3'}"}
    manage(["migrate", "--no-input", "--verbosity", "0"], env)
    out = manage(["create_api_key", "benchmark", "--owner", "bench",
                  "--rate-per-minute", "1000000"], env)
    match = re.search(r"API key:\s*(\S+)", out)
    if not match:
        raise ServerStartError(f"create_api_key printed no key: {out!r}")
    return env, match.group(1)


def engine_descriptions(metrics_url: str) -> dict[str, str]:
    """``{"craft v1": engine description}`` from Triton's ``ocr_engine_info`` gauge, with why
    the precision was chosen in parentheses when ``auto`` chose it (may be {})."""
    try:
        with urllib.request.urlopen(metrics_url, timeout=5) as response:
            text = response.read().decode()
    except OSError:
        return {}
    found = {}
    for line in text.splitlines():
        if line.startswith("ocr_engine_info{"):
            labels = dict(re.findall(r'(\w+)="([^"]*)"', line))
            if "model" in labels:
                choice = labels.get("choice", "")
                found[f"{labels['model']} v{labels.get('version', '1')}"] = \
                    labels.get("engine", "") + (f" ({choice})" if choice else "")
    return found
