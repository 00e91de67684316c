"""The ``tritonserver`` command line that serves this model repository, written once for the
Triton container (``python3 -m ocr_pipeline.tritonserver``, its start command) and the embedded
development server (``ocr_embedded.launcher``, which adds its own addresses and paths). Its
settings are read with :mod:`ocr_contract.settings`' readers.

- Explicit model control: the ensembles (which load their steps) and the models their BLS
  step calls (:data:`MODELS_AT_START`) are loaded at start; new versions are loaded later through
  the model-control API without a restart.
- The Python backend's shared-memory pool starts at 64 MiB per model instance: CRAFT's maps
  are ~40 MB at long side 1280, so growing from the 1 MiB default would cost every first
  request. It lives in /dev/shm, which Docker caps at 64 MiB unless shm_size (compose) or a
  memory emptyDir (Kubernetes) makes it bigger.
- The rate limiter keeps the cpu flavours' networks (each uses every core) from running at
  once (``rate_limiter`` in their configs); the gpu configs declare no resources.
- The local response cache answers an identical image with identical parameters.

Two servers run it: NGC's Triton image (``tritonserver`` on PATH, its backends and caches in
/opt/tritonserver, the gpu flavour) and the ``tritonserver`` the ``nvidia-pytriton`` wheel
carries (the ``tritonserver`` extra: Triton 2.51 with the Python backend and the local response
cache, all the cpu flavours need), which ``make serve``, the tests and the cpu Triton image run.
The wheel's server is told where its backends and caches are, and its Python backend needs the
stub for the running Python copied into place (:func:`install_python_stub`).

Container environment: ``TRITON_MODEL_REPOSITORY`` (default /models), ``OCR_TRITON_FLAVOUR``
(gpu, batched or cpu; default gpu), ``OCR_TRITON_SERVER`` (``pytriton``: the wheel's server;
unset: ``tritonserver`` on PATH), ``TRITON_CACHE_BYTES``, ``TRITON_EXIT_TIMEOUT_S``, and
``TRITON_EXTRA_ARGS`` (more flags, split on spaces); command-line arguments are appended.
"""

from __future__ import annotations

import importlib.util
import os
import shlex
import shutil
import sys
from pathlib import Path

from ocr_contract.settings import TRITON_CACHE_BYTES, read_int, read_str
from ocr_contract.tensors import BLS_ONLY_MODELS, DB_ENSEMBLE, ENSEMBLE

#: Loaded at start: the ensembles (Triton loads their steps with them), and the models only
#: their BLS step calls.
MODELS_AT_START = (ENSEMBLE, DB_ENSEMBLE, *BLS_ONLY_MODELS)
#: cpu: every model's config.pbtxt; the others: configs/<flavour>.pbtxt where a model has one.
FLAVOURS = ("cpu", "batched", "gpu")
#: The Python backend's shared-memory pool per model instance, and its growth step, bytes.
PYTHON_SHM_BYTES = 64 * 1024 * 1024
#: Local response cache, bytes (0 = off): ``TRITON_CACHE_BYTES``'s default.
CACHE_BYTES = TRITON_CACHE_BYTES.default
#: Seconds tritonserver waits for in-flight inferences when told to stop.
EXIT_TIMEOUT_S = 30


def pytriton_server_dir() -> Path | None:
    """``<site-packages>/pytriton/tritonserver`` of the installed nvidia-pytriton wheel (its
    ``bin/tritonserver``, ``backends/``, ``caches/`` and ``python_backend_stubs/``), or None
    when the wheel is not installed."""
    spec = importlib.util.find_spec("pytriton")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "tritonserver"


