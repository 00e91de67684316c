"""Keep an embedded Triton running: :class:`TritonSupervisor` restarts it when it dies.

``make serve`` runs one ``tritonserver`` next to gunicorn; when it dies (a crash, the OOM
killer) nothing else would start it again and the gateway would answer 503 forever. The
supervisor watches the process from a thread and starts it again on the same ports, after a
backoff, logging why it died; the gateway's gRPC channel reconnects by itself (its reconnect
backoff is capped at 2 s) and ``/api/ready`` turns 200 once the ensemble is ready again.
No Django here.
"""

from __future__ import annotations

import logging
import signal
import threading
import time

from .launcher import EmbeddedTriton, TritonStartError

logger = logging.getLogger(__name__)


def exit_reason(returncode: int) -> str:
    """``"was killed by SIGKILL"`` or ``"exited with code 1"`` for a process's return code."""
    if returncode < 0:
        try:
            return f"was killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"was killed by signal {-returncode}"
    return f"exited with code {returncode}"


class TritonSupervisor:
    """Starts ``triton`` and starts it again, on the same ports, whenever its process exits.

    The wait before a restart doubles from ``initial_backoff_s`` up to ``max_backoff_s`` while
    restarts keep failing or the server keeps dying, and starts over once a server has run
    ``stable_s`` seconds.

    Args:
        triton: the server (not started yet).
        initial_backoff_s, max_backoff_s: the first and the longest wait before a restart, s.
        stable_s: uptime after which the backoff starts over, s.
        start_timeout_s: how long one restart may take to get the models ready, s.
        poll_s: how often the process is looked at, s.

    Attributes:
        restarts: how many times the server was started again.
    """

    def __init__(self, triton: EmbeddedTriton, initial_backoff_s: float = 1.0,
                 max_backoff_s: float = 30.0, stable_s: float = 60.0,
                 start_timeout_s: float = 600.0, poll_s: float = 0.5):
        self.triton = triton
        self.initial_backoff_s, self.max_backoff_s = initial_backoff_s, max_backoff_s
        self.stable_s, self.start_timeout_s, self.poll_s = stable_s, start_timeout_s, poll_s
        self.restarts = 0
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, timeout_s: float = 600.0) -> "TritonSupervisor":
        """Start the server, wait until its models are ready, then watch it.

        Raises:
            TritonStartError: the first start failed (nothing is restarted then).
        """
        self.triton.start(timeout_s=timeout_s)
        self._thread = threading.Thread(target=self._watch, name="triton-supervisor",
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop watching, then stop the server (also one a restart is starting)."""
        self._stopping.set()
        self.triton.stop()
        if self._thread is not None:
            self._thread.join(timeout=self.start_timeout_s + 30)
        self.triton.stop()

    def _watch(self) -> None:
        backoff = self.initial_backoff_s
        up_since = time.monotonic()
        while not self._stopping.wait(self.poll_s):
            process = self.triton.process
            if process is None or process.poll() is None:
                continue
            if time.monotonic() - up_since >= self.stable_s:
                backoff = self.initial_backoff_s
            logger.error("Triton (pid %d) %s; starting it again in %.0f s. Its log ends:\n%s",
                         process.pid, exit_reason(process.returncode), backoff,
                         self.triton.log_tail(10))
            self.triton.kill()               # its Python stubs and their shared memory
            if self._stopping.wait(backoff):
                return
            try:
                self.triton.start(timeout_s=self.start_timeout_s)
            except TritonStartError as exc:
                if not self._stopping.is_set():
                    logger.error("Triton did not start again: %s", exc)
            else:
                self.restarts += 1
                up_since = time.monotonic()
                logger.warning("Triton is ready again (pid %d, restart %d)",
                               self.triton.process.pid, self.restarts)
            backoff = min(backoff * 2, self.max_backoff_s)
