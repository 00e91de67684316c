"""Peak resident memory of the benchmark's server processes, sampled with psutil.

A background thread samples every process of each registered *group* (a root process and
all its descendants: gunicorn's master and workers, tritonserver and its Python-backend stubs)
every ``interval_s`` seconds. For the current *phase* (one benchmark mode) it keeps:

* the peak RSS of every process (bytes), labelled by role (``gunicorn worker``,
  ``tritonserver``, ``python stub: craft``, ...);
* the peak of each group's summed RSS and summed PSS at one sampling instant (bytes).

RSS counts shared pages (code, the Python backend's shared-memory pool, pages a forked worker
still shares with its master) once per process, so a sum of RSS over-counts; PSS splits every
shared page between the processes that map it, so the PSS sum is the memory the group really
occupies. Both are reported. Sampling can miss a spike shorter than ``interval_s``.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import psutil


def process_role(proc: psutil.Process) -> str:
    """A readable role for a server process, from its command line."""
    try:
        cmdline = proc.cmdline()
    except (psutil.Error, OSError):
        return "exited"
    joined = " ".join(cmdline)
    if "triton_python_backend_stub" in joined:
        # The stub's first argument is the model file: <repository>/<model>/<version>/model.py
        parts = cmdline[1].split("/") if len(cmdline) > 1 else []
        model = parts[-3] if len(parts) >= 3 else "?"
        return f"python stub: {model}"
    if cmdline and cmdline[0].endswith("tritonserver"):
        return "tritonserver"
    if "gunicorn" in joined:
        try:
            parent = proc.parent()
            is_worker = parent is not None and "gunicorn" in " ".join(parent.cmdline())
        except (psutil.Error, OSError):
            is_worker = False
        return "gunicorn worker" if is_worker else "gunicorn master"
    return proc.name()


@dataclass
class _Group:
    root_pid: int
    descendants: bool = True
    label: str | None = None
    peak_rss_sum: int = 0
    peak_pss_sum: int = 0
    per_process: dict[int, dict] = field(default_factory=dict)
    include_root: bool = True


class MemorySampler:
    """Samples the RSS and PSS of process groups in a background thread.

    Use :meth:`track` to add a group (a root pid and its descendants), :meth:`start_phase` to
    reset the peaks at the start of a benchmark mode, and :meth:`phase_report` to read them.

    Args:
        interval_s: seconds between samples.
        pss: also read PSS (``/proc/<pid>/smaps_rollup``; slower, but the honest total).
    """

    def __init__(self, interval_s: float = 0.25, pss: bool = True):
        self.interval_s = interval_s
        self.pss = pss
        self._groups: dict[str, _Group] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def track(self, name: str, root_pid: int, descendants: bool = True,
              label: str | None = None, root: bool = True) -> None:
        """Sample ``root_pid`` (and all its descendants) as the group ``name`` from now on.

        ``label`` names the root process in reports instead of its derived role; ``root``
        False samples only its descendants (the servers a benchmark process started, not the
        benchmark).
        """
        with self._lock:
            self._groups[name] = _Group(root_pid, descendants, label, include_root=root)

    def untrack(self, name: str) -> None:
        """Stop sampling the group ``name`` (its peaks so far are forgotten)."""
        with self._lock:
            self._groups.pop(name, None)

    def start_phase(self) -> None:
        """Forget all peaks: what follows belongs to a new benchmark mode."""
        with self._lock:
            for group in self._groups.values():
                group.peak_rss_sum = group.peak_pss_sum = 0
                group.per_process.clear()
        self.sample()

    def phase_report(self, names: list[str] | None = None) -> dict:
        """Peaks since :meth:`start_phase`, for the groups ``names`` (default: all).

        Returns:
            ``{group: {"peak_rss_sum_bytes", "peak_pss_sum_bytes", "processes": [
            {"pid", "role", "peak_rss_bytes", "peak_pss_bytes"}, ...]}}``.
        """
        self.sample()
        with self._lock:
            report = {}
            for name, group in self._groups.items():
                if names is not None and name not in names:
                    continue
                report[name] = {
                    "peak_rss_sum_bytes": group.peak_rss_sum,
                    "peak_pss_sum_bytes": group.peak_pss_sum if self.pss else None,
                    "processes": sorted(group.per_process.values(),
                                        key=lambda p: (p["role"], p["pid"])),
                }
            return report

    def sample(self) -> None:
        """Take one sample of every group now."""
        with self._lock:
            groups = list(self._groups.items())
        for _, group in groups:
            try:
                root = psutil.Process(group.root_pid)
                procs = (([root] if group.include_root else [])
                         + (root.children(recursive=True) if group.descendants else []))
            except psutil.Error:
                continue
            rss_sum = pss_sum = 0
            seen = []
            for proc in procs:
                try:
                    if self.pss:
                        full = proc.memory_full_info()
                        rss, pss = full.rss, full.pss
                    else:
                        rss, pss = proc.memory_info().rss, 0
                except (psutil.Error, OSError):
                    continue
                rss_sum += rss
                pss_sum += pss
                seen.append((proc, rss, pss))
            with self._lock:
                group.peak_rss_sum = max(group.peak_rss_sum, rss_sum)
                group.peak_pss_sum = max(group.peak_pss_sum, pss_sum)
                for proc, rss, pss in seen:
                    entry = group.per_process.get(proc.pid)
                    if entry is None:
                        entry = group.per_process[proc.pid] = {
                            "pid": proc.pid,
                            "role": group.label if group.label and proc.pid == group.root_pid
                            else process_role(proc),
                            "peak_rss_bytes": 0, "peak_pss_bytes": 0}
                    entry["peak_rss_bytes"] = max(entry["peak_rss_bytes"], rss)
                    entry["peak_pss_bytes"] = max(entry["peak_pss_bytes"], pss)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.sample()

    def __enter__(self) -> "MemorySampler":
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="memory-sampler", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)


def merge_reports(reports: list[dict]) -> dict:
    """Combine :meth:`MemorySampler.phase_report` results: the largest peak of each."""
    merged: dict = {}
    for report in reports:
        for name, group in report.items():
            target = merged.setdefault(name, {"peak_rss_sum_bytes": 0, "peak_pss_sum_bytes": 0,
                                              "processes": {}})
            target["peak_rss_sum_bytes"] = max(target["peak_rss_sum_bytes"],
                                               group["peak_rss_sum_bytes"])
            target["peak_pss_sum_bytes"] = max(target["peak_pss_sum_bytes"],
                                               group["peak_pss_sum_bytes"] or 0)
            for proc in group["processes"]:
                entry = target["processes"].setdefault(proc["pid"], dict(proc))
                entry["peak_rss_bytes"] = max(entry["peak_rss_bytes"], proc["peak_rss_bytes"])
                entry["peak_pss_bytes"] = max(entry["peak_pss_bytes"], proc["peak_pss_bytes"])
    for group in merged.values():
        group["processes"] = sorted(group["processes"].values(),
                                    key=lambda p: (p["role"], p["pid"]))
    return merged