def install_python_stub(server_dir: Path) -> Path:
    """Copy the wheel's Python-backend stub for this interpreter's version
    (``python_backend_stubs/<X.Y>/``) into ``backends/python/``, where the backend looks for it
    (PyTriton does the same at run time); nothing when it is already there.

    Returns:
        the stub's path in ``backends/python/``.

    Raises:
        FileNotFoundError: the wheel has no stub for this Python version.
    """
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    source = server_dir / "python_backend_stubs" / version / "triton_python_backend_stub"
    if not source.exists():
        raise FileNotFoundError(f"nvidia-pytriton has no Python-backend stub for Python {version}")
    target = server_dir / "backends" / "python" / "triton_python_backend_stub"
    if not target.exists() or target.stat().st_size != source.stat().st_size:
        shutil.copy2(source, target)
    return target


def program(server_dir: Path | None = None) -> str:
    """The ``tritonserver`` binary: the wheel's under ``server_dir``, else the one on PATH."""
    return str(server_dir / "bin" / "tritonserver") if server_dir else "tritonserver"


def arguments(repository: str, flavour: str = "cpu", *, http_port: int = 8000,
              grpc_port: int = 8001, metrics_port: int = 8002, cache_bytes: int = CACHE_BYTES,
              exit_timeout_s: int = EXIT_TIMEOUT_S,
              models: tuple[str, ...] = MODELS_AT_START,
              server_dir: Path | None = None) -> list[str]:
    """The flags (not the program) that serve ``repository`` in ``flavour``; with
    ``server_dir`` (:func:`pytriton_server_dir`) also where that server's backends and caches
    are (NGC's server finds its own in /opt/tritonserver).

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
    if server_dir:
        flags.append(f"--backend-directory={server_dir / 'backends'}")
        if cache_bytes:
            flags.append(f"--cache-directory={server_dir / 'caches'}")
    return flags


def container_server_dir(environ=os.environ) -> Path | None:
    """The container's server: the wheel's (:func:`pytriton_server_dir`) when
    ``OCR_TRITON_SERVER`` is ``pytriton`` (the cpu image sets it), else None (``tritonserver``
    on PATH: NGC's image).

    Raises:
        ValueError: ``OCR_TRITON_SERVER`` is something else, or names a wheel that is absent.
    """
    server = read_str("OCR_TRITON_SERVER", "", environ)
    if server not in ("", "pytriton"):
        raise ValueError(f"OCR_TRITON_SERVER must be pytriton or unset, not {server!r}")
    if not server:
        return None
    server_dir = pytriton_server_dir()
    if server_dir is None:
        raise ValueError("OCR_TRITON_SERVER=pytriton, but nvidia-pytriton is not installed")
    return server_dir


def container_arguments(environ=os.environ, extra: list[str] | None = None,
                        server_dir: Path | None = None) -> list[str]:
    """The container's flags, from its environment (see the module docstring), for the server
    in ``server_dir`` (:func:`container_server_dir`).

    Raises:
        ValueError: an unknown ``OCR_TRITON_FLAVOUR`` or a non-integer size.
    """
    flavour = read_str("OCR_TRITON_FLAVOUR", "gpu", environ)
    flags = arguments(read_str("TRITON_MODEL_REPOSITORY", "/models", environ), flavour,
                      cache_bytes=TRITON_CACHE_BYTES.read(environ),
                      exit_timeout_s=read_int("TRITON_EXIT_TIMEOUT_S", EXIT_TIMEOUT_S, environ),
                      server_dir=server_dir)
    if flavour == "gpu":
        flags.append("--allow-gpu-metrics=true")
    return flags + shlex.split(read_str("TRITON_EXTRA_ARGS", "", environ)) + list(extra or [])


def main(argv: list[str] | None = None) -> int:
    """Replace this process with tritonserver (the container's start command)."""
    try:
        server_dir = container_server_dir()
        flags = container_arguments(extra=sys.argv[1:] if argv is None else argv,
                                    server_dir=server_dir)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    binary = program(server_dir)
    os.execvp(binary, [binary, *flags])
    return 1  # not reached


if __name__ == "__main__":
    sys.exit(main())
