"""Inference engines that run an ONNX file on the CPU: OpenVINO or onnxruntime.

Both take and return plain dicts of numpy arrays keyed by the ONNX tensor names, so the
Triton Python models (and the benchmark's in-process baseline) do not care which one runs.

OpenVINO runs a network in one of several precisions: FP32 always; BF16 where the CPU plugin
offers it (AVX-512 BF16 or AMX); INT8 where a quantised model sits beside the ONNX file
(``model_int8.xml``, made by :mod:`ocr_pipeline.quantization` at box parity). Which one is
fastest depends on the CPU and is not told by its flags: BF16 ran CRAFT 4x faster than
onnxruntime FP32 on a Xeon with AMX, but 1.5x slower on one with AVX-512 BF16 and no AMX; INT8
ran ~3x FP32 with AVX-512 VNNI, 1.04x with AVX2 only. So the default precision, ``auto``, is
chosen by measurement (:func:`choose_precision`): each candidate is compiled and timed on the
model's warm-up input, and the fastest wins, FP32 unless another is at least
:data:`AUTO_MARGIN` faster. The decision is kept in the compiled-model cache directory, so it is
measured once per machine, model file and OpenVINO version.
"""

from __future__ import annotations

import json
import logging
import os
import platform
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from .weights import sha256_of

logger = logging.getLogger(__name__)

ENGINES = ("openvino", "onnxruntime")
PRECISIONS = ("auto", "fp32", "bf16", "int8")
PERFORMANCE_HINTS = ("LATENCY", "THROUGHPUT")
#: ``auto`` keeps FP32 (the reference precision) unless another is at least this much faster.
AUTO_MARGIN = 0.05
#: Timed runs per candidate precision (after one untimed run); the median counts.
AUTO_RUNS = 3
#: The network ``manage.py quantize_models`` makes an INT8 model of (the model repository's
#: folder name, :mod:`ocr_pipeline.quantization`); with precision ``int8`` the others run FP32.
QUANTISED_MODEL = "craft"
#: Version of the INT8 recipe a quantised model's record must name (ocr_pipeline.quantization).
INT8_RECORD_VERSION = "craft-backbone-int8-1"


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
        precision: ``"auto"`` (the fastest of the precisions this CPU and model offer, measured:
            :func:`choose_precision`), ``"fp32"``, ``"bf16"`` or ``"int8"``. onnxruntime is
            always FP32.
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

        core = _core(options)
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
        self._compiled = core.compile_model(source, "CPU", config)
        self._request = self._compiled.create_infer_request()
        self._outputs = [o.get_any_name() for o in self._compiled.outputs]
        self.precision = precision
        self.description = (f"openvino {ov.__version__.split('-')[0]} {precision.upper()} "
                            f"{options.performance_hint}")

    def __call__(self, inputs):
        result = self._request.infer(inputs, share_inputs=True)
        # Copy out: the request's output buffers are reused by the next call.
        return {name: np.array(result[name]) for name in self._outputs}


def _core(options: EngineOptions):
    """An OpenVINO core, with the compiled-model cache when ``options.cache_dir`` is set."""
    import openvino as ov
    import openvino.properties as props

    core = ov.Core()
    if options.cache_dir:
        os.makedirs(options.cache_dir, exist_ok=True)
        core.set_property({props.cache_dir: options.cache_dir})
    return core


def int8_path(onnx_path: str | Path) -> Path:
    """Where the quantised model of ``model.onnx`` lives: ``model_int8.xml`` (+ ``.bin``)."""
    path = Path(onnx_path)
    return path.with_name(f"{path.stem}_int8.xml")


def int8_record(onnx_path: str | Path) -> Path:
    """The record of how the quantised model was made: ``model_int8.xml.sha256``."""
    target = int8_path(onnx_path)
    return target.with_name(target.name + ".sha256")


def read_int8_record(onnx_path: str | Path) -> dict | None:
    """The quantised model's record as ``{key: value}`` when the model's files and source still
    match it; None otherwise (missing, partial, made from another ONNX or by an older recipe)."""
    record, target = int8_record(onnx_path), int8_path(onnx_path)
    if not (record.exists() and target.exists() and target.with_suffix(".bin").exists()):
        return None
    values = dict(line.split(": ", 1) for line in record.read_text().splitlines() if ": " in line)
    current = {"xml": sha256_of(target), "bin": sha256_of(target.with_suffix(".bin")),
               "source": sha256_of(Path(onnx_path)), "recipe": INT8_RECORD_VERSION}
    return values if all(values.get(k) == v for k, v in current.items()) else None


def openvino_precisions(onnx_path: str | Path, core=None) -> list[str]:
    """The precisions OpenVINO can run ``onnx_path`` in here: ``fp32``; ``bf16`` when the CPU
    plugin lists BF16 among its optimisation capabilities; ``int8`` when a valid quantised model
    exists (:func:`read_int8_record`)."""
    import openvino as ov

    capabilities = (core or ov.Core()).get_property("CPU", "OPTIMIZATION_CAPABILITIES")
    found = ["fp32"]
    if "BF16" in capabilities:
        found.append("bf16")
    if read_int8_record(onnx_path) is not None:
        found.append("int8")
    return found


