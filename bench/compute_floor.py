"""The compute floor of a network on this CPU: its multiply-adds over the CPU's peak rate.

Multiply-adds (MAC) are counted from the ONNX graph with ONNX shape inference at a concrete
input shape: a ``Conv`` costs ``output elements x input channels / groups x kernel area``, a
``MatMul`` ``output elements x inner dimension``; everything else (ReLU, resize, pooling) is
left out, so the floor is a lower bound. CRAFT at 1280x736 is about 335 GMAC, the LinkRefiner
107 GMAC.

The peak is ``cores x clock x MAC per cycle per core`` with the textbook widths of the vector
units (two FMA pipes): FP32 16 MAC/cycle with AVX2 + FMA, 32 with AVX-512; INT8 32 with AVX2
(``vpmaddubsw``), 64 with AVX-VNNI, 128 with AVX-512 VNNI; BF16 64 with AVX-512 BF16, 1024 with
AMX. Real kernels reach a fraction of it; the ratio measured / floor says how much.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

#: MAC per cycle per core by precision, the best instruction set first.
PEAK_MAC_PER_CYCLE = {
    "fp32": (("avx512f", 32), ("avx2", 16)),
    "int8": (("amx_int8", 2048), ("avx512_vnni", 128), ("avx_vnni", 64), ("avx2", 32)),
    "bf16": (("amx_bf16", 1024), ("avx512_bf16", 64)),
}


def cpu_flags_and_ghz() -> tuple[set[str], float]:
    """The CPU's flags and its clock in GHz (``cpu MHz`` of /proc/cpuinfo; 0 when unknown)."""
    flags, mhz = set(), 0.0
    try:
        block = Path("/proc/cpuinfo").read_text().split("\n\n")[0]
    except OSError:
        return flags, 0.0
    for line in block.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "flags":
            flags = set(value.split())
        elif key.strip() == "cpu MHz":
            mhz = float(value)
    return flags, mhz / 1000.0


def peak_gmac_per_s(precision: str, flags: set[str], ghz: float, cores: int) -> float | None:
    """The peak rate in GMAC/s, None when the CPU has no instructions for ``precision``."""
    for flag, per_cycle in PEAK_MAC_PER_CYCLE.get(precision, ()):
        if flag in flags:
            return cores * ghz * per_cycle
    return None


@lru_cache(maxsize=16)
def gmac(onnx_path: str, input_shapes: tuple[tuple[str, tuple[int, ...]], ...]) -> float:
    """Multiply-adds of one inference, in GMAC.

    Args:
        input_shapes: ``((input name, shape), ...)``, every dimension concrete.
    """
    import numpy as np
    import onnx
    from onnx import numpy_helper, shape_inference

    model = onnx.load(onnx_path)
    shapes = dict(input_shapes)
    for tensor in model.graph.input:
        if tensor.name in shapes:
            dims = tensor.type.tensor_type.shape.dim
            for dim, size in zip(dims, shapes[tensor.name]):
                dim.ClearField("dim_param")
                dim.dim_value = size
    inferred = shape_inference.infer_shapes(model)
    known = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim]
             for v in list(inferred.graph.value_info) + list(inferred.graph.output)
             + list(inferred.graph.input)}
    weights = {w.name: numpy_helper.to_array(w).shape for w in model.graph.initializer}
    total = 0
    for node in model.graph.node:
        out = known.get(node.output[0])
        if not out or 0 in out:
            continue
        if node.op_type == "Conv" and node.input[1] in weights:
            _, cin_per_group, *kernel = weights[node.input[1]]
            total += int(np.prod(out)) * cin_per_group * int(np.prod(kernel))
        elif node.op_type == "MatMul":
            left = known.get(node.input[0]) or weights.get(node.input[0])
            if left:
                total += int(np.prod(out)) * int(left[-1])
    return total / 1e9


def floor_ms(onnx_path: str, input_shapes: dict[str, tuple[int, ...]], precision: str,
             cores: int | None = None) -> tuple[float, float | None]:
    """``(GMAC, floor in ms)`` of one inference at ``input_shapes`` in ``precision`` on this
    CPU (the floor None when the CPU lacks that precision's instructions or its clock)."""
    flags, ghz = cpu_flags_and_ghz()
    cores = cores or (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                      else os.cpu_count() or 1)
    work = gmac(str(onnx_path), tuple(sorted((k, tuple(v)) for k, v in input_shapes.items())))
    peak = peak_gmac_per_s(precision, flags, ghz, cores) if ghz else None
    return work, (work / peak * 1000.0 if peak else None)
