"""API routes (mounted under /api/)."""

from django.urls import path

from . import views

urlpatterns = [
    path("ocr", views.OcrView.as_view(), name="ocr"),
    path("health", views.HealthView.as_view(), name="health"),
    path("ready", views.ReadyView.as_view(), name="ready"),
]
