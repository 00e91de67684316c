"""The ``auto`` precision of a network: accuracy first, then speed.

OpenVINO can run a network in FP32 always, BF16 where the CPU plugin offers it (AVX-512 BF16,
AMX) and INT8 where a quantised model sits beside the ONNX file (:mod:`ocr_pipeline.int8`).
Which is fastest depends on the CPU and is not told by its flags (BF16 ran CRAFT 4x faster than
onnxruntime FP32 on a Xeon with AMX, 1.5x slower on AVX-512 BF16 without AMX; INT8 ~3x FP32
with AVX-512 VNNI, 1.04x with AVX2 only), and a faster precision does not always give the same
answer (on an AVX-512 BF16 CPU, CRAFT in BF16 lost every box of one test image, INT8 CRAFT
calibrated on the test images lost a small word of an image it had not seen). So
:func:`choose_precision`:

1. times every candidate on the model's warm-up input (one run after one untimed run; where a
   candidate's time is within :data:`CLOSE_CALL` of the margin below, the median of
   :data:`AUTO_RUNS` runs, FP32's too: a first start on a slow CPU times CRAFT in every
   precision, 9-12 s a run on a 2-core AVX2 server);
2. takes the candidates at least :data:`AUTO_MARGIN` faster than FP32, fastest first, and keeps
   the first one whose answers agree with FP32's on the validation set
   (:mod:`ocr_pipeline.validation`: boxes for the detector and the link refiner, strings for
   the recognizer);
3. else FP32. Without a validation set no reduced precision is kept.

A candidate that fails to compile or to run is left out and named in the reason: OpenVINO
lists BF16 among a CPU's capabilities by its own test of the CPU, while its oneDNN kernels may
be capped lower (``ONEDNN_MAX_CPU_ISA=AVX2`` on an AVX-512 CPU, how an AVX2-only server is
emulated: BF16 pooling then has no kernel and fails to compile). FP32 failing is an error.

The decision, its times and agreement figures are stored in the compiled-model cache
directory (``precision-choices.json``), keyed by :data:`DECISION_VERSION`, the model file,
the CPU, the OpenVINO version, the threads, the warm-up shapes, the candidates, the INT8
model's recipe and weights and the validation set, so each is measured once per machine. A
precision forced by configuration is checked the same way and its verdict reported
(:func:`forced_verdict`).
"""

from __future__ import annotations

import json
import logging
import os
import platform
import re
import time
from pathlib import Path
from typing import Callable

import numpy as np

from .engines import (PRECISIONS, Engine, EngineOptions, OnnxRuntimeEngine, OpenVinoEngine,
                      openvino_precisions)
from .int8 import RECIPE_VERSIONS, network_of, read_int8_record
from .validation import Agreement, Validator
from .weights import sha256_of

logger = logging.getLogger(__name__)

#: A candidate must be at least this much faster than FP32 to be considered.
AUTO_MARGIN = 0.05
#: Timed runs per candidate precision (after one untimed run) when one run leaves the choice
#: close; the median counts.
AUTO_RUNS = 3
#: A candidate whose one run is within this share of the margin line (``(1 - AUTO_MARGIN)``
#: times FP32's) is timed :data:`AUTO_RUNS` times, and FP32 with it; a clearer one, once.
CLOSE_CALL = 0.10
#: Part of every stored decision's key: raised when the way candidates are compiled or checked
#: changes, so that decisions made the old way are made again. 2: a compiled-model cache folder
#: per precision (:func:`ocr_pipeline.engines._core`); before it, BF16 compiled after FP32 ran
#: FP32's cached blob and was refused for answers it does not give. 3: the detector and the link
#: refiner held to the boxes FP32 gives when checking (:mod:`ocr_pipeline.validation`).
DECISION_VERSION = 3


