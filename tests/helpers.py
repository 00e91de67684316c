"""Test data and helpers shared by the test packages (fixtures are in conftest.py)."""

import io
import json
import shutil
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings as django_settings

from ocr_embedded.launcher import EmbeddedTriton
from ocr_embedded.stack import engine_cache_dir

DATA = Path(__file__).parent / "data"
IMAGES = DATA / "images"
#: korean.png's text at the defaults, line by line.
KOREAN_TEXT = "서울 평양\nSeoul Pyeongyang\n56Km 205Km"
IMAGE_NAMES = sorted(p.name for p in IMAGES.iterdir())
#: ICDAR 2015 test images that no calibration, validation or other test set contains, with
#: their ground truth and the reference pipeline's boxes at 1280 (tests/data/ADDED_SOURCES.md).
UNSEEN = DATA / "unseen"
UNSEEN_NAMES = sorted(p.name for p in UNSEEN.glob("*.jpg"))


def reference_boxes(long_side: int = 1280) -> dict:
    """``tests/data/reference/craft_boxes_<long_side>.json``: image name -> entry."""
    return json.loads((DATA / "reference" / f"craft_boxes_{long_side}.json").read_text())


def unseen_reference() -> dict:
    """``tests/data/unseen/reference_1280.json``: image name -> entry (as reference_boxes)."""
    return json.loads((UNSEEN / "reference_1280.json").read_text())


#: OpenVINO's compiled models and precision decisions, shared by every test server and with
#: ``make serve`` (its folder, kept between runs): each network is compiled and measured once
#: per machine, not once per server or per command.
ENGINE_CACHE = engine_cache_dir(Path(django_settings.VAR_DIR))


@contextmanager
def running_triton(tmp_path_factory, name: str, repository: Path | None = None,
                   warmups: bool = False, **options):
    """A started :class:`EmbeddedTriton` on free ports, logging into a fresh temp folder;
    stopped on exit. ``options`` are EmbeddedTriton's (flavour, cache_bytes, env, ...).

    Without ``warmups`` the server serves a copy of ``repository`` (default: this checkout's)
    whose models keep only their first warm-up input (:func:`trim_warmups`): a test server
    needs none of the page shapes a deployment warms at start, and each shape a test does
    send costs its first request about what its warm-up would have."""
    env = {"OCR_ENGINE_CACHE_DIR": str(ENGINE_CACHE), **options.pop("env", {})}
    folder = tmp_path_factory.mktemp(name)
    repository = Path(repository or django_settings.TRITON_MODEL_REPOSITORY)
    if not warmups:
        if repository == Path(django_settings.TRITON_MODEL_REPOSITORY):
            repository = trimmed_repository(folder / "repository")
        else:
            trim_warmups(repository)      # the test's own copy
    if not any(ENGINE_CACHE.glob("*")):
        # Past pytest's capture: otherwise the first run is minutes of silence.
        sys.__stderr__.write(f"\nFirst test Triton: compiling the networks and timing their "
                             f"precisions into {ENGINE_CACHE} (a few minutes, once)\n")
    server = EmbeddedTriton(repository=repository, log_path=folder / "triton.log", env=env,
                            **options)
    try:
        server.start(timeout_s=900)         # a cold first start: compiling and timing engines
        yield server
    finally:
        server.stop()


def trim_warmups(repository: Path) -> Path:
    """Keep only the first ``model_warmup`` input of every config in ``repository`` (a copy:
    the files are rewritten), flavours' configs included: the one ``auto`` times precisions
    on, so the server reuses the precision decisions of the engine cache."""
    from google.protobuf import text_format
    from tritonclient.grpc import model_config_pb2

    for path in [*repository.glob("*/config.pbtxt"), *repository.glob("*/configs/*.pbtxt")]:
        config = text_format.Parse(path.read_text(), model_config_pb2.ModelConfig())
        if len(config.model_warmup) > 1:
            del config.model_warmup[1:]
            path.write_text(text_format.MessageToString(config))
    return repository


