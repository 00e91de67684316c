"""INT8 CRAFT: post-training quantisation with OpenVINO + NNCF, at box parity.

``python -m ocr_pipeline.quantization --repository triton_models/repository`` (or
``manage.py quantize_models``) reads ``craft/<version>/model.onnx``, quantises it with the recipe
below, calibrated on the images the project ships (``tests/data/images``, each at long side
1280 and 640), and writes ``model_int8.xml`` / ``model_int8.bin`` beside it with a
``model_int8.xml.sha256`` record (the files' hashes, the source ONNX's, NNCF's version and the
calibration images'). Nothing is written until the quantised model exists; running it again
does nothing while the record matches. The engines offer ``int8`` wherever that record is valid
(:func:`ocr_pipeline.engines.int8_path`).

The recipe (found by box parity against ``tests/data/reference/craft_boxes_1280.json``, every
image F >= 0.95 at IoU >= 0.8, and the ICDAR sample's H-mean no lower than FP32's): NNCF
``quantize`` with the ``MIXED`` preset (symmetric per-channel weights, asymmetric activations),
fast bias correction, all 20 calibration samples, and these layers kept in FP32
(:data:`CRAFT_FP32_PATTERNS`), so that conv1_2 to conv5_1 of the VGG16-BN backbone (about
80 % of the multiply-adds) run in INT8:

- the first conv (``slice1.0``), which reads the normalised image: under 1 % of the work, but in
  INT8 two region-score pixels of img_1 at 0.402 / 0.404 fell under ``low_text`` 0.4 and one
  box's IoU dropped to 0.75;
- conv5_2 (``slice4.37``) and ``slice5`` (pool5, fc6, fc7), whose signed outputs go without a
  ReLU into the decoder: in INT8, img_4's only peak fell from 0.734 to 0.700 and its box was lost;
- the U-Net decoder (``upconv*``) and the score head (``conv_cls``): quantised, they destroy the
  score maps (mean F 0.30).

Measured parity with this recipe: F = 1.000 on all 10 images, H-mean 0.875 (= FP32). Speed
depends on the CPU: on AVX2 without VNNI (AMD EPYC) INT8 CRAFT is only 1.04x FP32 (OpenVINO's
AVX2 INT8 kernels are barely faster there); with AVX-512 VNNI the backbone-only INT8 ran about
3x FP32. The engines choose INT8 only where it is measured faster (``precision=auto``).
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import sys
from pathlib import Path

from .engines import (INT8_RECORD_VERSION, QUANTISED_MODEL, int8_path, int8_record,
                      read_int8_record)
from .weights import sha256_of

#: Node-name patterns (regular expressions on the ONNX node names) kept in FP32.
CRAFT_FP32_PATTERNS = (
    r"/basenet/slice1/slice1\.0/.*",
    r"/basenet/slice4/slice4\.37/.*",
    r"/basenet/slice5/.*",
    r"/upconv\d/.*",
    r"/conv_cls/.*",
)
#: Long sides the calibration images are prepared at (the service sees both).
CALIBRATION_LONG_SIDES = (1280, 640)
DEFAULT_IMAGES = Path(__file__).resolve().parents[2] / "tests" / "data" / "images"


class QuantizationError(RuntimeError):
    """NNCF is missing, or the source model or the calibration images cannot be read."""


def calibration_images(folder: Path) -> list[Path]:
    """The calibration images: every file of ``folder``, by name.

    Raises:
        QuantizationError: the folder has no files.
    """
    paths = sorted(p for p in Path(folder).iterdir() if p.is_file()) if Path(folder).is_dir() \
        else []
    if not paths:
        raise QuantizationError(f"no calibration images in {folder}")
    return paths


def images_sha256(paths: list[Path]) -> str:
    """One hash over the calibration images' names and bytes."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def quantize_craft(onnx_path: Path, images: list[Path]):
    """CRAFT quantised by the recipe of the module docstring.

    Args:
        onnx_path: CRAFT's ONNX file (uint8 ``[B, H, W, 3]`` input ``image``).
        images: calibration images, each prepared at :data:`CALIBRATION_LONG_SIDES`.

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
    from . import imaging

    nncf.set_log_level(logging.WARNING)   # not one line per layer it leaves alone
    tensors = [imaging.prepare_image(path.read_bytes(), side, keep_original=False).tensor
               for side in CALIBRATION_LONG_SIDES for path in images]
    return nncf.quantize(
        ov.Core().read_model(str(onnx_path)), nncf.Dataset(tensors),
        preset=nncf.QuantizationPreset.MIXED, subset_size=len(tensors),
        fast_bias_correction=True,
        ignored_scope=nncf.IgnoredScope(patterns=list(CRAFT_FP32_PATTERNS), validate=False))


def ensure_int8_craft(repository: Path, version: str = "1", images: Path = DEFAULT_IMAGES,
                      log=print) -> Path:
    """``craft/<version>/model_int8.xml``, made if it is missing or its record does not match
    the source model and the calibration images.

    Returns:
        the path of the verified INT8 model.

    Raises:
        QuantizationError: see :func:`quantize_craft` and :func:`calibration_images`.
        FileNotFoundError: the source model is missing (run fetch_models first).
    """
    import openvino as ov

    source = Path(repository) / QUANTISED_MODEL / version / "model.onnx"
    if not source.exists():
        raise FileNotFoundError(f"{source} not found; run `python manage.py fetch_models`")
    paths = calibration_images(images)
    target = int8_path(source)
    expected = {"source": sha256_of(source), "calibration": images_sha256(paths),
                "recipe": INT8_RECORD_VERSION}
    record = read_int8_record(source)
    if record is not None and all(record.get(k) == v for k, v in expected.items()):
        log(f"{target}: present, made from this model.onnx and these images")
        return target
    log(f"quantising {source} to INT8, calibrated on {len(paths)} images at long sides "
        f"{', '.join(map(str, CALIBRATION_LONG_SIDES))} (a few minutes on 2 cores)")
    model = quantize_craft(source, paths)
    partial = target.with_name(target.stem + ".partial.xml")
    ov.save_model(model, str(partial))
    partial.replace(target)
    partial.with_suffix(".bin").replace(target.with_suffix(".bin"))
    import nncf

    int8_record(source).write_text(
        "\n".join(f"{key}: {value}" for key, value in {
            **expected, "xml": sha256_of(target), "bin": sha256_of(target.with_suffix(".bin")),
            "nncf": nncf.__version__}.items()) + "\n")
    log(f"{target}: written")
    return target


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repository", type=Path,
                        default=Path(__file__).resolve().parent.parent / "repository")
    parser.add_argument("--version", default="1")
    parser.add_argument("--images", type=Path, default=DEFAULT_IMAGES,
                        help="calibration images (default tests/data/images)")
    args = parser.parse_args(argv)
    try:
        ensure_int8_craft(args.repository, args.version, args.images)
    except (QuantizationError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