def decide(times_ms: dict[str, float],
           agreement: Callable[[str], Agreement | None]) -> tuple[str, str]:
    """The ``auto`` rule on measured figures.

    Args:
        times_ms: milliseconds per warm-up input of each candidate; ``fp32`` among them.
        agreement: a candidate's :class:`~ocr_pipeline.validation.Agreement` with FP32, None
            when it cannot be checked (no validation set); asked only for candidates faster
            than FP32 by :data:`AUTO_MARGIN`, fastest first, until one passes.

    Returns:
        ``(precision, reason)``, e.g. ``("int8", "auto: bf16 700 ms refused (boxes F 0.000 on
        a.jpg ...), int8 812 ms agrees (boxes F 1.000 ...), fp32 2503 ms -> int8")``.
    """
    limit = (1 - AUTO_MARGIN) * times_ms["fp32"]
    chosen, notes = "fp32", {}
    for precision in sorted(times_ms, key=times_ms.get):
        if precision == "fp32" or times_ms[precision] > limit:
            continue
        verdict = agreement(precision)
        if verdict is None:
            notes[precision] = "refused (no validation set to compare with FP32)"
            continue
        notes[precision] = f"{'agrees' if verdict.passed else 'refused'} ({verdict.detail}, " \
                           f"at least {verdict.minimum:g})"
        if verdict.passed:
            chosen = precision
            break
    parts = [f"{p} {times_ms[p]:.0f} ms" + (f" {notes[p]}" if p in notes else "")
             for p in sorted(times_ms, key=times_ms.get)]
    return chosen, f"auto: {', '.join(parts)} per warm-up input -> {chosen}"


def verdicts(reason: str) -> dict[str, str]:
    """Each candidate's verdict in an ``auto`` reason (:func:`decide`, :func:`choose_precision`):
    ``"agrees"`` or ``"refused"`` (checked against FP32), ``"failed"`` (did not compile or
    run), ``""`` (not checked: FP32 itself, or not faster than FP32 by :data:`AUTO_MARGIN`, or
    slower than one that agreed), e.g. ``{"bf16": "refused", "int8": "agrees", "fp32": ""}``."""
    names = "|".join(p for p in PRECISIONS if p != "auto")
    timed = reason.split(" per warm-up input")[0].removeprefix("auto: ")
    found = {name: verdict.strip() for name, verdict in
             re.findall(rf"(?:^|, )({names}) \d+ ms( agrees| refused)?", timed)}
    found.update({name: "failed" for name in
                  re.findall(rf"; ({names}) failed to compile or run here", reason)})
    return found


def load_engine(onnx_path: str, options: EngineOptions,
                sample: dict[str, np.ndarray] | None = None,
                validator: Validator | None = None) -> Engine:
    """Compile ``onnx_path`` with the engine and precision ``options`` name.

    Args:
        sample: one model input to time candidates on when the precision is ``auto``.
        validator: how this network's candidates are checked against FP32 (``auto``, and the
            verdict on a forced precision); None: ``auto`` keeps FP32.

    Returns:
        the engine; its ``description`` says what runs, its ``choice`` why (``auto``) or what a
        forced precision is worth (:func:`forced_verdict`).

    Raises:
        FileNotFoundError: the ONNX file is missing (run ``python manage.py fetch_models``).
        EngineConfigError: a precision this CPU or model does not offer (``int8`` for a network
            with a recipe whose quantised model is missing: run ``manage.py quantize_models``).
    """
    if not os.path.exists(onnx_path):
        raise FileNotFoundError(f"{onnx_path} not found; run `python manage.py fetch_models`")
    if options.engine == "onnxruntime":
        engine, choice = OnnxRuntimeEngine(onnx_path, options), ""
    elif options.precision == "auto":
        engine, choice = choose_precision(onnx_path, options, sample, validator)
    elif options.precision == "int8" and network_of(onnx_path) not in RECIPE_VERSIONS:
        # One setting for every network: int8 where a network has a recipe, FP32 elsewhere.
        engine = OpenVinoEngine(onnx_path, options, "fp32")
        choice = f"int8 asked: {network_of(onnx_path)} has no INT8 recipe, fp32"
    else:
        engine = OpenVinoEngine(onnx_path, options, options.precision)
        choice = "" if options.precision == "fp32" else \
            forced_verdict(onnx_path, engine, options, validator)
    engine.choice = choice
    logger.info("loaded %s with %s %s", onnx_path, engine.description, choice)
    return engine


