"""Job routes (mounted under /api/ by gateway/urls.py)."""

from django.urls import path

from . import views

urlpatterns = [
    path("jobs", views.JobListView.as_view(), name="jobs"),
    path("jobs/<uuid:job_id>", views.JobDetailView.as_view(), name="job"),
    path("jobs/<uuid:job_id>/result", views.JobResultView.as_view(), name="job-result"),
]
