"""Child servers in process groups of their own: started, written down, stopped. No Django.

Every server this project starts on one machine (Triton, gunicorn, nginx, redis-server, job
workers) leads a session of its own (``start_new_session``): a terminal's Ctrl-C does not reach
it, so its owner stops it in order, and its children (Triton's Python stubs, nginx's and
gunicorn's workers) stay in its session, so the whole group can be stopped at once. When
``OCR_PROCESS_GROUPS_FILE`` names a file, each leader's pid is appended to it: whoever set it
(``make test``'s runner, ``tests/runner.py``) stops every group written there once its run
ends, however it ended (a test run killed with SIGKILL tears nothing down itself).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

#: The environment variable naming the file of started process groups (see the docstring).
GROUPS_FILE = "OCR_PROCESS_GROUPS_FILE"


def spawn(command: list[str], **popen) -> subprocess.Popen:
    """Start ``command`` leading a new session (``popen``: more :class:`subprocess.Popen`
    arguments), and append its pid to ``OCR_PROCESS_GROUPS_FILE`` when that is set."""
    process = subprocess.Popen(command, start_new_session=True, **popen)
    registry = os.environ.get(GROUPS_FILE)
    if registry:
        with open(registry, "a", encoding="ascii") as out:
            out.write(f"{process.pid}\n")
    return process


def stop_group(process: subprocess.Popen | None, first_signal: int, grace_s: float) -> None:
    """Send ``first_signal`` (the program's graceful stop: SIGTERM, nginx's SIGQUIT), wait up
    to ``grace_s`` seconds, then SIGKILL the whole process group (it was started with
    :func:`spawn`). Does nothing for a process that is absent or has exited."""
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


def session_members(sessions: set[int]) -> list[int]:
    """Pids of the running processes whose session id is in ``sessions`` (read from
    ``/proc/<pid>/stat``; a session outlives its leader, so orphaned children are found too)."""
    members = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            stat = (proc / "stat").read_text()
        except OSError:
            continue
        # Fields after the command (in parentheses, which may hold spaces): state, ppid, pgrp,
        # session.
        fields = stat.rsplit(")", 1)[-1].split()
        if len(fields) > 3 and fields[0] != "Z" and int(fields[3]) in sessions:
            members.append(int(proc.name))
    return members


def stop_sessions(sessions: set[int], grace_s: float = 10.0) -> dict[int, str]:
    """Stop every process of ``sessions``: SIGTERM, then SIGKILL what still runs after
    ``grace_s`` seconds. Returns the ones that were running: ``{pid: command line}``."""
    found = {pid: command_line(pid) for pid in session_members(sessions)}
    for pid in found:
        _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while session_members(sessions) and time.monotonic() < deadline:
        time.sleep(0.2)
    for pid in session_members(sessions):
        _signal(pid, signal.SIGKILL)
    return found


def command_line(pid: int) -> str:
    """``/proc/<pid>/cmdline`` as one line ("" once the process is gone)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(
            errors="replace").strip()
    except OSError:
        return ""


def recorded_sessions(path: Path) -> set[int]:
    """The pids written in an ``OCR_PROCESS_GROUPS_FILE`` (none when it is absent)."""
    try:
        return {int(line) for line in Path(path).read_text().split() if line.isdigit()}
    except OSError:
        return set()


def _signal(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except (ProcessLookupError, PermissionError):
        pass
