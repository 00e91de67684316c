"""``GET /metrics``: the gateway's Prometheus metrics (see :mod:`ocr_api.metrics`)."""

from django.http import HttpResponse

from ..metrics import exposition


def metrics_view(request):
    """Prometheus text exposition. Unauthenticated, like Triton's: expose it to the cluster's
    Prometheus only (the Ingress routes /api/ and /admin/, not /metrics)."""
    body, content_type = exposition()
    return HttpResponse(body, content_type=content_type)
