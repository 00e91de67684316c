"""Views of the in-process baseline: the model runs inside the web worker.

``POST /ocr`` (multipart field ``image``; optional query ``long_side``) answers
``{"boxes": [{"points", "score"}], "timing_ms": {...}}`` like the gateway's ``/api/ocr``.
``GET /ready`` answers 200 with the engine description once this worker's model is loaded
and warmed up.

Environment: ``BENCH_WARMUP_DIR`` (images to warm every input shape with at load) and
``BENCH_LONG_SIDE`` (their long side, pixels, default 1280).
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from django.http import HttpResponseNotAllowed, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from ocr_contract.parameters import LONG_SIDE
from ocr_pipeline import imaging

from bench.pipeline import InProcessPipeline

_pipeline: InProcessPipeline | None = None
_load_lock = threading.Lock()


def load_model() -> InProcessPipeline:
    """Load (once per process) and warm up this worker's own copy of the model."""
    global _pipeline
    with _load_lock:
        if _pipeline is None:
            pipeline = InProcessPipeline()
            warmup_dir = os.environ.get("BENCH_WARMUP_DIR")
            if warmup_dir:
                images = [p.read_bytes() for p in sorted(Path(warmup_dir).iterdir())
                          if p.is_file()]
                pipeline.warm_up(images, int(os.environ.get("BENCH_LONG_SIDE",
                                                            LONG_SIDE.default)))
            _pipeline = pipeline
        return _pipeline


@csrf_exempt
def ocr(request):
    """Detect text boxes in the uploaded image with this worker's model."""
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    started = time.perf_counter()
    upload = request.FILES.get("image")
    if upload is None:
        return JsonResponse({"error": "missing_image"}, status=400)
    try:
        long_side = LONG_SIDE.check(int(request.GET.get("long_side", LONG_SIDE.default)))
    except ValueError as exc:
        return JsonResponse({"error": "invalid_parameter", "message": str(exc)}, status=400)
    try:
        result = load_model().detect(upload.read(), long_side)
    except (imaging.ImageDecodeError, imaging.ImageTooLargeError) as exc:
        return JsonResponse({"error": "image_undecodable", "message": str(exc)}, status=400)
    timing = {key: round(value, 2) for key, value in result.timing_ms.items()}
    timing["total"] = round((time.perf_counter() - started) * 1e3, 2)
    return JsonResponse({
        "boxes": [{"points": [[round(float(x), 1), round(float(y), 1)] for x, y in box],
                   "score": round(float(score), 4)}
                  for box, score in zip(result.boxes, result.scores)],
        "timing_ms": timing,
    })


def ready(request):
    """200 with the engine in use once the model is loaded (loads it if needed)."""
    pipeline = load_model()
    return JsonResponse({"status": "ready", "engine": pipeline.description, "pid": os.getpid()})
