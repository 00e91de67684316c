"""Does a network in a reduced precision still give FP32's answer? Measured on a validation set
of its own, never on the test images.

The validation set is a folder of images with boxes of their text at the contract's default
long side, ``reference_<long side>.json`` (``tests/data/validation/``, its sources in
``tests/data/ADDED_SOURCES.md``; the Triton image carries a copy and names it with
``OCR_VALIDATION_DIR``). What agrees depends on the network's role in the pipeline (the
``validation`` parameter of its config.pbtxt):

- ``detector`` (CRAFT): the candidate's score maps, linked by the link refiner in FP32, must
  give the boxes FP32 CRAFT gives, both through today's postprocessing: box parity F
  (:func:`ocr_pipeline.evaluation.parity_f`, IoU 0.8) at least :data:`MIN_BOX_F` on every
  image. FP32's boxes are found when the check runs, not read from the file: the file's boxes
  came from an older postprocessing (two-column pages are now cut at the gutter), and FP32
  itself scored F 0.885 against them on the two-column page, so every candidate was refused;
- ``link_refiner`` (LinkRefiner): the same, with CRAFT in FP32 and the candidate refiner;
- ``db_detector`` (PP-OCR's DB): the candidate's probability maps must give the boxes DB in
  FP32 gives, both through DB's box extraction (:mod:`ocr_pipeline.db`), with the same bar;
- ``recognizer`` (PP-OCR rec): the crops of the file's boxes must be read as the FP32
  recognizer reads them, the same string for at least :data:`MIN_STRING_SHARE` of the crops.

:func:`ocr_pipeline.precision.choose_precision` asks only for the candidates that are faster
than FP32, so on a CPU where nothing is faster none of this runs.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
from ocr_contract.parameters import LINK_THRESHOLD, LONG_SIDE, LOW_TEXT, TEXT_THRESHOLD
from ocr_contract.tensors import CRAFT_MODEL, RECOGNIZER_INPUT, RECOGNIZER_OUTPUTS, REFINENET_MODEL

from . import detection, imaging, recognition
from .evaluation import parity_f
from .versions import latest_version

#: Roles a network can be validated in (the ``validation`` model-config parameter).
ROLES = ("detector", "link_refiner", "db_detector", "recognizer")
#: Worst per-image box-parity F a detector or link-refiner candidate may have.
MIN_BOX_F = 0.98
#: Least share of validation crops a recognizer candidate must read exactly as FP32 does.
MIN_STRING_SHARE = 0.99
#: The long side the validation images are detected at: the service's default.
VALIDATION_LONG_SIDE = LONG_SIDE.default
#: The folder used when ``OCR_VALIDATION_DIR`` is unset: the repository's own validation set.
DEFAULT_FOLDER = Path(__file__).resolve().parents[2] / "tests" / "data" / "validation"
ENVIRONMENT = "OCR_VALIDATION_DIR"

_SUFFIXES = {".jpg", ".jpeg", ".png", ".webp", ".bmp", ".tif", ".tiff"}


@dataclass(frozen=True)
class Agreement:
    """How far a candidate agrees with FP32.

    Attributes:
        value: the worst image's box-parity F, or the share of crops read alike (0..1).
        minimum: what it must reach.
        detail: one line, e.g. ``"boxes F 0.667 on img_9.jpg"``.
    """

    value: float
    minimum: float
    detail: str

    @property
    def passed(self) -> bool:
        return self.value >= self.minimum


@dataclass(frozen=True)
class Validator:
    """How one network's candidates are checked: call it with a candidate engine.

    Attributes:
        role: one of :data:`ROLES`.
        fingerprint: identifies the validation set, the role and the bars (a decision cached
            under another fingerprint is made again).
        check: the candidate engine in, its :class:`Agreement` out.
    """

    role: str
    fingerprint: str
    check: Callable[[object], Agreement]

    def __call__(self, candidate) -> Agreement:
        return self.check(candidate)


class ValidationSet:
    """The images of a validation folder with their reference boxes, decoded on first use.

    Args:
        folder: holds the images and ``reference_<VALIDATION_LONG_SIDE>.json``.

    Raises:
        FileNotFoundError: the folder or its reference file is missing.
    """

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        reference = self.folder / f"reference_{VALIDATION_LONG_SIDE}.json"
        self.reference = json.loads(reference.read_text())
        self.names = sorted(p.name for p in self.folder.iterdir()
                            if p.suffix.lower() in _SUFFIXES and p.name in self.reference)
        if not self.names:
            raise FileNotFoundError(f"no validation images listed in {reference}")
        self._prepared: dict[str, imaging.PreparedImage] = {}

    @classmethod
    def configured(cls, environ=os.environ) -> "ValidationSet | None":
        """The set ``OCR_VALIDATION_DIR`` names (else :data:`DEFAULT_FOLDER`); None when that
        folder is missing or incomplete (then no reduced precision can be shown to agree)."""
        try:
            return cls(environ.get(ENVIRONMENT) or DEFAULT_FOLDER)
        except (OSError, ValueError):
            return None

    def fingerprint(self) -> str:
        """SHA-256 over the images and the reference file: a decision made on another set is
        made again."""
        digest = hashlib.sha256()
        for name in [*self.names, f"reference_{VALIDATION_LONG_SIDE}.json"]:
            digest.update(name.encode() + b"\0" + (self.folder / name).read_bytes())
        return digest.hexdigest()

    def prepared(self, name: str) -> imaging.PreparedImage:
        """One image prepared as the service prepares it at the validation long side, with its
        full-resolution original."""
        if name not in self._prepared:
            self._prepared[name] = imaging.prepare_image(
                (self.folder / name).read_bytes(), VALIDATION_LONG_SIDE)
        return self._prepared[name]

    def boxes(self, name: str) -> list:
        """The reference boxes of one image: ``[[[x, y] x 4], ...]`` in its pixels."""
        return self.reference[name]["boxes"]

    def crops(self) -> list[np.ndarray]:
        """Every reference box cut out of its full-resolution image as the ``recognize`` step
        cuts it (uint8 ``[h, w, 3]`` RGB, :func:`ocr_pipeline.recognition.crop_box` of the box
        grown by the default margin), images in :attr:`names` order."""
        crops = []
        for name in self.names:
            prepared = self.prepared(name)
            crops += [recognition.crop_box(prepared.original, recognition.expand_box(
                np.asarray(box, np.float32), prepared.width, prepared.height))
                for box in self.boxes(name)]
        return crops


def _boxes_of(prepared: imaging.PreparedImage, maps: np.ndarray, link: np.ndarray) -> list:
    """Boxes in original-image pixels from one image's score maps (float32 ``[1, 2, h, w]``)
    and refined link (float32 ``[1, 1, h, w]``), at the contract's default thresholds
    (:func:`ocr_pipeline.detection.postprocess`)."""
    found, _ = detection.postprocess(maps, link, prepared.ratio, prepared.width, prepared.height,
                                     TEXT_THRESHOLD.default, LINK_THRESHOLD.default,
                                     LOW_TEXT.default)
    return found.tolist()


def _networks(detector, refiner) -> detection.RunModel:
    """:data:`ocr_pipeline.detection.RunModel` on two engines in this process."""
    engines = {CRAFT_MODEL: detector, REFINENET_MODEL: refiner}
    return lambda model, inputs, outputs: engines[model](inputs)


def _worst_parity(validation: ValidationSet, detect: Callable[[str], list],
                  expected: Callable[[str], list]) -> Agreement:
    scores = {name: parity_f(detect(name), expected(name)) for name in validation.names}
    worst = min(scores, key=scores.get)
    return Agreement(scores[worst], MIN_BOX_F,
                     f"boxes F {scores[worst]:.3f} on {worst} (worst of {len(scores)} images)")


class Lazy:
    """An engine compiled on its first call (a validator's FP32 partner costs nothing on a CPU
    where no candidate is faster, so none is ever checked).

    Args:
        make: () -> the engine.
    """

    def __init__(self, make: Callable[[], object]):
        self._make, self._engine = make, None

    def __call__(self, inputs):
        if self._engine is None:
            self._engine = self._make()
        return self._engine(inputs)


def _validator(role: str, validation: ValidationSet, check) -> Validator:
    bar = MIN_STRING_SHARE if role == "recognizer" else MIN_BOX_F
    return Validator(role, f"{role}:{bar}:{validation.fingerprint()[:16]}", check)


def detector_validator(validation: ValidationSet, refiner, reference) -> Validator:
    """Checks a CRAFT candidate: its maps linked by ``refiner`` (FP32) must give the boxes that
    ``reference`` (this CRAFT in FP32) gives with the same refiner, today's postprocessing on
    both sides (a stored answer would drift with every change to it)."""
    def boxes(detector) -> Callable[[str], list]:
        def detect(name: str) -> list:
            prepared = validation.prepared(name)
            return _boxes_of(prepared, *detection.score_maps(_networks(detector, refiner),
                                                             prepared.tensor))
        return detect
    expected = functools.cache(boxes(reference))   # FP32's boxes, once per image
    return _validator("detector", validation,
                      lambda candidate: _worst_parity(validation, boxes(candidate), expected))


def link_refiner_validator(validation: ValidationSet, detector, reference) -> Validator:
    """Checks a LinkRefiner candidate on the maps of ``detector`` (CRAFT in FP32, run once per
    image and kept while this check lives): it must give the boxes that ``reference`` (this
    LinkRefiner in FP32) gives on the same maps."""
    maps: dict[str, dict] = {}

    def boxes(refiner) -> Callable[[str], list]:
        def detect(name: str) -> list:
            prepared = validation.prepared(name)

            def craft_once(inputs: dict) -> dict:
                if name not in maps:
                    maps[name] = detector(inputs)
                return maps[name]
            return _boxes_of(prepared, *detection.score_maps(_networks(craft_once, refiner),
                                                             prepared.tensor))
        return detect
    expected = functools.cache(boxes(reference))   # FP32's boxes, once per image
    return _validator("link_refiner", validation,
                      lambda candidate: _worst_parity(validation, boxes(candidate), expected))


def db_validator(validation: ValidationSet, reference) -> Validator:
    """Checks a DB candidate: its probability maps, through DB's box extraction, must give the
    boxes that ``reference`` (this DB in FP32) gives (:func:`ocr_pipeline.detection
    .db_postprocess` on both sides)."""
    def boxes(network) -> Callable[[str], list]:
        def detect(name: str) -> list:
            prepared = validation.prepared(name)
            probability = network({detection.IMAGE: prepared.tensor})[detection.DB_PROBABILITY]
            return detection.db_postprocess(probability, prepared.ratio, prepared.width,
                                            prepared.height)[0].tolist()
        return detect
    expected = functools.cache(boxes(reference))   # FP32's boxes, once per image
    return _validator("db_detector", validation,
                      lambda candidate: _worst_parity(validation, boxes(candidate), expected))


def recognizer_validator(validation: ValidationSet, reference, classes: list[str],
                         max_batch: int = 32) -> Validator:
    """Checks a recognizer candidate with ``reference`` (the FP32 recognizer) on the
    crops of every reference box, in batches of similar width
    (:func:`ocr_pipeline.recognition.plan_batches`; the same tensors on both sides).

    Args:
        classes: the CTC classes (:func:`ocr_pipeline.recognition.load_dictionary`).
    """
    batches: list[np.ndarray] = []
    expected: list[list[str]] = []

    def read(engine, tensor) -> list[str]:
        output = engine({RECOGNIZER_INPUT: tensor})
        return [r.text for r in recognition.ctc_greedy(
            *(output[name] for name in RECOGNIZER_OUTPUTS), classes)]

    def check(candidate) -> Agreement:
        if not batches:
            crops = validation.crops()
            widths = [recognition.resized_width(crop) for crop in crops]
            for batch in recognition.plan_batches(widths, max_batch):
                batches.append(recognition.batch_tensor([crops[i] for i in batch]))
                expected.append(read(reference, batches[-1]))
        same = total = 0
        for tensor, wanted in zip(batches, expected):
            got = read(candidate, tensor)
            same += sum(a == b for a, b in zip(got, wanted))
            total += len(wanted)
        share = same / total if total else 1.0
        return Agreement(share, MIN_STRING_SHARE,
                         f"strings {same}/{total} crops as FP32 reads them ({share:.3f})")
    return _validator("recognizer", validation, check)


def validator_for(parameters: dict[str, str], model_dir: Path, version_dir: Path,
                  fp32: Callable[[Path], object]) -> Validator | None:
    """How this network's reduced precisions are checked against FP32, from its config's
    ``validation`` (one of :data:`ROLES`) and
    ``validation_partner`` (the model whose FP32 network completes the pipeline: the link
    refiner for the detector and the other way round); None without a role or a validation set.

    Args:
        parameters: the model config's parameters.
        model_dir, version_dir: the model's folder and the loaded version's.
        fp32: ONNX path -> that network as an FP32 engine (compiled only when a check runs).

    Raises:
        ValueError: an unknown role.
    """
    role = parameters.get("validation", "")
    reference = Lazy(lambda: fp32(version_dir / parameters.get("onnx_file", "model.onnx")))
    if not role:
        return None
    if role not in ROLES:
        raise ValueError(f"validation must be one of {ROLES}, not {role!r}")
    found = ValidationSet.configured()
    if found is None:
        return None
    if role == "recognizer":
        classes = recognition.load_dictionary(version_dir / "dict.txt")
        return recognizer_validator(found, reference, classes)
    if role == "db_detector":
        return db_validator(found, reference)
    partner_path = latest_version(model_dir.parent / parameters["validation_partner"])
    partner = Lazy(lambda: fp32(partner_path))
    if role == "detector":
        return detector_validator(found, partner, reference)
    return link_refiner_validator(found, partner, reference)
