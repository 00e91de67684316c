"""API routes (mounted under /api/)."""

from django.urls import include, path

from .views import batch, health, models, ocr

urlpatterns = [
    path("ocr", ocr.OcrView.as_view(), name="ocr"),
    path("ocr/batch", batch.OcrBatchView.as_view(), name="ocr-batch"),
    path("models", models.ModelsView.as_view(), name="models"),
    path("health", health.HealthView.as_view(), name="health"),
    path("ready", health.ReadyView.as_view(), name="ready"),
    path("", include("ocr_jobs.urls")),
]