def python_backend_instances(repository: Path) -> int:
    """Python-backend model instances a server of ``repository`` runs (cpu flavour): each has
    its own stub process and shared-memory region."""
    from google.protobuf import text_format
    from tritonclient.grpc import model_config_pb2

    count = 0
    for path in Path(repository).glob("*/config.pbtxt"):
        config = text_format.Parse(path.read_text(), model_config_pb2.ModelConfig())
        if config.backend == "python":
            count += sum(group.count or 1 for group in config.instance_group) or 1
    return count


def trimmed_repository(target: Path) -> Path:
    """A copy of the model repository as the tests' own servers serve it: weights hard-linked,
    warm-ups trimmed (:func:`trim_warmups`)."""
    return trim_warmups(copy_repository(target))


def copy_repository(target: Path) -> Path:
    """A private copy of the model repository (weights hard-linked, not copied) that a test
    may change: add versions, edit configs. OpenVINO's compiled models are cached by content
    (:class:`ocr_pipeline.engines.OpenVinoEngine`), so the copy's networks load from the
    engine cache as the original's do."""
    source = Path(django_settings.TRITON_MODEL_REPOSITORY)
    for path in source.rglob("*"):
        if "__pycache__" in path.parts:
            continue
        destination = target / path.relative_to(source)
        if path.is_dir():
            destination.mkdir(parents=True, exist_ok=True)
        elif path.suffix in (".onnx", ".bin"):
            destination.hardlink_to(path)
        else:
            destination.write_bytes(path.read_bytes())
    return target


def blank_pdf(pages: int) -> bytes:
    """A PDF of ``pages`` blank A4 pages (595 x 842 points), made with PDFium."""
    import pypdfium2 as pdfium

    document = pdfium.PdfDocument.new()
    for _ in range(pages):
        document.new_page(595, 842)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def pdftotext(pdf: bytes, tmp_path: Path, *args: str) -> str:
    """What poppler's ``pdftotext`` extracts from ``pdf`` (``args``: its options, e.g.
    ``-bbox``); pages are separated by form feeds."""
    assert shutil.which("pdftotext"), "pdftotext is missing: apt-get install poppler-utils"
    path = tmp_path / "out.pdf"
    path.write_bytes(pdf)
    return subprocess.run(["pdftotext", *args, str(path), "-"], check=True, capture_output=True,
                          text=True).stdout


def pdftotext_words(pdf: bytes, tmp_path: Path, *args: str) -> list[dict]:
    """``pdftotext -bbox``'s words (``args``: more options, e.g. ``-l 1``), in its order, each
    ``{"text", "xMin", "yMin", "xMax", "yMax"}`` with the box in points from the top left."""
    import xml.etree.ElementTree as ET

    layout = ET.fromstring(pdftotext(pdf, tmp_path, "-bbox", *args))
    return [{"text": word.text, **{k: float(word.get(k)) for k in ("xMin", "yMin", "xMax", "yMax")}}
            for word in layout.iter("{http://www.w3.org/1999/xhtml}word")]


def ensemble_inferences(server, expected: int | None = None, wait_s: float = 5.0) -> int:
    """Requests ``server``'s ensemble has answered so far (Triton's statistics; cache hits are
    not counted).

    Triton counts a request when it releases it, which can come a moment after the response
    reached the client; with ``expected``, the count is read again every 50 ms for up to
    ``wait_s`` seconds until it reaches ``expected``, and the last count read is returned."""
    import time

    import tritonclient.grpc as grpcclient

    client = grpcclient.InferenceServerClient(server.grpc_url)
    try:
        give_up = time.monotonic() + wait_s
        while True:
            stats = client.get_inference_statistics("ensemble_ocr", as_json=True)
            count = sum(int(model.get("inference_count", 0)) for model in stats["model_stats"])
            if expected is None or count >= expected or time.monotonic() > give_up:
                return count
            time.sleep(0.05)
    finally:
        client.close()
