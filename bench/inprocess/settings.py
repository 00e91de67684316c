"""Django settings of the in-process baseline (benchmark only).

No database, no sessions, no auth, no middleware: the view answers from the model alone,
which is the cheapest possible Django around it (the gateway's authentication and audit are
not repeated here, so the comparison favours this baseline).
"""

import os

SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "bench-inprocess-not-secret")
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost", "[::1]"]
ROOT_URLCONF = "bench.inprocess.urls"
WSGI_APPLICATION = "bench.inprocess.wsgi.application"
INSTALLED_APPS: list[str] = []
MIDDLEWARE: list[str] = []
DATABASES: dict = {}
USE_TZ = True
# Same upload caps as the gateway (20 MiB + multipart slack), kept in memory.
DATA_UPLOAD_MAX_MEMORY_SIZE = 20 * 1024 * 1024 + 64 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = DATA_UPLOAD_MAX_MEMORY_SIZE
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "WARNING")},
}
