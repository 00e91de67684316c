"""Inference engines that run an ONNX file on the CPU: OpenVINO or onnxruntime.

Both take and return plain dicts of numpy arrays keyed by the ONNX tensor names, so the
Triton Python models (and the benchmark's in-process baseline) do not care which one runs.

OpenVINO runs a network in one of several precisions: FP32 always; BF16 where the CPU plugin
offers it (AVX-512 BF16 or AMX); INT8 where a quantised model sits beside the ONNX file
(:mod:`ocr_pipeline.int8`, made by :mod:`ocr_pipeline.quantization`). The default, ``auto``,
keeps a reduced precision only where it is measured faster and agrees with FP32 on a
validation set (:mod:`ocr_pipeline.precision`).
"""

from __future__ import annotations

import ctypes
import logging
import os
import threading
import time
import weakref
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from ocr_contract.settings import ENGINE_CACHE_DIR

from .int8 import int8_path, read_int8_record

logger = logging.getLogger(__name__)

ENGINES = ("openvino", "onnxruntime")
PRECISIONS = ("auto", "fp32", "bf16", "int8")
PERFORMANCE_HINTS = ("LATENCY", "THROUGHPUT")


#: Model-config parameter -> the environment variable that overrides it (in every model).
ENVIRONMENT = {
    "engine": "OCR_ENGINE",
    "precision": "OCR_ENGINE_PRECISION",
    "performance_hint": "OCR_ENGINE_PERFORMANCE_HINT",
    "threads": "OCR_ENGINE_THREADS",
    "streams": "OCR_ENGINE_STREAMS",
    "cache_dir": ENGINE_CACHE_DIR.name,
    "release_idle_s": "OCR_ENGINE_RELEASE_IDLE_S",
}
#: Seconds an OpenVINO network may sit unused before its intermediate buffers are released
#: (:class:`IdleRelease`). Measured on CRAFT INT8 (Xeon, 2 cores, AVX-512 VNNI): 1.35 GiB PSS
#: after its warm-up shapes, 0.24 GiB released; the first inference after a release 1.63 s
#: instead of 1.26 s at 1280x736 (the buffers allocated again).
DEFAULT_RELEASE_IDLE_S = 60.0


class EngineConfigError(ValueError):
    """An engine name, precision or hint that is not one of the supported values."""


@dataclass(frozen=True)
class EngineOptions:
    """How to run an ONNX file.

    Attributes:
        engine: ``"openvino"`` or ``"onnxruntime"``.
        precision: ``"auto"`` (the fastest of the precisions this CPU and model offer, measured:
            :func:`choose_precision`), ``"fp32"``, ``"bf16"`` or ``"int8"``. onnxruntime is
            always FP32.
        performance_hint: OpenVINO ``LATENCY`` or ``THROUGHPUT``.
        threads: CPU threads per inference (0 = the engine's default, all cores).
        streams: OpenVINO inference streams (0 = derived from the performance hint).
        cache_dir: OpenVINO compiled-model cache directory ("" = no cache).
        release_idle_s: seconds an OpenVINO network may sit unused before the memory its
            inferences allocated is given back (:class:`IdleRelease`; 0 = never).
    """

    engine: str = "openvino"
    precision: str = "auto"
    performance_hint: str = "LATENCY"
    threads: int = 0
    streams: int = 0
    cache_dir: str = ""
    release_idle_s: float = DEFAULT_RELEASE_IDLE_S

    def __post_init__(self):
        if self.engine not in ENGINES:
            raise EngineConfigError(f"engine must be one of {ENGINES}, not {self.engine!r}")
        if self.precision not in PRECISIONS:
            raise EngineConfigError(f"precision must be one of {PRECISIONS}, not {self.precision!r}")
        if self.performance_hint not in PERFORMANCE_HINTS:
            raise EngineConfigError(
                f"performance_hint must be one of {PERFORMANCE_HINTS}, not {self.performance_hint!r}")

    @classmethod
    def from_mapping(cls, values: dict[str, str], environ=os.environ) -> EngineOptions:
        """Build options from Triton model-config parameters, each overridden by its
        environment variable (:data:`ENVIRONMENT`).

        Raises:
            EngineConfigError: a value is not supported.
        """
        def pick(key: str, default: str) -> str:
            value = environ.get(ENVIRONMENT[key])
            return (value or values.get(key) or default).strip()

        try:
            return cls(
                engine=pick("engine", cls.engine).lower(),
                precision=pick("precision", cls.precision).lower(),
                performance_hint=pick("performance_hint", cls.performance_hint).upper(),
                threads=int(pick("threads", "0")),
                streams=int(pick("streams", "0")),
                cache_dir=pick("cache_dir", ""),
                release_idle_s=float(pick("release_idle_s", str(DEFAULT_RELEASE_IDLE_S))),
            )
        except ValueError as exc:
            if isinstance(exc, EngineConfigError):
                raise
            raise EngineConfigError(str(exc)) from exc


