"""``python manage.py evaluate_detection``: score the served detector on ICDAR-style ground truth.

Sends every image of a ground-truth file to the ensemble through the gateway's own Triton
client (``ocr_inference.client.TritonClient``), then scores the boxes with
``ocr_pipeline.evaluation`` (ICDAR 2015 rule: one-to-one matching at polygon IoU >= 0.5,
detections mostly inside a don't-care region dropped). Prints precision, recall and H-mean
per image and in total; ``--json`` also writes them, with every image's boxes.

Needs Shapely at run time (``pip install -e "./triton_models[eval]"``, part of ``make setup``).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from ocr_contract.parameters import LONG_SIDE
from ocr_inference.client import TritonClient
from ocr_inference.errors import InferenceError


class Command(BaseCommand):
    help = ("Score the served text detector against ICDAR-style ground truth (mmocr textdet "
            "JSON): precision, recall and H-mean at polygon IoU >= 0.5 with don't-care regions.")

    def add_arguments(self, parser):
        data = Path(settings.BASE_DIR) / "tests" / "data"
        parser.add_argument("--gt", type=Path, default=data / "icdar2015_gt.json",
                            help="ground truth in the mmocr textdet format "
                                 "(default tests/data/icdar2015_gt.json)")
        parser.add_argument("--images", type=Path, default=data / "images",
                            help="folder the ground truth's img_path values are relative to "
                                 "(default tests/data/images)")
        parser.add_argument("--long-side", type=int, default=LONG_SIDE.default,
                            help=f"resize target of the long side, pixels (default "
                                 f"{LONG_SIDE.default})")
        parser.add_argument("--triton-url", default=None,
                            help="Triton gRPC target (default settings.TRITON_GRPC_URL)")
        parser.add_argument("--model", default=None,
                            help="ensemble to call (default settings.TRITON_MODEL)")
        parser.add_argument("--iou", type=float, default=0.5,
                            help="IoU a detection needs to match a word (default 0.5)")
        parser.add_argument("--json", dest="json_path", default=None,
                            help="also write the results as JSON to this file ('-': stdout)")

    def handle(self, *args, gt, images, long_side, triton_url, model, iou, json_path,
               **options):
        try:
            from ocr_pipeline.evaluation import DetectionScore, load_mmocr_textdet, score_image
        except ImportError as exc:  # Shapely missing
            raise CommandError(f"{exc}: install the eval extra: "
                               f"pip install -e './triton_models[eval]'") from exc
        try:
            truth = load_mmocr_textdet(gt)
        except (OSError, ValueError) as exc:
            raise CommandError(f"cannot read the ground truth: {exc}") from exc
        if not 0.0 < iou <= 1.0:
            raise CommandError("--iou must be in (0, 1]")

        url = triton_url or settings.TRITON_GRPC_URL
        client = TritonClient(url, model or settings.TRITON_MODEL, settings.TRITON_TIMEOUT_S)
        total = DetectionScore()
        per_image = []
        # When the JSON goes to stdout, the human-readable table goes to stderr.
        out = self.stderr if json_path == "-" else self.stdout
        out.write(f"{'image':24s} {'truths':>6s} {'dets':>5s} {'match':>5s} "
                  f"{'precision':>9s} {'recall':>7s} {'H-mean':>7s} {'ms':>7s}")
        try:
            for entry in truth:
                path = self._image_path(images, entry.image)
                try:
                    # Boxes only: reading the text would cost time and change nothing here.
                    detection = client.infer(path.read_bytes(),
                                             {"long_side": long_side, "recognize": False})
                except InferenceError as exc:
                    raise CommandError(f"{entry.image}: {exc.code}: {exc}") from exc
                boxes = detection.boxes.tolist()
                score = score_image(boxes, entry.truths, entry.dont_care, iou_threshold=iou)
                total.add(score)
                per_image.append({
                    "image": entry.image, "matched": score.matched,
                    "detections": score.detections, "truths": score.truths,
                    "dont_care": len(entry.dont_care), "boxes_returned": len(boxes),
                    "precision": score.precision, "recall": score.recall,
                    "hmean": score.hmean, "inference_ms": round(detection.inference_ms, 1),
                    "boxes": [[[round(x, 2), round(y, 2)] for x, y in box] for box in boxes],
                })
                out.write(f"{entry.image:24s} {score.truths:>6d} {score.detections:>5d} "
                          f"{score.matched:>5d} {score.precision:>9.3f} {score.recall:>7.3f} "
                          f"{score.hmean:>7.3f} {detection.inference_ms:>7.0f}")
        finally:
            client.close()
        out.write(f"{'total':24s} {total.truths:>6d} {total.detections:>5d} "
                  f"{total.matched:>5d} {total.precision:>9.3f} {total.recall:>7.3f} "
                  f"{total.hmean:>7.3f}")
        out.write(f"{len(truth)} images, IoU >= {iou:g}, long side {long_side}, "
                  f"Triton {url}: precision {total.precision:.4f}, recall {total.recall:.4f},"
                  f" H-mean {total.hmean:.4f}")

        if json_path:
            result = {
                "ground_truth": str(gt), "images_folder": str(images),
                "long_side": long_side, "iou_threshold": iou, "triton_url": url,
                "model": model or settings.TRITON_MODEL,
                "evaluated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "total": {"matched": total.matched, "detections": total.detections,
                          "truths": total.truths, "precision": total.precision,
                          "recall": total.recall, "hmean": total.hmean},
                "images": per_image,
            }
            text = json.dumps(result, indent=1)
            if json_path == "-":
                sys.stdout.write(text + "\n")
            else:
                Path(json_path).write_text(text + "\n")

    @staticmethod
    def _image_path(folder: Path, image: str) -> Path:
        """``folder/image``, or ``folder/<file name>`` when ``image`` has directories."""
        for candidate in (folder / image, folder / Path(image).name):
            if candidate.is_file():
                return candidate
        raise CommandError(f"image {image} not found in {folder}")