def choose_precision(onnx_path: str, options: EngineOptions,
                     sample: dict[str, np.ndarray] | None,
                     validator: Validator | None = None,
                     capabilities: list[str] | None = None,
                     compile_in: Callable[[str], Engine] | None = None) -> tuple[Engine, str]:
    """The ``auto`` precision (see the module docstring): the compiled winner and why.

    Args:
        sample: one input of the model (its warm-up input); None: FP32 without measuring.
        validator: checks a candidate against FP32 (:mod:`ocr_pipeline.validation`); None:
            only FP32 can be kept.
        capabilities: the CPU plugin's ``OPTIMIZATION_CAPABILITIES`` (default: asked).
        compile_in: precision -> engine (default: :class:`OpenVinoEngine`); tests give the
            candidates of CPUs this one is not.

    Returns:
        the engine and a one-line reason (see :func:`decide`).
    """
    import openvino as ov

    compile_in = compile_in or (lambda precision: OpenVinoEngine(onnx_path, options, precision))
    candidates = openvino_precisions(onnx_path, capabilities=capabilities)
    if len(candidates) == 1 or sample is None:
        return (compile_in("fp32"),
                "auto: fp32, the only precision offered" if len(candidates) == 1
                else "auto: fp32, no warm-up input to measure on")
    key = "|".join([f"v{DECISION_VERSION}", sha256_of(Path(onnx_path))[:16], _cpu_identity(),
                    ov.__version__, str(options.threads), options.performance_hint,
                    ",".join(f"{name}{list(array.shape)}" for name, array in sorted(sample.items())),
                    ",".join(candidates), _int8_identity(onnx_path, candidates),
                    validator.fingerprint if validator else "-"])
    cached = _load_choices(options.cache_dir).get(key)
    if cached is not None:
        return compile_in(cached["precision"]), cached["reason"]
    engines, times, failed = {}, {}, {}
    for precision in candidates:
        try:
            engines[precision] = compile_in(precision)
            times[precision] = _median_ms(engines[precision], sample, 1)
        except RuntimeError as exc:
            if precision == "fp32":
                raise
            engines.pop(precision, None)
            failed[precision] = _first_line(exc)
    line = (1 - AUTO_MARGIN) * times["fp32"]
    close = [p for p in times if p != "fp32" and abs(times[p] / line - 1) < CLOSE_CALL]
    for precision in close + (["fp32"] if close else []):
        times[precision] = _median_ms(engines[precision], sample, AUTO_RUNS, untimed=False)
    chosen, reason = decide(times, lambda precision: validator(engines[precision])
                            if validator else None)
    reason += "".join(f"; {precision} failed to compile or run here ({message})"
                      for precision, message in failed.items())
    _store_choice(options.cache_dir, key, {"precision": chosen, "reason": reason})
    return engines[chosen], reason


def _first_line(error: Exception) -> str:
    """The telling line of an engine's error: OpenVINO's start with lines naming its own
    source files (``Exception from src/...``) before the check that failed."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    telling = [line for line in lines if not line.startswith("Exception from")] or lines
    return (telling[0] if telling else type(error).__name__)[:200]


def forced_verdict(onnx_path: str, engine: Engine, options: EngineOptions,
                   validator: Validator | None) -> str:
    """What a precision forced by configuration (not ``auto``, not FP32) is worth: ``"forced
    bf16 agrees with FP32 (...)"`` or ``"forced bf16 is NOT at parity with FP32 (...)"``
    (logged as a warning then); cached like the ``auto`` decision."""
    if validator is None:
        return f"forced {engine.precision}: not checked against FP32 (no validation set)"
    import openvino as ov

    key = "|".join(["forced", f"v{DECISION_VERSION}", engine.precision,
                    sha256_of(Path(onnx_path))[:16], _cpu_identity(), ov.__version__,
                    validator.fingerprint])
    cached = _load_choices(options.cache_dir).get(key)
    if cached is None:
        verdict = validator(engine)
        text = (f"forced {engine.precision} agrees with FP32" if verdict.passed else
                f"forced {engine.precision} is NOT at parity with FP32") + \
            f" ({verdict.detail}, at least {verdict.minimum:g})"
        cached = {"precision": engine.precision, "reason": text}
        _store_choice(options.cache_dir, key, cached)
    if "NOT at parity" in cached["reason"]:
        logger.warning("%s: %s", onnx_path, cached["reason"])
    return cached["reason"]


def _int8_identity(onnx_path: str, candidates: list[str]) -> str:
    """The INT8 candidate's recipe and weights (a model quantised again, by a new recipe or on
    new calibration images, is a new candidate: its decision is made again); "-" without one."""
    record = read_int8_record(onnx_path) if "int8" in candidates else None
    if not record:
        return "-"
    return f"{record.get('recipe', '?')}:{record.get('bin', '?')[:16]}"


def _median_ms(engine: Engine, sample: dict[str, np.ndarray], runs: int = AUTO_RUNS,
               untimed: bool = True) -> float:
    """The median of ``runs`` timed runs of ``sample``, milliseconds (after one untimed run:
    the first compiles the shape's kernels)."""
    if untimed:
        engine(sample)
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        engine(sample)
        times.append((time.perf_counter() - started) * 1000.0)
    return sorted(times)[len(times) // 2]


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
