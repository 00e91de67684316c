"""Model versions in a Triton model repository: ``<model>/<version>/<file>``, the version a
positive integer folder name (Triton's layout; its default version policy serves the highest).

Used wherever a file of a model's newest version is read beside Triton (its dictionary, its
ONNX file) and by ``recognize``, which decodes each recognizer version with its own dictionary.
Needs nothing beyond the standard library, so every flavour's Python models can import it.
"""

from __future__ import annotations

from pathlib import Path


def versions(model_dir: Path, filename: str = "model.onnx") -> list[int]:
    """The versions of the model in ``model_dir`` whose folder holds ``filename``, newest first;
    empty when there is none (or no such folder)."""
    model_dir = Path(model_dir)
    if not model_dir.is_dir():
        return []
    return sorted((int(p.name) for p in model_dir.iterdir()
                   if p.name.isdigit() and (p / filename).exists()), reverse=True)


def latest_version(model_dir: Path, filename: str = "model.onnx") -> Path:
    """``<model_dir>/<highest numeric version>/<filename>``.

    Raises:
        FileNotFoundError: no version folder holds ``filename``.
    """
    found = versions(model_dir, filename)
    if not found:
        raise FileNotFoundError(f"no version of {Path(model_dir).name} holds {filename}")
    return Path(model_dir) / str(found[0]) / filename
