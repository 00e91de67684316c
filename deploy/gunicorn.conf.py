"""gunicorn settings for the gateway, all from the environment.

gthread workers: each request spends most of its time waiting on Triton's gRPC answer, so a
few processes with several threads each keep the CPU free for Triton on the same host.
"""

import os

bind = f"{os.environ.get('HTTP_HOST', '0.0.0.0')}:{os.environ.get('HTTP_PORT', '8000')}"
worker_class = "gthread"
workers = int(os.environ.get("GUNICORN_WORKERS", "2"))
threads = int(os.environ.get("GUNICORN_THREADS", "4"))
# A worker must outlive the slowest inference (TRITON_TIMEOUT_S), or gunicorn would kill it
# mid-request and the client would get a bare 502 instead of a 504 inference_timeout.
timeout = int(float(os.environ.get("TRITON_TIMEOUT_S", "30")) + 30)
graceful_timeout = int(os.environ.get("GUNICORN_GRACEFUL_TIMEOUT", "30"))
keepalive = int(os.environ.get("GUNICORN_KEEPALIVE", "5"))
# Requests larger than this never reach Django (OCR_MAX_UPLOAD_BYTES is checked there).
limit_request_field_size = 16384
accesslog = os.environ.get("GUNICORN_ACCESS_LOG", "-")
errorlog = "-"
loglevel = os.environ.get("GUNICORN_LOG_LEVEL", "info")
forwarded_allow_ips = os.environ.get("GUNICORN_FORWARDED_ALLOW_IPS", "127.0.0.1")
