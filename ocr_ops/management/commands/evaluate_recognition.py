"""``python manage.py evaluate_recognition``: score the served OCR's text on the shared data.

Three measures, all through a running Triton (``--triton-url``), scored by
``ocr_pipeline.text_evaluation``:

- **images** (``recognition/text_gt.json``): every image through the ensemble, its whole text
  against the words the image shows, as a bag of tokens. Images marked ``complete`` score
  precision, recall and F; the others recall only. Totals sum the counts.
- **words** (``recognition/words/``, mmocr ``labels.json``): each word crop read as one text
  line by the served recognizer (no detection: the crops are cut tight around one word); a
  word is right when its tokens, joined, equal the label's.
- **receipts** (``recognition/receipts/data.txt``, wildreceipt format): each receipt through
  the ensemble; a label is found when, spaces removed (the labels have none), it is part of one
  line of the answer.

``--rotated``: the images measure again with every image turned 90, 180 and 270 degrees
clockwise (decoded upright, turned, sent as PNG without EXIF: ``ocr_pipeline.imaging.
turned_png``), F/R per angle printed beside upright, and how often the answer's
``image.angle`` is the turn; words and receipts are not measured then.

Needs ``ocr_pipeline`` (``pip install -e ./triton_models``, part of ``make setup``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import tritonclient.grpc as grpcclient
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from ocr_contract.tensors import RECOGNIZER_INPUT, RECOGNIZER_MODEL, RECOGNIZER_OUTPUTS
from ocr_inference.client import TritonClient
from ocr_inference.errors import InferenceError



class Command(BaseCommand):
    help = ("Score the served OCR's text against tests/data/recognition: bag-of-tokens "
            "precision/recall/F per image, word accuracy on word crops, receipt labels found.")

    def add_arguments(self, parser):
        data = Path(settings.BASE_DIR) / "tests" / "data"
        parser.add_argument("--data", type=Path, default=data / "recognition",
                            help="the recognition data folder (default tests/data/recognition)")
        parser.add_argument("--images", type=Path, default=data / "images",
                            help="folder of the images text_gt.json names (default "
                                 "tests/data/images)")
        parser.add_argument("--long-side", type=int, default=None,
                            help="resize target of the long side, pixels (default: the model's)")
        parser.add_argument("--language", default=None,
                            help="language parameter for every image (default: the model's, auto)")
        parser.add_argument("--image-language", action="append", default=[],
                            metavar="NAME=CODES",
                            help="language for one image, e.g. korean.png=ko (repeatable)")
        parser.add_argument("--triton-url", default=None,
                            help="Triton gRPC target (default settings.TRITON_GRPC_URL)")
        parser.add_argument("--model", default=None,
                            help="ensemble to call (default settings.TRITON_MODEL)")
        parser.add_argument("--rotated", action="store_true",
                            help="the images turned 90/180/270 too (PNG, no EXIF): F/R per "
                                 "angle beside upright; skips words and receipts")
        parser.add_argument("--orientation", default=None,
                            help="orientation parameter for every image (default: the model's, "
                                 "auto)")
        parser.add_argument("--json", dest="json_path", default=None,
                            help="also write the results as JSON to this file ('-': stdout)")

    def handle(self, *args, data, images, long_side, language, image_language, triton_url,
               model, json_path, rotated=False, orientation=None, **options):
        try:
            from ocr_pipeline import imaging, recognition, text_evaluation, versions
        except ImportError as exc:
            raise CommandError(f"{exc}: install the model package: "
                               f"pip install -e ./triton_models") from exc
        self.imaging, self.recognition, self.scoring = imaging, recognition, text_evaluation
        self.latest_version = versions.latest_version
        overrides = dict(item.split("=", 1) for item in image_language if "=" in item)
        url = triton_url or settings.TRITON_GRPC_URL
        client = TritonClient(url, model or settings.TRITON_MODEL, settings.TRITON_TIMEOUT_S)
        # When the JSON goes to stdout, the human-readable table goes to stderr.
        self.out = self.stderr if json_path == "-" else self.stdout

        def parameters(name: str) -> dict:
            chosen = overrides.get(name, language)
            return {key: value for key, value in
                    (("long_side", long_side), ("language", chosen),
                     ("orientation", orientation)) if value is not None}

        try:
            if rotated:
                result = {"triton_url": url, "rotated": {
                    str(angle): self._images(client, data, images, parameters, angle)
                    for angle in (0, 90, 180, 270)}}
                self.out.write("\n".join(
                    f"turned {angle:3s}: complete images F {r['complete']['f_score']:.3f}, "
                    f"partial images R {r['partial']['recall']:.3f}, angle found "
                    f"{r['angle_right']}/{len(r['per_image'])}"
                    for angle, r in result["rotated"].items()))
            else:
                result = {"triton_url": url,
                          "images": self._images(client, data, images, parameters),
                          "words": self._words(url, data / "words"),
                          "receipts": self._receipts(client, data / "receipts", parameters)}
        except InferenceError as exc:
            raise CommandError(f"{exc.code}: {exc}") from exc
        finally:
            client.close()
        if json_path:
            text = json.dumps(result, indent=1, ensure_ascii=False)
            if json_path == "-":
                sys.stdout.write(text + "\n")
            else:
                Path(json_path).write_text(text + "\n", encoding="utf-8")

    def _images(self, client, data: Path, images: Path, parameters, angle: int = 0) -> dict:
        """The images measure; ``angle``: each image turned that far clockwise first (PNG)."""
        complete, partial = self.scoring.TextScore(), self.scoring.TextScore()
        rows = []
        if angle:
            self.out.write(f"turned {angle} degrees clockwise:")
        self.out.write(f"{'image':24s} {'kind':8s} {'read':>5s} {'truth':>5s} {'match':>5s} "
                       f"{'P':>6s} {'R':>6s} {'F':>6s} {'ms':>7s}")
        try:
            truths = self.scoring.load_text_truth(data / "text_gt.json")
        except (OSError, ValueError) as exc:
            raise CommandError(f"cannot read the text ground truth: {exc}") from exc
        for truth in truths:
            data_ = _read(images / truth.image)
            if angle:
                data_ = self.imaging.turned_png(data_, angle)
            answer = client.infer(data_, parameters(truth.image))
            score = self.scoring.score_text(answer.text, truth.words)
            (complete if truth.complete else partial).add(score)
            kind = "complete" if truth.complete else "partial"
            shown_p = f"{score.precision:6.3f}" if truth.complete else f"{'-':>6s}"
            shown_f = f"{score.f_score:6.3f}" if truth.complete else f"{'-':>6s}"
            self.out.write(f"{truth.image:24s} {kind:8s} {score.read:5d} {score.expected:5d} "
                           f"{score.matched:5d} {shown_p} {score.recall:6.3f} {shown_f} "
                           f"{answer.inference_ms:7.0f}")
            rows.append({"image": truth.image, "complete": truth.complete,
                         "parameters": parameters(truth.image), "matched": score.matched,
                         "read": score.read, "expected": score.expected,
                         "precision": score.precision, "recall": score.recall,
                         "f_score": score.f_score, "inference_ms": round(answer.inference_ms, 1),
                         "angle": answer.angle})
        self.out.write(f"complete images: F {complete.f_score:.3f} (P {complete.precision:.3f}, "
                       f"R {complete.recall:.3f}); other images: R {partial.recall:.3f}")
        return {"complete": {"f_score": complete.f_score, "precision": complete.precision,
                             "recall": complete.recall},
                "partial": {"recall": partial.recall}, "per_image": rows,
                "angle_right": sum(row["angle"] == angle for row in rows)}

    def _words(self, url: str, folder: Path) -> dict:
        """Word crops through the served recognizer (the pipeline's own preprocessing and
        decoding): its newest version in the repository, decoded with that version's
        dictionary, as the ``recognize`` step does."""
        labels = json.loads(_read(folder / "labels.json"))["data_list"]
        dictionary = self.latest_version(
            Path(settings.TRITON_MODEL_REPOSITORY) / RECOGNIZER_MODEL, "dict.txt")
        version = dictionary.parent.name
        classes = self.recognition.load_dictionary(dictionary)
        raw = grpcclient.InferenceServerClient(url)
        rows = []
        try:
            for entry in labels:
                label = entry["instances"][0]["text"]
                crop = np.asarray(self.imaging.decode_image(_read(folder / entry["img_path"])))
                tensor = self.recognition.batch_tensor([crop])
                request = grpcclient.InferInput(RECOGNIZER_INPUT, list(tensor.shape), "FP32")
                request.set_data_from_numpy(tensor)
                try:
                    result = raw.infer(RECOGNIZER_MODEL, [request], model_version=version)
                except Exception as exc:  # noqa: BLE001 - tritonclient's errors, reported
                    raise CommandError(f"the recognizer (version {version}) failed on "
                                       f"{entry['img_path']}: {exc}")
                reading = self.recognition.ctc_greedy(
                    *(result.as_numpy(name) for name in RECOGNIZER_OUTPUTS), classes)[0]
                right = (self.scoring.normalise_word(reading.text)
                         == self.scoring.normalise_word(label))
                rows.append({"image": entry["img_path"], "label": label, "read": reading.text,
                             "right": right})
        finally:
            raw.close()
        accuracy = sum(row["right"] for row in rows) / len(rows) if rows else 0.0
        wrong = ", ".join(f"{r['label']}→{r['read']!r}" for r in rows if not r["right"])
        self.out.write(f"words: {sum(r['right'] for r in rows)}/{len(rows)} right "
                       f"({accuracy:.3f}){'; wrong: ' + wrong if wrong else ''}")
        return {"accuracy": accuracy, "per_word": rows}

    def _receipts(self, client, folder: Path, parameters) -> dict:
        rows = []
        for line in _read(folder / "data.txt").decode("utf-8").splitlines():
            if not line.strip():
                continue
            entry = json.loads(line)
            name = Path(entry["file_name"]).name
            answer = client.infer(_read(folder / name), parameters(name))
            read_lines = [self.scoring.normalise_word(text) for text in answer.text.splitlines()]
            labels = [self.scoring.normalise_word(a["text"]) for a in entry["annotations"]]
            labels = [label for label in labels if label]
            found = sum(any(label in text for text in read_lines) for label in labels)
            rows.append({"image": name, "labels": len(labels), "found": found})
            self.out.write(f"receipt {name}: {found}/{len(labels)} labels found")
        total = sum(r["labels"] for r in rows)
        recall = sum(r["found"] for r in rows) / total if total else 0.0
        self.out.write(f"receipts: label recall {recall:.3f}")
        return {"label_recall": recall, "per_receipt": rows}


def _read(path: Path) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise CommandError(f"cannot read {path}: {exc}") from exc
