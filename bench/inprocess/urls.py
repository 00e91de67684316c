"""Routes of the in-process baseline: ``POST /ocr`` and ``GET /ready``."""

from django.urls import path

from . import views

urlpatterns = [
    path("ocr", views.ocr, name="ocr"),
    path("ready", views.ready, name="ready"),
]
