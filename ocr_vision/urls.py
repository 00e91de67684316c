"""Cloud Vision's routes (mounted at the root by gateway/urls.py, as Cloud Vision has them)."""

from django.urls import path

from . import views

urlpatterns = [
    path("v1/images:annotate", views.ImagesAnnotateView.as_view(), name="vision-images"),
    path("v1/files:annotate", views.FilesAnnotateView.as_view(), name="vision-files"),
]
