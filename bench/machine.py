"""What the benchmark ran on: CPU model, cores, memory, OS, library versions."""

from __future__ import annotations

import os
import platform
import re
from pathlib import Path

#: CPU flags that decide which precision OpenVINO picks (BF16 needs AVX-512 BF16 or AMX).
_INTERESTING_FLAGS = ("avx2", "avx512f", "avx512_bf16", "avx512_vnni", "amx_tile", "amx_bf16",
                      "amx_int8", "hypervisor")


def _cpuinfo() -> dict[str, str]:
    """The first processor block of ``/proc/cpuinfo`` as a dict (empty off Linux)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return {}
    info = {}
    for line in text.split("\n\n")[0].splitlines():
        key, _, value = line.partition(":")
        info[key.strip()] = value.strip()
    return info


def _version(module: str) -> str | None:
    try:
        from importlib.metadata import version

        return version(module)
    except Exception:  # noqa: BLE001 - a missing package is just "not installed"
        return None


def machine_info() -> dict:
    """Describe this machine for the results: CPU, cores, memory (bytes), OS, versions.

    ``cpu.logical_cores`` is what the OS schedules on (``os.cpu_count()``);
    ``cpu.usable_cores`` honours CPU affinity (containers, taskset).
    """
    import psutil

    cpu = _cpuinfo()
    flags = set(cpu.get("flags", "").split())
    return {
        "cpu": {
            "model": cpu.get("model name") or platform.processor() or "unknown",
            "family_model_stepping": "/".join(
                cpu.get(k, "?") for k in ("cpu family", "model", "stepping")),
            "logical_cores": os.cpu_count(),
            "usable_cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
            else os.cpu_count(),
            "physical_cores": psutil.cpu_count(logical=False),
            "flags": sorted(f for f in _INTERESTING_FLAGS if f in flags),
        },
        "memory_bytes": psutil.virtual_memory().total,
        "os": f"{platform.system()} {platform.release()}",
        "distribution": _os_release(),
        "python": platform.python_version(),
        "versions": {name: _version(name) for name in (
            "nvidia-pytriton", "tritonclient", "openvino", "onnxruntime", "numpy",
            "opencv-python-headless", "django", "gunicorn", "grpcio")},
    }


def _os_release() -> str:
    try:
        text = Path("/etc/os-release").read_text()
    except OSError:
        return ""
    match = re.search(r'^PRETTY_NAME="?([^"\n]*)"?', text, re.M)
    return match.group(1) if match else ""


def describe_cpu(info: dict) -> str:
    """One line for tables: ``Intel(R) Xeon(R) Processor, 2 cores (AMX, AVX-512 BF16)``."""
    cpu = info["cpu"]
    extras = [label for flag, label in (("amx_bf16", "AMX-BF16"), ("avx512_bf16", "AVX-512 BF16"))
              if flag in cpu["flags"]]
    virtual = ", virtual machine" if "hypervisor" in cpu["flags"] else ""
    extra = f" ({', '.join(extras)}{virtual})" if extras or virtual else ""
    return (f"{cpu['model']} [family/model/stepping {cpu['family_model_stepping']}], "
            f"{cpu['usable_cores']} cores{extra}, "
            f"{info['memory_bytes'] / 2**30:.0f} GiB RAM")
