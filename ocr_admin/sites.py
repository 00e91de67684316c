"""The admin site: Django's, plus Triton's model repository and API usage pages (staff only)."""

from django.conf import settings
from django.contrib import admin, messages
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path
from ocr_inference.model_control import ModelControl, ModelControlError

from . import usage

MODEL_ACTIONS = ("load", "unload", "reload")


class OcrAdminSite(admin.AdminSite):
    """Django admin with ``/admin/triton/models/``: the repository index (model, version,
    state, reason) and load / unload / reload buttons, the ensemble's composing models
    included; and ``/admin/usage/`` (+ ``usage.json``): API usage charts from the audit log.
    Like every admin page they need a staff login."""

    site_header = "OCR gateway administration"
    site_title = "OCR gateway admin"
    index_template = "admin/ocr_admin/index.html"

    def get_urls(self):
        return [
            path("triton/models/", self.admin_view(self.triton_models_view),
                 name="triton_models"),
            path("usage/", self.admin_view(self.usage_view), name="usage"),
            path("usage.json", self.admin_view(self.usage_json_view), name="usage_json"),
        ] + super().get_urls()

    def usage_view(self, request):
        """API usage charts: requests per day per key, error rate by code, p50/p95 latency."""
        return usage.usage_page(request, self.each_context(request))

    def usage_json_view(self, request):
        """The usage page's numbers as JSON (``?days=N``)."""
        return usage.usage_json(request)

    @staticmethod
    def control() -> ModelControl:
        return ModelControl(settings.TRITON_GRPC_URL)

    def triton_models_view(self, request):
        if request.method == "POST":
            action, name = request.POST.get("action"), request.POST.get("model", "")
            if not request.user.is_superuser:
                # Unloading a model stops the service: only superusers may, staff may look.
                messages.error(request, "Only superusers may load or unload models.")
            elif action not in MODEL_ACTIONS or not name:
                messages.error(request, "Choose a model and one of load, unload, reload.")
            else:
                try:
                    getattr(self.control(), action)(name)
                    messages.success(request, f"{action.capitalize()}ed {name}.")
                except ModelControlError as exc:
                    messages.error(request, f"{action.capitalize()} {name} failed: {exc}")
            return redirect("admin:triton_models")
        try:
            index, error = self.control().index(), ""
        except ModelControlError as exc:
            index, error = [], f"Triton at {settings.TRITON_GRPC_URL} is unreachable: {exc}"
        context = {**self.each_context(request), "title": "Triton model repository",
                   "models": index, "error": error, "actions": MODEL_ACTIONS,
                   "triton_url": settings.TRITON_GRPC_URL}
        return TemplateResponse(request, "admin/ocr_admin/triton_models.html", context)
