"""The admin site: Django's, plus Triton's model repository and API usage pages (staff only)."""

from django.conf import settings
from django.contrib import admin, messages
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path
from ocr_api import detectors
from ocr_contract.tensors import BLS_CALLS
from ocr_inference.model_control import (FAILING, UNAVAILABLE, Consequence, ModelControl,
                                         ModelControlError, unload_consequences)

from . import model_changes, usage

MODEL_ACTIONS = ("load", "unload", "reload")


class OcrAdminSite(admin.AdminSite):
    """Django admin with ``/admin/triton/models/``: the repository index (model, version,
    state, reason), load / unload / reload buttons for superusers (an unload is confirmed
    first), and the history of those changes; and ``/admin/usage/`` (+ ``usage.json``): API
    usage charts from the audit log. Like every admin page they need a staff login."""

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
        """The repository index with load / unload / reload (superusers only; other staff see
        the index). Unloading asks for confirmation first, naming every model that stops
        working with it; every change is recorded (admin history and the log)."""
        may_change = request.user.is_superuser
        if request.method == "POST":
            action, name = request.POST.get("action"), request.POST.get("model", "")
            if not may_change:
                # Unloading a model stops the service: only superusers may, staff may look.
                messages.error(request, "Only superusers may load or unload models.")
            elif action not in MODEL_ACTIONS or not name:
                messages.error(request, "Choose a model and one of load, unload, reload.")
            elif action == "unload" and request.POST.get("confirm") != "yes":
                return self._confirm_unload(request, name)
            else:
                self._change_model(request, action, name)
            return redirect("admin:triton_models")
        try:
            index, error = self.control().index(), ""
        except ModelControlError as exc:
            index, error = [], f"Triton at {settings.TRITON_GRPC_URL} is unreachable: {exc}"
        context = {**self.each_context(request), "title": "Triton model repository",
                   "models": index, "error": error, "detector": detectors.choose(),
                   "actions": MODEL_ACTIONS if may_change else (),
                   "triton_url": settings.TRITON_GRPC_URL,
                   "history": model_changes.recent()}
        return TemplateResponse(request, "admin/ocr_admin/triton_models.html", context)

    def _consequences(self, name: str) -> list[Consequence]:
        """What else stops working when ``name`` is unloaded (ensemble steps from Triton, BLS
        calls from the contract)."""
        return unload_consequences(name, self.control().ensemble_steps(), BLS_CALLS)

    def _confirm_unload(self, request, name: str):
        """The confirmation page of an unload: what else stops, and what clients will see."""
        try:
            consequences, error = self._consequences(name), ""
        except ModelControlError as exc:
            consequences, error = [], f"Triton at {settings.TRITON_GRPC_URL}: {exc}"
        gateway_model = settings.TRITON_MODEL
        hit = {c.name: c for c in consequences}.get(gateway_model)
        context = {**self.each_context(request), "title": f"Unload {name}?", "model": name,
                   "consequences": consequences, "error": error,
                   "gateway_model": gateway_model,
                   "gateway_down": name == gateway_model or (hit and hit.state == UNAVAILABLE),
                   "gateway_failing": bool(hit and hit.state == FAILING)}
        return TemplateResponse(request, "admin/ocr_admin/triton_unload_confirm.html", context)

    def _change_model(self, request, action: str, name: str) -> None:
        """Load, unload or reload ``name``; say so, and record it with its consequences."""
        consequences = []
        try:
            if action == "unload":
                consequences = self._consequences(name)
            getattr(self.control(), action)(name)
        except ModelControlError as exc:
            model_changes.failed(request.user, action, name, exc)
            messages.error(request, f"{action.capitalize()} {name} failed: {exc}")
            return
        message = model_changes.record(request.user, action, name, consequences)
        messages.success(request, message)
