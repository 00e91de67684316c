"""What a benchmark ran on, in one line: the CPU, its cores and the SIMD features that decide
which precision pays (a performance claim names the CPU it holds for)."""

from __future__ import annotations

import os
import platform
from pathlib import Path

#: CPU flags that change which engine precision is fastest: BF16 (AVX-512 BF16, AMX), INT8
#: (AVX-512 VNNI, AVX-VNNI, AMX), and AVX2 / AVX-512 themselves.
FLAGS = ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "avx512_bf16", "amx_bf16", "amx_int8")


def describe_cpu() -> str:
    """``AMD EPYC, 2 cores, flags avx2 (no avx512f, ...)``: the model name, the cores this
    process may use, and which of :data:`FLAGS` the CPU has and lacks."""
    model, flags = platform.processor() or "unknown CPU", set()
    try:
        block = Path("/proc/cpuinfo").read_text().split("\n\n")[0]
    except OSError:
        block = ""
    for line in block.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "model name":
            model = value.strip()
        elif key.strip() == "flags":
            flags = set(value.split())
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    has = [flag for flag in FLAGS if flag in flags]
    lacks = [flag for flag in FLAGS if flag not in flags]
    return (f"{model}, {cores} cores, flags {' '.join(has) or 'none of ' + ' '.join(FLAGS)}"
            + (f" (no {', '.join(lacks)})" if has and lacks else ""))
