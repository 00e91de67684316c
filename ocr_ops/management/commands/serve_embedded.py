"""``python manage.py serve_embedded``: embedded Triton + gunicorn, the ``make serve`` target.

Starts the embedded Triton on the project's model repository (restarted whenever it dies:
:class:`~ocr_embedded.supervisor.TritonSupervisor`), waits for ``ensemble_ocr``, starts
gunicorn (``deploy/gunicorn.conf.py``) on a loopback port behind the buffering proxy
(:class:`~ocr_embedded.proxy.BufferingProxy`, nginx) that clients reach on ``--port``, and
prints where everything is (:mod:`ocr_ops.demo`): the demo page, the demo API key (one key,
reused until it expires) with a ready-to-paste curl command, the API docs and the admin. Ctrl-C (or SIGTERM) stops the
proxy and gunicorn, then Triton.
"""

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from ocr_embedded.launcher import EmbeddedTriton, TritonStartError, free_port
from ocr_embedded.proxy import BufferingProxy, ProxyStartError
from ocr_embedded.supervisor import TritonSupervisor
from ocr_ops import demo


def _port_is_free(port: int) -> bool:
    """Nothing listens on ``port`` (any interface) right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("0.0.0.0", port))
        except OSError:
            return False
    return True


def _interrupt(signum, frame):
    """SIGINT / SIGTERM handler: unwind into the clean stop of :meth:`Command.handle`."""
    raise KeyboardInterrupt


class Command(BaseCommand):
    help = "Serve the gateway with an embedded Triton (development and single-host default)."

    def add_arguments(self, parser):
        parser.add_argument("--port", type=int, default=int(os.environ.get("HTTP_PORT", 8000)),
                            help="gateway HTTP port (default: $HTTP_PORT or 8000)")
        parser.add_argument("--triton-grpc-port", type=int,
                            default=int(os.environ.get("TRITON_GRPC_PORT", 8001)))
        parser.add_argument("--triton-http-port", type=int,
                            default=int(os.environ.get("TRITON_HTTP_PORT", 8002)))
        parser.add_argument("--triton-metrics-port", type=int,
                            default=int(os.environ.get("TRITON_METRICS_PORT", 8003)))

    def handle(self, *args, port, triton_grpc_port, triton_http_port, triton_metrics_port,
               **options):
        log_path = settings.VAR_DIR / "log" / "triton.log"
        # Compiled OpenVINO models and precision decisions are cached so that restarts reuse them.
        cache_dir = os.environ.get("OCR_ENGINE_CACHE_DIR",
                                   str(settings.VAR_DIR / "cache" / "openvino"))
        triton = EmbeddedTriton(
            repository=settings.TRITON_MODEL_REPOSITORY, log_path=log_path,
            grpc_port=triton_grpc_port, http_port=triton_http_port,
            metrics_port=triton_metrics_port,
            cache_bytes=int(os.environ.get("TRITON_CACHE_BYTES", 256 * 1024 * 1024)),
            env={"OCR_ENGINE_CACHE_DIR": cache_dir})
        busy = [f"{name} {number}" for name, number in (
            ("HTTP_PORT", port), ("TRITON_GRPC_PORT", triton_grpc_port),
            ("TRITON_HTTP_PORT", triton_http_port), ("TRITON_METRICS_PORT", triton_metrics_port))
            if not _port_is_free(number)]
        if busy:
            raise CommandError(f"port in use: {', '.join(busy)}. Stop what uses it, or choose "
                               f"other ports with these environment variables.")
        # Both stop cleanly; SIGINT explicitly too, since a shell that starts a command in the
        # background leaves SIGINT ignored for it.
        signal.signal(signal.SIGTERM, _interrupt)
        signal.signal(signal.SIGINT, _interrupt)
        self.stdout.write(f"Starting Triton (gRPC :{triton.grpc_port}, HTTP :{triton.http_port}, "
                          f"metrics :{triton.metrics_port}); log: {log_path}")
        # Minutes of silence otherwise, on a first start: say why.
        self.stdout.write("  the first start compiles the networks and times their precisions on "
                          "this CPU (a few minutes); later starts reuse "
                          f"{cache_dir}")
        supervisor = TritonSupervisor(triton)
        # Clients reach nginx on `port`; gunicorn listens on loopback only, behind it.
        upstream_port = free_port()
        proxy = BufferingProxy(os.environ.get("HTTP_HOST", "0.0.0.0"), port,
                               f"127.0.0.1:{upstream_port}", settings.VAR_DIR / "log" / "proxy.log")
        gunicorn = None
        try:
            started = time.monotonic()
            try:
                supervisor.start(timeout_s=600)
                proxy.start()
            except (TritonStartError, ProxyStartError) as exc:
                raise CommandError(str(exc)) from exc
            self.stdout.write(f"Triton ready in {time.monotonic() - started:.0f} s")
            # Workers are processes: they share Prometheus metrics through this directory.
            env = dict(os.environ, HTTP_HOST="127.0.0.1", HTTP_PORT=str(upstream_port),
                       TRITON_GRPC_URL=triton.grpc_url, TRITON_METRICS_URL=triton.metrics_url,
                       PROMETHEUS_MULTIPROC_DIR=str(settings.VAR_DIR / "prometheus"),
                       OCR_TRUSTED_PROXIES=",".join([*settings.OCR_TRUSTED_PROXIES, "127.0.0.1"]))
            # A session of its own: Ctrl-C reaches this command only, which then stops gunicorn
            # with one SIGTERM (gthread workers that get both SIGINT and the master's SIGQUIT
            # can hang on shutdown).
            gunicorn = subprocess.Popen(
                [sys.executable, "-m", "gunicorn", "-c",
                 str(settings.BASE_DIR / "deploy" / "gunicorn.conf.py"), "gateway.wsgi"],
                cwd=settings.BASE_DIR, env=env, start_new_session=True)
            self._wait_http(f"http://127.0.0.1:{port}/api/health", gunicorn)
            key, row = demo.demo_key(settings.VAR_DIR / "demo_api_key")
            has_admin = get_user_model().objects.filter(is_staff=True, is_active=True).exists()
            self.stdout.write(self.style.SUCCESS(f"\nGateway ready on http://localhost:{port}"))
            self.stdout.write(demo.banner(f"http://localhost:{port}", key, row.expiry_date,
                                          has_admin))
            self.stdout.flush()
            if gunicorn.wait() != 0:
                raise CommandError(f"gunicorn exited with code {gunicorn.returncode}")
        except KeyboardInterrupt:
            self.stdout.write("\nStopping...")
        finally:
            proxy.stop()
            if gunicorn is not None and gunicorn.poll() is None:
                gunicorn.send_signal(signal.SIGTERM)
                try:
                    gunicorn.wait(timeout=40)
                except subprocess.TimeoutExpired:
                    gunicorn.kill()
            supervisor.stop()
            self.stdout.write("Stopped gunicorn and Triton.")

    @staticmethod
    def _wait_http(url: str, process: subprocess.Popen, timeout_s: float = 60) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise CommandError(f"gunicorn exited with code {process.returncode}")
            try:
                with urllib.request.urlopen(url, timeout=2):
                    return
            except OSError:
                time.sleep(0.3)
        raise CommandError(f"gunicorn did not answer {url} within {timeout_s:.0f} s")