def share_cpus(options: EngineOptions, instances: int, cpus: int | None = None) -> EngineOptions:
    """Give each of ``instances`` model instances its share of the CPU cores.

    Engines default to one thread per core. Several instances of the same model (Triton's
    instance group ``count``) would then oversubscribe the cores, so unless threads are set
    explicitly, each instance gets ``cpus // instances`` threads (at least 1) and one
    OpenVINO stream.
    """
    if instances <= 1 or options.threads:
        return options
    cpus = cpus or os.cpu_count() or 1
    return replace(options, threads=max(1, cpus // instances), streams=options.streams or 1)


class Engine:
    """A compiled ONNX model. Call it with ``{input_name: array}``; it returns all outputs.

    Attributes:
        description: what actually runs, e.g. ``"openvino 2026.4.1 BF16 LATENCY"``.
        choice: why, when the precision was chosen (``auto``); else empty.
    """

    description: str
    choice: str = ""

    def __call__(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        raise NotImplementedError


class OnnxRuntimeEngine(Engine):
    """onnxruntime ``CPUExecutionProvider`` session (always FP32)."""

    def __init__(self, onnx_path: str, options: EngineOptions):
        import onnxruntime

        session_options = onnxruntime.SessionOptions()
        if options.threads:
            session_options.intra_op_num_threads = options.threads
        self._session = onnxruntime.InferenceSession(
            onnx_path, session_options, providers=["CPUExecutionProvider"])
        self._outputs = [o.name for o in self._session.get_outputs()]
        self.description = f"onnxruntime {onnxruntime.__version__} FP32"

    def __call__(self, inputs):
        return dict(zip(self._outputs, self._session.run(self._outputs, inputs)))


class OpenVinoEngine(Engine):
    """OpenVINO CPU compiled model in one precision: FP32 or BF16 read from the ONNX file
    directly (dynamic shapes), INT8 from the quantised model beside it.

    Raises:
        EngineConfigError: ``int8`` without a valid quantised model, or ``bf16`` on a CPU
            whose plugin does not offer it.
    """

    def __init__(self, onnx_path: str, options: EngineOptions, precision: str):
        import openvino as ov
        import openvino.properties as props
        import openvino.properties.hint as hints

        core = _core(options, precision)
        if precision not in openvino_precisions(onnx_path, core):
            raise EngineConfigError(
                f"{precision} is not available for {onnx_path} on this CPU" +
                (" (run `python manage.py quantize_models`)" if precision == "int8" else ""))
        config = {hints.performance_mode: getattr(hints.PerformanceMode, options.performance_hint),
                  # INT8 models keep their FP32 layers in FP32.
                  hints.inference_precision: ov.Type.bf16 if precision == "bf16" else ov.Type.f32}
        if options.threads:
            config[props.inference_num_threads] = options.threads
        if options.streams:
            config[props.num_streams] = options.streams
        source = str(int8_path(onnx_path)) if precision == "int8" else onnx_path
        # Compiled from the read model, not the path: OpenVINO keys a cached blob by the
        # model's content then (by its path otherwise), so the same network from another
        # folder (a moved checkout, a container's mount, a test's copy of the repository)
        # loads the blob instead of compiling again. Reading it costs ~0.2 s for CRAFT.
        self._compiled = core.compile_model(core.read_model(source), "CPU", config)
        self._request = self._compiled.create_infer_request()
        self._outputs = [o.get_any_name() for o in self._compiled.outputs]
        self.precision = precision
        self.description = (f"openvino {ov.__version__.split('-')[0]} {precision.upper()} "
                            f"{options.performance_hint}")
        # Held while inferring and while releasing: a release never meets an inference.
        self._lock = threading.Lock()
        self.last_used = time.monotonic()
        self.holding = False
        if options.release_idle_s > 0:
            IdleRelease.shared().watch(self, options.release_idle_s)

    def __call__(self, inputs):
        with self._lock:
            result = self._request.infer(inputs, share_inputs=True)
            # Copy out: the request's output buffers are reused by the next call.
            outputs = {name: np.array(result[name]) for name in self._outputs}
            self.last_used, self.holding = time.monotonic(), True
        return outputs

    def release(self, idle_s: float) -> bool:
        """Give back the memory the inferences allocated (OpenVINO's intermediate tensors and
        buffers, sized by the largest input met: ``CompiledModel.release_memory``, then glibc's
        ``malloc_trim``) if the network holds some and has been unused ``idle_s`` seconds.

        Returns:
            whether it released anything.
        """
        with self._lock:
            if not self.holding or time.monotonic() - self.last_used < idle_s:
                return False
            self._compiled.release_memory()
            _trim_heap()
            self.holding = False
        return True


class IdleRelease:
    """One daemon thread per process that gives back the memory of OpenVINO networks left
    unused (:meth:`OpenVinoEngine.release`).

    After its largest input a network keeps what it allocated for it: CRAFT 1.35 GiB after
    its warm-up shapes, against 0.24 GiB compiled and released (``DEFAULT_RELEASE_IDLE_S``'s
    note). A stack at rest, or one whose requests go to the other detector, need not hold it;
    the next inference allocates again (a fraction of a second). Engines are held weakly, so a
    candidate compiled while choosing a precision and then dropped is freed as before.
    """

    _instance: IdleRelease | None = None
    _instance_lock = threading.Lock()

    def __init__(self):
        self._engines: weakref.WeakKeyDictionary[OpenVinoEngine, float] = \
            weakref.WeakKeyDictionary()
        # Notified by watch(): a new engine's idle time may be shorter than the wait under way.
        self._changed = threading.Condition()
        threading.Thread(target=self._run, name="engine-idle-release", daemon=True).start()

    @classmethod
    def shared(cls) -> IdleRelease:
        """The process's one instance (its thread started on first use)."""
        with cls._instance_lock:
            if cls._instance is None:
                cls._instance = cls()
            return cls._instance

    def watch(self, engine: OpenVinoEngine, idle_s: float) -> None:
        """Release ``engine``'s memory once it has been unused ``idle_s`` seconds, each time."""
        with self._changed:
            self._engines[engine] = idle_s
            self._changed.notify()

    def _run(self) -> None:
        while True:
            wait_s = self._release_idle()
            with self._changed:
                self._changed.wait(wait_s)

    def _release_idle(self) -> float:
        """Release every watched engine unused long enough; the seconds to wait until the
        next look (a quarter of the shortest idle time, at least 1 s). A function of its own so
        that no engine stays referenced while the thread waits. A release that fails is logged
        and tried again at the next look: the thread never ends."""
        with self._changed:
            watched = list(self._engines.items())
        wait_s = DEFAULT_RELEASE_IDLE_S
        for engine, idle_s in watched:
            wait_s = min(wait_s, idle_s)
            try:
                if engine.release(idle_s):
                    logger.info("%s: memory released after %g s unused", engine.description,
                                idle_s)
            except Exception:  # noqa: BLE001 - a failed release must not end the releases
                logger.exception("%s: releasing its memory failed", engine.description)
        return max(1.0, wait_s / 4)


def _trim_heap() -> None:
    """Return the C heap's free memory to the system (glibc ``malloc_trim``; a no-op where
    the C library has none)."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def _core(options: EngineOptions, precision: str):
    """An OpenVINO core, with the compiled-model cache when ``options.cache_dir`` is set: one
    folder per precision, ``<cache_dir>/<precision>``.

    Why a folder each: OpenVINO 2026.4's CPU plugin names a cached blob without the inference
    precision hint, so FP32 and BF16 of one ONNX file share a blob. Compiled FP32 first, BF16
    then loaded FP32's blob and read 2 of the 267 validation crops as FP32 does, against 260
    when compiled on its own (recognizer, Xeon with AMX); ``auto``, which compiles every
    candidate in one process, refused BF16 for it.
    """
    import openvino as ov
    import openvino.properties as props

    core = ov.Core()
    if options.cache_dir:
        folder = os.path.join(options.cache_dir, precision)
        os.makedirs(folder, exist_ok=True)
        core.set_property({props.cache_dir: folder})
    return core


def openvino_precisions(onnx_path: str | Path, core=None,
                        capabilities: list[str] | None = None) -> list[str]:
    """The precisions OpenVINO can run ``onnx_path`` in here: ``fp32``; ``bf16`` when the CPU
    plugin lists BF16 among its optimisation capabilities; ``int8`` when a valid quantised model
    exists (:func:`ocr_pipeline.int8.read_int8_record`).

    Args:
        capabilities: the plugin's ``OPTIMIZATION_CAPABILITIES``; by default asked of the CPU
            plugin (tests pass another CPU's list).
    """
    if capabilities is None:
        import openvino as ov

        capabilities = (core or ov.Core()).get_property("CPU", "OPTIMIZATION_CAPABILITIES")
    found = ["fp32"]
    if "BF16" in capabilities and not _onednn_capped_below_bf16():
        found.append("bf16")
    if read_int8_record(onnx_path) is not None:
        found.append("int8")
    return found


#: oneDNN's ISA caps (``ONEDNN_MAX_CPU_ISA``, its CPU dispatcher control) under which it has
#: no BF16 kernels: BF16 needs AVX512_CORE_BF16 or above.
_BELOW_BF16 = {"SSE41", "AVX", "AVX2", "AVX2_VNNI", "AVX2_VNNI_2", "AVX512_CORE",
               "AVX512_CORE_VNNI"}


def _onednn_capped_below_bf16(environ=os.environ) -> bool:
    """Whether oneDNN is told to use no ISA with BF16 (``ONEDNN_MAX_CPU_ISA``, e.g. ``AVX2``
    to run an AVX-512 CPU as an AVX2-only server). OpenVINO's plugin still lists BF16 then (it
    tests the CPU itself), but its BF16 pooling has no kernel and fails to compile."""
    return environ.get("ONEDNN_MAX_CPU_ISA", "").strip().upper() in _BELOW_BF16


def run_grouped(engine: Engine, feeds: list[dict[str, np.ndarray]]) -> list[dict[str, np.ndarray]]:
    """Run several requests' inputs, batching those whose shapes agree.

    Args:
        engine: the compiled model (its graph has a dynamic batch dimension).
        feeds: one ``{input name: array [b, ...]}`` per request.

    Returns:
        one ``{output name: array [b, ...]}`` per request, in the order of ``feeds``. Requests
        whose inputs share shapes (apart from dimension 0) are concatenated along dimension 0
        and run as one call; the others run in separate calls.
    """
    groups: dict[tuple, list[int]] = {}
    for index, feed in enumerate(feeds):
        key = tuple((name, array.shape[1:]) for name, array in sorted(feed.items()))
        groups.setdefault(key, []).append(index)
    results: list[dict[str, np.ndarray]] = [{} for _ in feeds]
    for indices in groups.values():
        names = list(feeds[indices[0]])
        outputs = engine({name: np.concatenate([feeds[i][name] for i in indices])
                          for name in names})
        start = 0
        for i in indices:
            rows = len(feeds[i][names[0]])
            results[i] = {name: np.ascontiguousarray(value[start:start + rows])
                          for name, value in outputs.items()}
            start += rows
    return results
