"""The ``tritonserver`` command line that serves this model repository, written once for the
Triton container (``python3 -m ocr_pipeline.tritonserver``, its start command) and the embedded
development server (``ocr_embedded.launcher``, which adds its own addresses and paths).

- Explicit model control: the ensemble (which loads its steps) and the models its BLS step
  calls (:data:`MODELS_AT_START`) are loaded at start; new versions are loaded later through
  the model-control API without a restart.
- The Python backend's shared-memory pool starts at 64 MiB per model instance: CRAFT's maps
  are ~40 MB at long side 1280, so growing from the 1 MiB default would cost every first
  request. It lives in /dev/shm, which Docker caps at 64 MiB unless shm_size (compose) or a
  memory emptyDir (Kubernetes) makes it bigger.
- The rate limiter keeps the cpu flavours' networks (each uses every core) from running at
  once (``rate_limiter`` in their configs); the gpu configs declare no resources.
- The local response cache answers an identical image with identical parameters.

Container environment: ``TRITON_MODEL_REPOSITORY`` (default /models), ``OCR_TRITON_FLAVOUR``
(gpu, batched or cpu; default gpu), ``TRITON_CACHE_BYTES``, ``TRITON_EXIT_TIMEOUT_S``, and
``TRITON_EXTRA_ARGS`` (more flags, split on spaces); command-line arguments are appended.
"""

from __future__ import annotations

import os
import shlex
import sys

from ocr_contract.tensors import BLS_CALLS, ENSEMBLE

#: Loaded at start: the ensemble, and the models its steps call through BLS (Triton loads an
#: ensemble's steps with it, not the models a BLS model calls).
MODELS_AT_START = (ENSEMBLE, *dict.fromkeys(m for called in BLS_CALLS.values() for m in called))
#: cpu: every model's config.pbtxt; the others: configs/<flavour>.pbtxt where a model has one.
FLAVOURS = ("cpu", "batched", "gpu")
#: The Python backend's shared-memory pool per model instance, and its growth step, bytes.
PYTHON_SHM_BYTES = 64 * 1024 * 1024
#: Local response cache, bytes (0 = off).
CACHE_BYTES = 256 * 1024 * 1024
#: Seconds tritonserver waits for in-flight inferences when told to stop.
EXIT_TIMEOUT_S = 30


def arguments(repository: str, flavour: str = "cpu", *, http_port: int = 8000,
              grpc_port: int = 8001, metrics_port: int = 8002, cache_bytes: int = CACHE_BYTES,
              exit_timeout_s: int = EXIT_TIMEOUT_S,
              models: tuple[str, ...] = MODELS_AT_START) -> list[str]:
    """The flags (not the program) that serve ``repository`` in ``flavour``.

    Raises:
        ValueError: an unknown flavour.
    """
    if flavour not in FLAVOURS:
        raise ValueError(f"flavour must be {', '.join(FLAVOURS)}, not {flavour!r}")
    flags = [
        f"--model-repository={repository}",
        "--model-control-mode=explicit",
        *[f"--load-model={name}" for name in models],
        f"--http-port={http_port}", f"--grpc-port={grpc_port}",
        f"--metrics-port={metrics_port}", "--allow-metrics=true",
        f"--backend-config=python,shm-default-byte-size={PYTHON_SHM_BYTES}",
        f"--backend-config=python,shm-growth-byte-size={PYTHON_SHM_BYTES}",
        "--rate-limit=execution_count",
        f"--exit-timeout-secs={exit_timeout_s}",
        "--log-verbose=0",
    ]
    if flavour != "cpu":
        flags.append(f"--model-config-name={flavour}")
    if cache_bytes:
        flags.append(f"--cache-config=local,size={cache_bytes}")
    return flags


def container_arguments(environ=os.environ, extra: list[str] | None = None) -> list[str]:
    """The container's flags, from its environment (see the module docstring).

    Raises:
        ValueError: an unknown ``OCR_TRITON_FLAVOUR`` or a non-integer size.
    """
    flavour = environ.get("OCR_TRITON_FLAVOUR") or "gpu"
    flags = arguments(environ.get("TRITON_MODEL_REPOSITORY") or "/models", flavour,
                      cache_bytes=int(environ.get("TRITON_CACHE_BYTES") or CACHE_BYTES),
                      exit_timeout_s=int(environ.get("TRITON_EXIT_TIMEOUT_S") or EXIT_TIMEOUT_S))
    if flavour == "gpu":
        flags.append("--allow-gpu-metrics=true")
    return flags + shlex.split(environ.get("TRITON_EXTRA_ARGS") or "") + list(extra or [])


def main(argv: list[str] | None = None) -> int:
    """Replace this process with tritonserver (the container's start command)."""
    try:
        flags = container_arguments(extra=sys.argv[1:] if argv is None else argv)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    os.execvp("tritonserver", ["tritonserver", *flags])
    return 1  # not reached


if __name__ == "__main__":
    sys.exit(main())
