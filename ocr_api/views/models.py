"""``GET /api/models``: the models Triton serves, their versions and readiness, the CPU
engines, the text detector of requests that name none (and why), and the languages."""

from django.conf import settings
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from ocr_contract.languages import LANGUAGES, PPOCR, TESSERACT
from ocr_contract.parameters import DETECTOR
from ocr_contract.tensors import DETECTOR_ENSEMBLES
from ocr_inference.model_control import ModelControl, ModelControlError
from ocr_inference.triton_metrics import engine_info

from .. import detectors, errors
from ..inference import get_client
from ..serializers import error_responses
from .base import OcrEndpoint


class ModelStateSerializer(serializers.Serializer):
    name = serializers.CharField()
    version = serializers.CharField(help_text="Version folder; empty if never loaded.")
    state = serializers.CharField(help_text="READY, UNAVAILABLE, LOADING, UNLOADING or empty.")
    ready = serializers.BooleanField()


class LanguageSerializer(serializers.Serializer):
    code = serializers.CharField(help_text="ISO 639-1 code, as the language parameter takes it.")
    name = serializers.CharField()
    recognizer = serializers.ChoiceField(choices=[PPOCR, TESSERACT],
                                         help_text="The model that reads it.")
    tesseract = serializers.CharField(help_text="Tesseract's name for it (eng, chi_sim...): "
                                                "what Tesseract-speaking tools such as "
                                                "ocrmypdf's -l take.")


class DetectorsSerializer(serializers.Serializer):
    default = serializers.ChoiceField(
        choices=list(DETECTOR_ENSEMBLES),
        help_text="What detector=auto (or no detector) means here: OCR_DETECTOR, or the "
                  "choice by measurement when it is auto.")
    reason = serializers.CharField(help_text="Why, in one line.")
    ensembles = serializers.DictField(child=serializers.CharField(),
                                      help_text="The ensemble each detector's requests go to.")


class ModelListSerializer(serializers.Serializer):
    models = ModelStateSerializer(many=True)
    detectors = DetectorsSerializer()
    engines = serializers.DictField(
        child=serializers.CharField(),
        help_text="Engine and precision of each cpu-flavour network, e.g. "
                  "{\"craft v1\": \"openvino 2026.4.1 F32 LATENCY\"}; empty on GPU.")
    languages = LanguageSerializer(many=True, help_text="What the language parameter accepts "
                                                        "besides auto.")


class ModelsView(APIView):
    """List Triton's repository index, the CPU engines in use and the recognition languages
    (the credentials of ``POST /api/ocr``: an API key, or a staff user's session).

    Triton's reasons for a model not being ready (paths, exceptions) stay out of the answer:
    operators see them in ``manage.py triton_models`` and the admin page."""

    authentication_classes = OcrEndpoint.authentication_classes

    @extend_schema(operation_id="models", summary="Served models and versions",
                   responses={200: ModelListSerializer, **error_responses(401, 403, 503)})
    def get(self, request):
        try:
            index = ModelControl(settings.TRITON_GRPC_URL, timeout_s=5).index()
        except ModelControlError as exc:
            raise errors.InferenceUnavailable(
                retry_after=settings.TRITON_RETRY_AFTER_S) from exc
        choice = detectors.choose()
        return Response({
            "models": [{"name": m.name, "version": m.version, "state": m.state,
                        "ready": m.ready} for m in index],
            "detectors": {"default": choice.detector, "reason": choice.reason,
                          "ensembles": {name: get_client().model_for({DETECTOR.name: name})
                                        for name in DETECTOR_ENSEMBLES}},
            "engines": engine_info(settings.TRITON_METRICS_URL, timeout_s=1.0),
            "languages": [{"code": language.code, "name": language.name,
                           "recognizer": language.recognizer,
                           "tesseract": language.traineddata} for language in LANGUAGES]})
