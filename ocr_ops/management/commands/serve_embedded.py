"""``python manage.py serve_embedded``: embedded Triton + gunicorn, the ``make serve`` target.

Starts :class:`~ocr_embedded.stack.Stack` with the gateway's own settings: the embedded Triton
on the project's model repository (restarted whenever it dies:
:class:`~ocr_embedded.supervisor.TritonSupervisor`), gunicorn (``deploy/gunicorn.conf.py``) on a
loopback port once ``ensemble_ocr`` is ready, and the buffering proxy in front
(:class:`~ocr_embedded.proxy.BufferingProxy`, nginx) that clients reach on ``--port``, and the
jobs' broker (``redis-server``, its append-only file in ``var/redis``) and one job worker
process (2 threads; log ``var/log/job-workers.log``) for ``POST /api/jobs``; then
prints where everything is (:mod:`ocr_ops.demo`): the demo page, the demo API key (one key,
reused until it expires) with a ready-to-paste curl command, the API docs and the admin. Ctrl-C
(or SIGTERM) stops the proxy and gunicorn, the job workers and the broker, then Triton.
"""

import os
import signal
import socket
import time

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from ocr_contract.settings import HTTP_HOST, HTTP_PORT
from ocr_embedded.stack import (START_ERRORS, TRITON_GRPC_PORT, TRITON_HTTP_PORT,
                                TRITON_METRICS_PORT, Stack, engine_cache_dir)
from ocr_api import detectors
from ocr_ops import demo


#: How long Triton may take to get its models ready, seconds (a restart with the engine cache
#: takes about a minute on 2 cores).
FIRST_START_TIMEOUT_S = 1800.0


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
        parser.add_argument("--port", type=int, default=HTTP_PORT.read(),
                            help=f"gateway HTTP port (default: ${HTTP_PORT.name} or "
                                 f"{HTTP_PORT.default})")
        parser.add_argument("--triton-grpc-port", type=int, default=TRITON_GRPC_PORT.read())
        parser.add_argument("--triton-http-port", type=int, default=TRITON_HTTP_PORT.read())
        parser.add_argument("--triton-metrics-port", type=int,
                            default=TRITON_METRICS_PORT.read())

    def handle(self, *args, port, triton_grpc_port, triton_http_port, triton_metrics_port,
               **options):
        # Compiled OpenVINO models and precision decisions are cached so that restarts reuse them.
        cache_dir = engine_cache_dir(settings.VAR_DIR)
        stack = Stack(
            logs=settings.VAR_DIR / "log", repository=settings.TRITON_MODEL_REPOSITORY,
            supervised=True, triton_ports=(triton_grpc_port, triton_http_port,
                                           triton_metrics_port),
            engine_cache=cache_dir, var_dir=settings.VAR_DIR, gunicorn_log=False,
            # A first start times every network's precisions: on 2 busy cores (CI building
            # images beside it) that passed 10 minutes once.
            triton_start_timeout_s=FIRST_START_TIMEOUT_S,
            listen_host=HTTP_HOST.read(), listen_port=port, jobs=True,
            # gunicorn's start-up lines ("Listening at: http://127.0.0.1:<port>") name its
            # port behind the proxy, not the one to use; the banner names that.
            gateway_env={"GUNICORN_LOG_LEVEL": os.environ.get("GUNICORN_LOG_LEVEL",
                                                              "warning")})
        busy = [f"{name} {number}" for name, number in (
            (HTTP_PORT.name, port), (TRITON_GRPC_PORT.name, triton_grpc_port),
            (TRITON_HTTP_PORT.name, triton_http_port),
            (TRITON_METRICS_PORT.name, triton_metrics_port))
            if not _port_is_free(number)]
        if busy:
            raise CommandError(f"port in use: {', '.join(busy)}. Stop what uses it, or choose "
                               f"other ports with these environment variables.")
        # Both stop cleanly; SIGINT explicitly too, since a shell that starts a command in the
        # background leaves SIGINT ignored for it.
        signal.signal(signal.SIGTERM, _interrupt)
        signal.signal(signal.SIGINT, _interrupt)
        triton = stack.embedded_triton
        self.stdout.write(f"Starting Triton (gRPC :{triton.grpc_port}, HTTP :{triton.http_port}, "
                          f"metrics :{triton.metrics_port}); log: {triton.log_path}")
        # Minutes of silence otherwise, on a first start: say why.
        self.stdout.write("  the first start compiles the networks and times their precisions on "
                          "this CPU (a few minutes); later starts reuse "
                          f"{cache_dir}")
        try:
            started = time.monotonic()
            try:
                stack.start_triton()
                self.stdout.write(f"Triton ready in {time.monotonic() - started:.0f} s")
                stack.start_gateway(timeout_s=60)
                stack.start_proxy()
            except START_ERRORS as exc:
                raise CommandError(str(exc)) from exc
            key, row = demo.demo_key(settings.VAR_DIR / "demo_api_key")
            has_admin = get_user_model().objects.filter(is_staff=True, is_active=True).exists()
            self.stdout.write(self.style.SUCCESS(f"\nGateway ready on http://localhost:{port}"))
            self.stdout.write(demo.banner(f"http://localhost:{port}", key, row.expiry_date,
                                          has_admin, detectors.choose(triton.metrics_url)))
            self.stdout.flush()
            if stack.gunicorn.process.wait() != 0:
                raise CommandError(f"gunicorn exited with code "
                                   f"{stack.gunicorn.process.returncode}")
        except KeyboardInterrupt:
            self.stdout.write("\nStopping...")
        finally:
            stack.stop()
            self.stdout.write("Stopped gunicorn, the job workers, the broker and Triton.")
