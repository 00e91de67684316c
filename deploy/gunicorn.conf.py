"""gunicorn settings for the gateway, all from the environment.

gthread workers: each request spends most of its time waiting on Triton's gRPC answer, so a
few processes with several threads each keep the CPU free for Triton on the same host.
Every variable is listed, with its default, in ``deploy/.env.example``; they are read with
:mod:`ocr_contract.settings`, which defines those the gateway reads too.
"""

import os

from ocr_contract.settings import HTTP_HOST, HTTP_PORT, TRITON_TIMEOUT_S, read_int

_inference_timeout_s = TRITON_TIMEOUT_S.read()

bind = f"{HTTP_HOST.read()}:{HTTP_PORT.read()}"
worker_class = "gthread"
workers = read_int("GUNICORN_WORKERS", 2)
# 8 threads: more than the requests admission lets wait on Triton at once (ocr_api.admission:
# about 8 photos on 2 cores), so a thread is free to refuse the next one at once; 4 made
# refusals wait up to TRITON_TIMEOUT_S for a thread (make soak SOAK_ARGS=--overload, 2 cores:
# slowest refusal 30.5 s with 4 threads, 0.55 s with 8).
threads = read_int("GUNICORN_THREADS", 8)

# A worker must outlive the slowest inference (TRITON_TIMEOUT_S), or gunicorn would kill it
# mid-request and the client would get a bare 502 instead of a 504 inference_timeout. A
# smaller GUNICORN_TIMEOUT is raised to that floor rather than trusted.
_timeout_floor = int(_inference_timeout_s) + 10
timeout = max(read_int("GUNICORN_TIMEOUT", int(_inference_timeout_s) + 30), _timeout_floor)
# On SIGTERM (docker stop, a Kubernetes rollout) workers stop accepting and finish the requests
# they hold; by default for as long as one inference may take. The orchestrator's grace period
# (compose stop_grace_period, terminationGracePeriodSeconds) must be longer than this.
graceful_timeout = read_int("GUNICORN_GRACEFUL_TIMEOUT", _timeout_floor)
# Idle keep-alive connections cost no thread (gthread polls them). Longer than the proxy in
# front keeps an idle connection to reuse (make serve and compose: 30 s,
# ocr_proxy.config.UPSTREAM_KEEPALIVE_S; ingress-nginx: upstream-keepalive-timeout, 60 s by
# default): gunicorn closing one just as the proxy sends a request on it would cost that
# request a 502, since a proxy never sends a POST again.
keepalive = read_int("GUNICORN_KEEPALIVE", 75)
# Recycle workers now and then so a slow leak cannot grow forever; the jitter keeps them from
# all restarting at once. 0 disables it.
max_requests = read_int("GUNICORN_MAX_REQUESTS", 0)
max_requests_jitter = read_int("GUNICORN_MAX_REQUESTS_JITTER", max_requests // 10)
# The workers' heartbeat files: on Docker's overlay filesystem a write can block for seconds
# and get a healthy worker killed; containers set this to /dev/shm (a tmpfs).
worker_tmp_dir = os.environ.get("GUNICORN_WORKER_TMP_DIR") or None

# Header limits above the proxy's (8 KiB per request line and header line, 32 KiB of headers:
# ocr_proxy.config.HEADER_BUFFER_BYTES), so the proxy refuses first, in the API's JSON shape;
# gunicorn's own refusals are HTML. The request line at gunicorn's maximum, 8190 bytes (the
# proxy's 8 KiB buffer less the CRLF), as many headers as gunicorn allows (32 KiB of headers
# holds thousands of short ones), and header lines twice the proxy's. The body cap
# (OCR_MAX_UPLOAD_BYTES) is enforced by the proxy and Django.
limit_request_line = 8190
limit_request_fields = 32768
limit_request_field_size = 16384
accesslog = os.environ.get("GUNICORN_ACCESS_LOG", "-")
errorlog = "-"
loglevel = os.environ.get("GUNICORN_LOG_LEVEL", "info")
# Proxies whose X-Forwarded-Proto/-For gunicorn believes (comma-separated, "*" for any).
forwarded_allow_ips = os.environ.get("GUNICORN_FORWARDED_ALLOW_IPS", "127.0.0.1")


def on_starting(server):
    """Start every run with an empty Prometheus multiprocess directory (stale worker files
    from an earlier run would be summed into the metrics)."""
    directory = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if directory:
        os.makedirs(directory, exist_ok=True)
        for name in os.listdir(directory):
            os.remove(os.path.join(directory, name))


#: The gateway's Prometheus metrics: served by the master on this address only, never on the
#: API's port, so no proxy or published port in front of the API can expose them. Loopback by
#: default (make serve); the image sets METRICS_HOST=0.0.0.0 for Prometheus to scrape the pod.
metrics_host = os.environ.get("METRICS_HOST", "127.0.0.1")
metrics_port = read_int("METRICS_PORT", 8004)


def when_ready(server):
    """Serve the workers' pooled metrics (``PROMETHEUS_MULTIPROC_DIR``) on ``metrics_host:
    metrics_port`` from a thread of the master, which outlives every worker.

    A busy port is logged, not fatal: the API matters more than its metrics.
    """
    directory = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if not directory:
        server.log.warning("PROMETHEUS_MULTIPROC_DIR is not set: gateway metrics not served")
        return
    from prometheus_client import CollectorRegistry, multiprocess, start_http_server

    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry, path=directory)
    try:
        start_http_server(metrics_port, metrics_host, registry=registry)
    except OSError as exc:
        server.log.error("gateway metrics not served on %s:%s: %s", metrics_host,
                         metrics_port, exc)
        return
    server.log.info("Gateway metrics at http://%s:%s/metrics", metrics_host, metrics_port)


def post_worker_init(worker):
    """Start the worker's document parser processes (:mod:`ocr_api.intake.isolation`) now,
    so its first upload does not wait the ~1 s their fork server takes to start. A failure is
    logged: the first upload then starts them itself."""
    try:
        from ocr_api.intake.documents import start_parsers

        start_parsers()
    except Exception as exc:  # noqa: BLE001 - never keep a worker from serving
        worker.log.warning("document parsers not started ahead: %s", exc)


def child_exit(server, worker):
    """A worker died or was recycled: drop its live gauges (ocr_requests_in_flight)."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)

# gunicorn's control socket defaults to one path per user (~/.gunicorn/gunicorn.ctl) that every
# gunicorn on the host would fight over; nothing here uses it.
control_socket_disable = True
