"""What ``make serve`` and ``make test`` need from the operating system, checked in the first
second, before anything is installed: every missing piece is named with the command that
installs it (Debian/Ubuntu package names).

Standard library only, so the system ``python3`` runs it before the virtualenv exists::

    python3 ocr_embedded/prerequisites.py serve     # or: test
    python3 ocr_embedded/prerequisites.py packages test   # the Debian packages, for CI

- Python >= 3.11, Linux x86_64 with glibc >= 2.35 (the ``nvidia-pytriton`` wheel's tritonserver);
- the OS's shared ``libpython3.X`` for this Python: the embedded Triton's Python-backend stub
  links it;
- the Tesseract data the models load: the Tesseract recognizer's languages and the page-turn
  detection's OSD data (:data:`ocr_contract.languages.TESSDATA_FILES`);
- nginx, the buffering proxy in front of gunicorn (:mod:`ocr_embedded.proxy`);
- redis-server, the jobs' broker (:mod:`ocr_embedded.broker`, docs/jobs-broker.md);
- for the tests, Debian's Chromium (the browser tests drive it; Playwright never downloads one),
  ``ss`` from iproute2 (the benchmark's smoke test reads TCP counters with it), ``pdftotext``
  and Ghostscript (the real OCRmyPDF, run with this repository's plugin).
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

MIN_PYTHON = (3, 11)
MIN_GLIBC = (2, 35)


def _languages():
    """:mod:`ocr_contract.languages`, imported from contract/ beside this folder when the
    package is not installed yet (this script runs before the virtualenv exists)."""
    try:
        from ocr_contract import languages
    except ImportError:
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "contract"))
        from ocr_contract import languages
    return languages


def _libpython_package() -> str:
    """Debian's package of this Python version's shared library (``libpython3.11``)."""
    return f"libpython{sys.version_info.major}.{sys.version_info.minor}"


def _has_libpython() -> bool:
    """The shared libpython of this interpreter's version is where the dynamic linker finds
    it (its LIBDIR or the ld.so cache)."""
    soname = sysconfig.get_config_var("INSTSONAME") or \
        f"libpython{sys.version_info.major}.{sys.version_info.minor}.so.1.0"
    libdir = sysconfig.get_config_var("LIBDIR") or ""
    if libdir and (Path(libdir) / soname).exists():
        return True
    try:
        cache = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True,
                               timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        cache = ""
    return any(line.strip().startswith(soname) for line in cache.splitlines())


def missing(purpose: str, environ=os.environ) -> tuple[list[str], list[str]]:
    """``(problems, Debian packages that fix them)`` for ``purpose`` ``serve`` or ``test``."""
    problems, fixes = [], []
    if sys.version_info < MIN_PYTHON:
        problems.append(f"Python >= {'.'.join(map(str, MIN_PYTHON))} is required, this is "
                        f"{platform.python_version()} (choose another with PYTHON=python3.11)")
    if platform.system() != "Linux" or platform.machine() != "x86_64":
        problems.append(f"the embedded Triton runs on Linux x86_64 only, this is "
                        f"{platform.system()} {platform.machine()}")
    libc, version = platform.libc_ver()
    if libc != "glibc" or tuple(int(v) for v in version.split(".")[:2]) < MIN_GLIBC:
        problems.append(f"glibc >= {'.'.join(map(str, MIN_GLIBC))} is required (Debian 12, "
                        f"Ubuntu 22.04 or newer), this has {libc or 'no glibc'} {version}")
    if not _has_libpython():
        problems.append(f"the shared {_libpython_package()} library is missing (the Triton "
                        "Python backend links it)")
        fixes.append(_libpython_package())
    languages = _languages()
    folder = languages.tessdata_dir(environ)
    absent = [name for name in languages.TESSDATA_FILES
              if folder is None or not (folder / f"{name}.traineddata").exists()]
    if absent:
        problems.append(f"Tesseract language data missing in "
                        f"{folder or languages.TESSDATA_DIRS[0]}: {', '.join(absent)}")
        fixes += [languages.debian_package(name) for name in absent]
    if shutil.which("nginx") is None and shutil.which("nginx", path="/usr/sbin:/sbin") is None:
        problems.append("nginx is missing (the buffering proxy in front of gunicorn)")
        fixes.append("nginx")
    if shutil.which("redis-server") is None and shutil.which(
            "redis-server", path="/usr/bin:/usr/sbin") is None:
        problems.append("redis-server is missing (the jobs' broker, docs/jobs-broker.md)")
        fixes.append("redis-server")
    if purpose == "test":
        chromium = Path(environ.get("OCR_TEST_CHROMIUM", "/usr/bin/chromium"))
        if not chromium.exists():
            problems.append(f"Chromium is not at {chromium} (the browser tests drive it)")
            fixes.append("chromium")
        if shutil.which("ss") is None:
            problems.append("`ss` is missing (the benchmark smoke test reads TCP counters)")
            fixes.append("iproute2")
        if shutil.which("pdftotext") is None:
            problems.append("`pdftotext` is missing (the searchable-PDF tests read it back)")
            fixes.append("poppler-utils")
        if shutil.which("gs") is None:
            problems.append("Ghostscript (`gs`) is missing (the OCRmyPDF plugin's tests run "
                            "the real OCRmyPDF, which needs it)")
            fixes.append("ghostscript")
    return problems, fixes


def packages(purpose: str) -> list[str]:
    """Every Debian package ``purpose`` needs, present or not (what CI installs)."""
    languages = _languages()
    names = [_libpython_package()]
    names += [languages.debian_package(name) for name in languages.TESSDATA_FILES]
    names.append("nginx")
    names.append("redis-server")
    return names + (["chromium", "iproute2", "poppler-utils", "ghostscript"]
                    if purpose == "test" else [])


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    if args[:1] == ["packages"] and args[1:] in (["serve"], ["test"]):
        print(" ".join(packages(args[1])))
        return 0
    purpose = (args or ["serve"])[0]
    if purpose not in ("serve", "test"):
        print("usage: prerequisites.py serve|test  (check)\n"
              "       prerequisites.py packages serve|test  (list the Debian packages)",
              file=sys.stderr)
        return 2
    problems, needed = missing(purpose)
    if not problems:
        print(f"Prerequisites of `make {purpose}`: present ({', '.join(packages(purpose))}).")
        return 0
    print(f"Missing for `make {purpose}`:", file=sys.stderr)
    for problem in problems:
        print(f"  - {problem}", file=sys.stderr)
    if needed:
        sudo = "" if os.geteuid() == 0 else "sudo "
        print(f"Install with:\n  {sudo}apt-get install -y {' '.join(needed)}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
