"""``python manage.py quantize_models``: make the INT8 networks (ocr_pipeline.quantization)."""

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

try:  # the model repository's package; the gateway-only image does not carry it
    from ocr_pipeline.quantization import DEFAULT_IMAGES, RECIPES, QuantizationError, ensure_int8
except ImportError:  # pragma: no cover - depends on the installation
    ensure_int8, RECIPES = None, ()
    DEFAULT_IMAGES = ""


class Command(BaseCommand):
    help = ("Quantise CRAFT and the LinkRefiner to INT8 with NNCF, calibrated on "
            "tests/data/calibration (images no test uses). Does nothing while each model's "
            "record matches. The engines serve INT8 only where it is measured faster and agrees "
            "with FP32 on the validation set (precision auto), or when asked "
            "(OCR_ENGINE_PRECISION=int8).")

    def add_arguments(self, parser):
        parser.add_argument("--model-version", default="1", help="version folder of the models")
        parser.add_argument("--images", type=Path, default=DEFAULT_IMAGES,
                            help="calibration images (default tests/data/calibration)")
        parser.add_argument("--networks", default="",
                            help="comma-separated, of: " + ", ".join(r.network for r in RECIPES))

    def handle(self, *args, model_version, images, networks, **options):
        if ensure_int8 is None:
            raise CommandError("ocr_pipeline is not installed here: pip install -e "
                               "'./triton_models[cpu,quantize]'")
        try:
            ensure_int8(settings.TRITON_MODEL_REPOSITORY, model_version, images,
                        log=self.stdout.write,
                        networks=tuple(networks.split(",")) if networks else None)
        except (QuantizationError, FileNotFoundError) as exc:
            raise CommandError(str(exc)) from exc
