"""``GET /api/models``: the models Triton serves, their versions and readiness."""

from django.conf import settings
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from .. import errors
from ..model_control import ModelControl, ModelControlError


class ModelStateSerializer(serializers.Serializer):
    name = serializers.CharField()
    version = serializers.CharField(help_text="Version folder; empty if never loaded.")
    state = serializers.CharField(help_text="READY, UNAVAILABLE, LOADING, UNLOADING or empty.")
    ready = serializers.BooleanField()
    reason = serializers.CharField(help_text="Why the model is not ready, if it is not.")


class ModelListSerializer(serializers.Serializer):
    models = ModelStateSerializer(many=True)


class ModelsView(APIView):
    """List Triton's repository index (API key required)."""

    @extend_schema(operation_id="models", summary="Served models and versions",
                   responses={200: ModelListSerializer})
    def get(self, request):
        try:
            index = ModelControl(settings.TRITON_GRPC_URL, timeout_s=5).index()
        except ModelControlError as exc:
            raise errors.InferenceUnavailable(
                retry_after=settings.TRITON_RETRY_AFTER_S) from exc
        return Response({"models": [
            {"name": m.name, "version": m.version, "state": m.state, "ready": m.ready,
             "reason": m.reason} for m in index]})
