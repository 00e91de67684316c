"""``make test``'s runner: pytest, then nothing it started is left running, and the budget.

``python -m tests.runner [pytest arguments]`` runs pytest as a child leading a session of its
own, so that everything it starts without a session of its own (Playwright's Chromium, a job
worker or gunicorn a test starts) is in that session, and gives it ``OCR_PROCESS_GROUPS_FILE``,
where the servers it starts in sessions of their own write theirs
(:func:`ocr_embedded.processes.spawn`: Triton and its Python stubs, gunicorn, nginx, Redis, the
job workers). When pytest ends, however it ends (passed, failed, stopped by Ctrl-C or SIGTERM,
which are passed on to it so that it tears its fixtures down, or killed), every process of
those sessions that still runs is stopped and the Python-backend shared-memory regions no
process holds any more are removed (:func:`ocr_embedded.launcher.remove_orphaned_regions`).
The runner asks the kernel for SIGTERM when its parent (``make``) dies, so killing ``make``
stops the run the same way. Last it prints how long the run took and the CPU it ran on: the
suite's time budget is kept per CPU kind (README, "Tests").
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.machine import describe_cpu
from ocr_embedded.launcher import remove_orphaned_regions
from ocr_embedded.processes import (GROUPS_FILE, recorded_sessions, session_members,
                                     stop_sessions)

#: prctl(2)'s option that delivers a signal to this process when its parent exits.
PR_SET_PDEATHSIG = 1
#: The signals passed on to pytest; a second one kills it (a user who presses Ctrl-C twice
#: does not want to wait for the teardown).
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def die_with_parent() -> None:
    """SIGTERM to this process when its parent exits (Linux; elsewhere nothing)."""
    parent = os.getppid()
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:           # the parent exited before the request took effect
        os.kill(os.getpid(), signal.SIGTERM)


def run(arguments: list[str]) -> int:
    """Run pytest with ``arguments``; returns its exit status (128 + the signal that killed
    it, if one did)."""
    registry = Path(tempfile.mkstemp(prefix="ocr-test-groups-")[1])
    pytest = None
    signals: list[int] = []

    def forward(signum, frame):
        signals.append(signum)
        if pytest is not None and pytest.poll() is None:
            os.kill(pytest.pid, signum if len(signals) == 1 else signal.SIGKILL)

    for signum in FORWARDED:
        signal.signal(signum, forward)
    die_with_parent()
    started = time.monotonic()
    try:
        pytest = subprocess.Popen([sys.executable, "-m", "pytest", *arguments],
                                  env={**os.environ, GROUPS_FILE: str(registry)},
                                  start_new_session=True)
        status = pytest.wait()      # retried on EINTR by Python itself (PEP 475)
    finally:
        sessions = recorded_sessions(registry) | ({pytest.pid} if pytest else set())
        # Helpers that end when pytest does (multiprocessing's resource tracker and fork
        # server) get a moment to notice.
        settle = time.monotonic() + 3
        while session_members(sessions) and time.monotonic() < settle:
            time.sleep(0.1)
        left = stop_sessions(sessions)
        regions = remove_orphaned_regions(min_age_s=10)
        registry.unlink(missing_ok=True)
    minutes, seconds = divmod(round(time.monotonic() - started), 60)
    print(f"\nmake test: pytest ran {minutes} min {seconds} s on {describe_cpu()}", flush=True)
    if left:
        print(f"make test: stopped {len(left)} processes the run left: "
              + "; ".join(f"{pid} {command[:120]}" for pid, command in left.items()), flush=True)
    if regions:
        print(f"make test: removed {regions} shared-memory regions no process held", flush=True)
    return 128 - status if status < 0 else status


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
