"""Stopping a child process that leads its own process group (nginx, gunicorn). No Django."""

from __future__ import annotations

import os
import signal
import subprocess


def stop_group(process: subprocess.Popen | None, first_signal: int, grace_s: float) -> None:
    """Send ``first_signal`` (the program's graceful stop: SIGTERM, nginx's SIGQUIT), wait up
    to ``grace_s`` seconds, then SIGKILL the whole process group (it was started with
    ``start_new_session=True``). Does nothing for a process that is absent or has exited."""
    if process is None or process.poll() is not None:
        return
    process.send_signal(first_signal)
    try:
        process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        process.wait(timeout=10)
