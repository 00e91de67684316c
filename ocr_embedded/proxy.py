"""Debian's nginx as a process of this machine, in front of gunicorn: the buffering proxy of
``make serve``, the benchmarks and the tests, with the configuration every deployment's proxy
has (:mod:`ocr_proxy.config`, which says what it enforces). No Django here.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from ocr_proxy.config import ProxySettings, server_config

from .processes import spawn, stop_group


class ProxyStartError(RuntimeError):
    """nginx is missing, exited, or did not listen in time; the message has the log tail."""


def nginx_binary() -> str:
    """Path of Debian's nginx (``/usr/sbin`` is not on every user's PATH).

    Raises:
        ProxyStartError: nginx is not installed.
    """
    found = shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin:/sbin")
    if not found:
        raise ProxyStartError("nginx is not installed: apt-get install nginx")
    return found


@dataclass
class BufferingProxy:
    """One nginx process in front of gunicorn (``make serve``, tests, benchmarks).

    Args:
        listen_host, listen_port: where clients connect (0 picks a free port).
        upstream: gunicorn's ``host:port``.
        log_path: nginx's error log (timed-out and refused clients are logged there).
        settings: limits and timeouts; by default those of the environment.
    """

    listen_host: str
    listen_port: int
    upstream: str
    log_path: Path
    settings: ProxySettings = field(default_factory=ProxySettings.from_environ)
    process: subprocess.Popen | None = field(default=None, init=False)
    _runtime: Path | None = field(default=None, init=False)

    def __post_init__(self):
        self.log_path = Path(self.log_path)
        if not self.listen_port:
            with socket.socket() as sock:
                sock.bind((self.listen_host, 0))
                self.listen_port = sock.getsockname()[1]

    @property
    def url(self) -> str:
        host = "127.0.0.1" if self.listen_host in ("", "0.0.0.0") else self.listen_host
        return f"http://{host}:{self.listen_port}"

    def main_config(self, runtime: Path) -> str:
        """nginx.conf: one worker in the foreground, its state in ``runtime``."""
        # As root, nginx's workers run as nobody: they need only the temporary folders, which
        # nginx makes and hands to them itself.
        user = "user nobody nogroup;\n" if os.geteuid() == 0 else ""
        temp = "\n    ".join(f"{kind}_temp_path {runtime / kind};"
                             for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
        return f"""{user}daemon off;
worker_processes 1;
worker_rlimit_nofile 8192;
pid {runtime / "nginx.pid"};
error_log {self.log_path} error;
events {{
    worker_connections 4096;
}}
http {{
    access_log off;
    {temp}
    include {runtime / "gateway.conf"};
}}
"""

    def start(self, timeout_s: float = 10.0) -> "BufferingProxy":
        """Write the configuration, start nginx, and wait until it accepts connections.

        Raises:
            ProxyStartError: nginx is missing, exited, or did not listen within
                ``timeout_s``; the message ends with the log's last lines.
        """
        binary = nginx_binary()
        self._runtime = Path(tempfile.mkdtemp(prefix="ocr-proxy-"))
        self._runtime.chmod(0o755)
        listen = f"{self.listen_host}:{self.listen_port}" if self.listen_host else \
            str(self.listen_port)
        (self._runtime / "gateway.conf").write_text(
            server_config(self.settings, listen, self.upstream))
        (self._runtime / "nginx.conf").write_text(self.main_config(self._runtime))
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            self.process = spawn(
                [binary, "-p", str(self._runtime), "-e", str(self.log_path),
                 "-c", str(self._runtime / "nginx.conf")],
                stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self._cleanup()
                raise ProxyStartError(f"nginx exited with code {self.process.returncode}.\n"
                                      f"{self.log_tail()}")
            try:
                with socket.create_connection(
                        ("127.0.0.1" if self.listen_host in ("", "0.0.0.0") else
                         self.listen_host, self.listen_port), timeout=1):
                    return self
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise ProxyStartError(f"nginx did not listen on {listen} within {timeout_s:.0f} s.\n"
                              f"{self.log_tail()}")

    def stop(self, grace_s: float = 10.0) -> None:
        """SIGQUIT (finish the requests in progress), then SIGKILL after ``grace_s``."""
        stop_group(self.process, signal.SIGQUIT, grace_s)
        self._cleanup()

    def _cleanup(self) -> None:
        if self._runtime is not None:
            shutil.rmtree(self._runtime, ignore_errors=True)
            self._runtime = None

    def log_tail(self, lines: int = 20) -> str:
        """The last ``lines`` lines of nginx's log."""
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc_info):
        self.stop()
