"""Inference engines that run an ONNX file on the CPU: OpenVINO or onnxruntime.

Both take and return plain dicts of numpy arrays keyed by the ONNX tensor names, so the
Triton Python models (and the benchmark's in-process baseline) do not care which one runs.

OpenVINO is the default on CPUs: with its default inference precision it runs CRAFT in BF16 on
CPUs with AMX / AVX-512 BF16 (about 4x onnxruntime FP32 end to end through the API on this
project's 2-core Xeon, `make bench-engines`, with the reference boxes on every test image) and
in FP32 elsewhere.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, replace

import numpy as np

logger = logging.getLogger(__name__)

ENGINES = ("openvino", "onnxruntime")
PRECISIONS = ("auto", "fp32", "bf16")
PERFORMANCE_HINTS = ("LATENCY", "THROUGHPUT")


#: Model-config parameter -> the environment variable that overrides it (in every model).
ENVIRONMENT = {
    "engine": "OCR_ENGINE",
    "precision": "OCR_ENGINE_PRECISION",
    "performance_hint": "OCR_ENGINE_PERFORMANCE_HINT",
    "threads": "OCR_ENGINE_THREADS",
    "streams": "OCR_ENGINE_STREAMS",
    "cache_dir": "OCR_ENGINE_CACHE_DIR",
}


class EngineConfigError(ValueError):
    """An engine name, precision or hint that is not one of the supported values."""


@dataclass(frozen=True)
class EngineOptions:
    """How to run an ONNX file.

    Attributes:
        engine: ``"openvino"`` or ``"onnxruntime"``.
        precision: ``"auto"`` (OpenVINO's default: BF16 where the CPU supports it, else FP32),
            ``"fp32"`` (force full precision), or ``"bf16"``. onnxruntime is always FP32.
        performance_hint: OpenVINO ``LATENCY`` or ``THROUGHPUT``.
        threads: CPU threads per inference (0 = the engine's default, all cores).
        streams: OpenVINO inference streams (0 = derived from the performance hint).
        cache_dir: OpenVINO compiled-model cache directory ("" = no cache).
    """

    engine: str = "openvino"
    precision: str = "auto"
    performance_hint: str = "LATENCY"
    threads: int = 0
    streams: int = 0
    cache_dir: str = ""

    def __post_init__(self):
        if self.engine not in ENGINES:
            raise EngineConfigError(f"engine must be one of {ENGINES}, not {self.engine!r}")
        if self.precision not in PRECISIONS:
            raise EngineConfigError(f"precision must be one of {PRECISIONS}, not {self.precision!r}")
        if self.performance_hint not in PERFORMANCE_HINTS:
            raise EngineConfigError(
                f"performance_hint must be one of {PERFORMANCE_HINTS}, not {self.performance_hint!r}")

    @classmethod
    def from_mapping(cls, values: dict[str, str], environ=os.environ) -> "EngineOptions":
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
    """

    description: str

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
    """OpenVINO CPU compiled model, reading the ONNX file directly (dynamic shapes)."""

    def __init__(self, onnx_path: str, options: EngineOptions):
        import openvino as ov
        import openvino.properties as props
        import openvino.properties.hint as hints

        core = ov.Core()
        if options.cache_dir:
            os.makedirs(options.cache_dir, exist_ok=True)
            core.set_property({props.cache_dir: options.cache_dir})
        config = {hints.performance_mode: getattr(hints.PerformanceMode, options.performance_hint)}
        if options.precision == "fp32":
            config[hints.inference_precision] = ov.Type.f32
        elif options.precision == "bf16":
            config[hints.inference_precision] = ov.Type.bf16
        if options.threads:
            config[props.inference_num_threads] = options.threads
        if options.streams:
            config[props.num_streams] = options.streams
        self._compiled = core.compile_model(onnx_path, "CPU", config)
        self._request = self._compiled.create_infer_request()
        self._outputs = [o.get_any_name() for o in self._compiled.outputs]
        precision = self._compiled.get_property(hints.inference_precision)
        self.description = (f"openvino {ov.__version__.split('-')[0]} "
                            f"{precision.get_type_name().upper()} {options.performance_hint}")

    def __call__(self, inputs):
        result = self._request.infer(inputs, share_inputs=True)
        # Copy out: the request's output buffers are reused by the next call.
        return {name: np.array(result[name]) for name in self._outputs}


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


def load_engine(onnx_path: str, options: EngineOptions) -> Engine:
    """Compile ``onnx_path`` with the engine ``options`` names.

    Raises:
        FileNotFoundError: the ONNX file is missing (run ``python manage.py fetch_models``).
    """
    if not os.path.exists(onnx_path):
        raise FileNotFoundError(f"{onnx_path} not found; run `python manage.py fetch_models`")
    engine_class = OpenVinoEngine if options.engine == "openvino" else OnnxRuntimeEngine
    engine = engine_class(onnx_path, options)
    logger.info("loaded %s with %s", onnx_path, engine.description)
    return engine
