"""Probes: ``GET /api/health`` (liveness) and ``GET /api/ready`` (readiness)."""

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from .. import admission, inference
from ..inference import get_client
from ..serializers import error_responses


class HealthView(APIView):
    """Liveness: the gateway process answers. Does not look at Triton."""

    authentication_classes: list = []
    permission_classes = [AllowAny]

    @extend_schema(operation_id="health", summary="Liveness probe",
                   responses={200: OpenApiTypes.OBJECT, **error_responses()})
    def get(self, request):
        return Response({"status": "ok"})


class ReadyView(APIView):
    """Readiness: at least one Triton replica is live with the ensemble ready; 503 otherwise.
    ``replicas`` says how many of the replicas ``TRITON_GRPC_URL`` names are ready; ``load``
    what admission sees (:meth:`ocr_api.admission.Admission.load`: the backlog in seconds,
    pages in flight, ``saturated``). A saturated gateway stays ready: its replicas share one
    Triton and one ledger, so taking them out of the Service would turn fast 503s with
    ``Retry-After`` into refused connections; scale on ``ocr_admission_backlog_seconds``
    instead."""

    authentication_classes: list = []
    permission_classes = [AllowAny]

    @extend_schema(operation_id="ready", summary="Readiness probe",
                   responses={200: OpenApiTypes.OBJECT, 503: OpenApiTypes.OBJECT,
                              **error_responses()})
    def get(self, request):
        client = get_client()
        replicas_ready, replicas = client.replicas_ready()
        # And through the balanced channel inference uses (asking also makes it reconnect
        # now rather than after its backoff).
        ready = replicas_ready > 0 and client.is_ready()
        body = {"status": "ready" if ready else "unavailable",
                "model": {"name": client.model, "ready": ready},
                "replicas": {"ready": replicas_ready, "total": replicas},
                "load": admission.get().load(inference.default_cost_kinds())}
        response = Response(body, status=status.HTTP_200_OK if ready
                            else status.HTTP_503_SERVICE_UNAVAILABLE)
        if not ready:
            response["Retry-After"] = str(settings.TRITON_RETRY_AFTER_S)
        return response
