"""``python manage.py triton_models [list|load|unload|reload] [MODEL]``: Triton model control."""

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from ocr_inference.model_control import ModelControl, ModelControlError


class Command(BaseCommand):
    help = ("Show Triton's model repository index, or load / unload / reload a model "
            "(explicit model-control mode; an ensemble's composing models come along).")

    def add_arguments(self, parser):
        parser.add_argument("action", nargs="?", default="list",
                            choices=["list", "load", "unload", "reload"])
        parser.add_argument("model", nargs="?")
        parser.add_argument("--url", default=settings.TRITON_GRPC_URL, help="Triton gRPC target")

    def handle(self, *args, action, model, url, **options):
        control = ModelControl(url)
        try:
            if action != "list":
                if not model:
                    raise CommandError(f"{action} needs a model name")
                getattr(control, action)(model)
                self.stdout.write(f"{action}: {model}: done")
            rows = [("MODEL", "VERSION", "STATE", "REASON")] + [
                (m.name, m.version or "-", m.state or "not loaded", m.reason)
                for m in control.index()]
        except ModelControlError as exc:
            raise CommandError(f"Triton at {url}: {exc}") from exc
        widths = [max(len(row[i]) for row in rows) for i in range(3)]
        for row in rows:
            self.stdout.write("  ".join(cell.ljust(w) for cell, w in zip(row, widths))
                              + "  " + row[3])
