"""``python manage.py quantize_models``: make the INT8 CRAFT model (ocr_pipeline.quantization)."""

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

try:  # the model repository's package; the gateway-only image does not carry it
    from ocr_pipeline.quantization import DEFAULT_IMAGES, QuantizationError, ensure_int8_craft
except ImportError:  # pragma: no cover - depends on the installation
    ensure_int8_craft = None
    DEFAULT_IMAGES = ""


class Command(BaseCommand):
    help = ("Quantise CRAFT to INT8 with NNCF, calibrated on the shipped test images, at box "
            "parity (kept FP32: the first conv, conv5_2/fc6/fc7, the decoder and the head). "
            "Does nothing while the model's record matches. The engines use it where it is "
            "measured faster (precision auto) or when asked (OCR_ENGINE_PRECISION=int8).")

    def add_arguments(self, parser):
        parser.add_argument("--model-version", default="1", help="version folder of craft")
        parser.add_argument("--images", type=Path, default=DEFAULT_IMAGES,
                            help="calibration images (default tests/data/images)")

    def handle(self, *args, model_version, images, **options):
        if ensure_int8_craft is None:
            raise CommandError("ocr_pipeline is not installed here: pip install -e "
                               "'./triton_models[cpu,quantize]'")
        try:
            ensure_int8_craft(settings.TRITON_MODEL_REPOSITORY, model_version, images,
                              log=self.stdout.write)
        except (QuantizationError, FileNotFoundError) as exc:
            raise CommandError(str(exc)) from exc