def choose_precision(onnx_path: str, options: EngineOptions,
                     sample: dict[str, np.ndarray] | None) -> tuple[OpenVinoEngine, str]:
    """The ``auto`` precision: the fastest candidate on ``sample``, and why.

    Candidates are :func:`openvino_precisions`. With one candidate nothing is measured. Else
    each is compiled and run once, then timed :data:`AUTO_RUNS` times on ``sample``; the median
    decides, FP32 winning unless another is at least :data:`AUTO_MARGIN` faster. The decision
    is stored in ``options.cache_dir`` (``precision-choices.json``) keyed by the model file, the
    CPU, the OpenVINO version, the threads and the sample's shapes, and reused from there.

    Args:
        sample: one input of the model (its warm-up input); None: FP32 without measuring.

    Returns:
        the compiled winner and a one-line reason (``"auto: int8 812 ms, fp32 2503 ms per
        warm-up input"``).
    """
    import openvino as ov

    core = _core(options)
    candidates = openvino_precisions(onnx_path, core)
    if len(candidates) == 1 or sample is None:
        return (OpenVinoEngine(onnx_path, options, "fp32"),
                "auto: fp32, the only precision offered" if len(candidates) == 1
                else "auto: fp32, no warm-up input to measure on")
    key = "|".join([sha256_of(Path(onnx_path))[:16], _cpu_identity(), ov.__version__,
                    str(options.threads), options.performance_hint,
                    ",".join(f"{name}{list(array.shape)}" for name, array in sorted(sample.items())),
                    ",".join(candidates)])
    cached = _load_choices(options.cache_dir).get(key)
    if cached is not None:
        return OpenVinoEngine(onnx_path, options, cached["precision"]), cached["reason"]
    times, engines = {}, {}
    for precision in candidates:
        engine = OpenVinoEngine(onnx_path, options, precision)
        engine(sample)
        runs = []
        for _ in range(AUTO_RUNS):
            started = time.perf_counter()
            engine(sample)
            runs.append((time.perf_counter() - started) * 1000.0)
        times[precision], engines[precision] = sorted(runs)[len(runs) // 2], engine
    fastest = min(times, key=times.get)
    chosen = fastest if times[fastest] <= (1 - AUTO_MARGIN) * times["fp32"] else "fp32"
    reason = "auto: " + ", ".join(f"{p} {times[p]:.0f} ms" for p in sorted(times, key=times.get)) \
        + f" per warm-up input -> {chosen}"
    _store_choice(options.cache_dir, key, {"precision": chosen, "reason": reason})
    return engines[chosen], reason


def _cpu_identity() -> str:
    """The CPU model and core count (decisions measured on one CPU do not hold on another)."""
    model = platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{model} x{os.cpu_count()}"


def _load_choices(cache_dir: str) -> dict:
    if not cache_dir:
        return {}
    try:
        return json.loads((Path(cache_dir) / "precision-choices.json").read_text())
    except (OSError, ValueError):
        return {}


def _store_choice(cache_dir: str, key: str, choice: dict) -> None:
    if not cache_dir:
        return
    choices = {**_load_choices(cache_dir), key: choice}
    path = Path(cache_dir) / "precision-choices.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".{os.getpid()}.tmp")
    partial.write_text(json.dumps(choices, indent=1))
    partial.replace(path)   # atomic: several models may choose at once


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


def load_engine(onnx_path: str, options: EngineOptions,
                sample: dict[str, np.ndarray] | None = None) -> Engine:
    """Compile ``onnx_path`` with the engine and precision ``options`` name.

    Args:
        sample: one model input to time candidates on when the precision is ``auto``
            (:func:`choose_precision`).

    Returns:
        the engine; its ``description`` says what runs, its ``choice`` why (``auto``).

    Raises:
        FileNotFoundError: the ONNX file is missing (run ``python manage.py fetch_models``).
        EngineConfigError: a precision this CPU or model does not offer.
    """
    if not os.path.exists(onnx_path):
        raise FileNotFoundError(f"{onnx_path} not found; run `python manage.py fetch_models`")
    if options.engine == "onnxruntime":
        engine, choice = OnnxRuntimeEngine(onnx_path, options), ""
    elif options.precision == "auto":
        engine, choice = choose_precision(onnx_path, options, sample)
    elif options.precision == "int8" and Path(onnx_path).parent.parent.name != QUANTISED_MODEL:
        # One setting for every network: int8 means the quantised CRAFT, FP32 elsewhere.
        engine = OpenVinoEngine(onnx_path, options, "fp32")
        choice = f"int8 asked: only {QUANTISED_MODEL} is quantised, fp32"
    else:
        engine, choice = OpenVinoEngine(onnx_path, options, options.precision), ""
    engine.choice = choice
    logger.info("loaded %s with %s %s", onnx_path, engine.description, choice)
    return engine
