"""Settings for the OCR gateway, all from environment variables (12-factor).

The defaults are the embedded development setup (``make serve``): SQLite and a Triton on
localhost. Production sets at least ``DJANGO_SECRET_KEY``, ``DJANGO_ALLOWED_HOSTS``,
``DATABASE_URL`` and ``TRITON_GRPC_URL``; every variable is listed, with its default, in
``deploy/.env.example``.
"""

import datetime as dt
from pathlib import Path

import environ
from ocr_contract import limits
from ocr_contract import settings as shared_settings
from ocr_contract.parameters import DETECTOR, DETECTOR_AUTO
from ocr_contract.tensors import ENSEMBLE

BASE_DIR = Path(__file__).resolve().parent.parent
env = environ.Env()

#: Local state of the embedded setup: SQLite database, generated secret key, logs.
VAR_DIR = Path(env.str("OCR_VAR_DIR", default=str(BASE_DIR / "var")))

DEBUG = env.bool("DJANGO_DEBUG", default=False)


def _secret_key() -> str:
    """``DJANGO_SECRET_KEY``, or a random key generated once into ``var/secret_key``."""
    key = env.str("DJANGO_SECRET_KEY", default="")
    if key:
        return key
    from django.core.management.utils import get_random_secret_key

    path = VAR_DIR / "secret_key"
    if not path.exists():
        VAR_DIR.mkdir(parents=True, exist_ok=True)
        path.write_text(get_random_secret_key())
        path.chmod(0o600)
    return path.read_text().strip()


SECRET_KEY = _secret_key()
ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env.list("DJANGO_CSRF_TRUSTED_ORIGINS", default=[])

# --- CORS (django-cors-headers) -----------------------------------------------------------
#: Browser apps on these origins (``https://app.example.com``, comma-separated) may call the
#: API; none by default. Only /api/ answers CORS, never the admin; the key travels in the
#: Authorization header, not in cookies, so no credentials mode. Preflight requests (OPTIONS)
#: are answered by the middleware, without a key and without an audit row.
CORS_ALLOWED_ORIGINS = env.list("DJANGO_CORS_ALLOWED_ORIGINS", default=[])
CORS_URLS_REGEX = r"^/api/"
CORS_ALLOW_CREDENTIALS = False
#: What a browser app may read of an answer besides the simple headers.
CORS_EXPOSE_HEADERS = ["X-Request-ID", "Retry-After"]

# --- HTTPS hardening ----------------------------------------------------------------------
#: Production behind TLS: ``DJANGO_SECURE=true`` turns on HTTPS redirects, secure cookies and
#: HSTS (``manage.py check --deploy`` then reports nothing). Off for the plain-HTTP embedded
#: setup, where secure cookies would make the admin login impossible.
SECURE = env.bool("DJANGO_SECURE", default=False)
SECURE_SSL_REDIRECT = env.bool("DJANGO_SECURE_SSL_REDIRECT", default=SECURE)
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = SECURE
SECURE_HSTS_SECONDS = env.int("DJANGO_HSTS_SECONDS", default=31_536_000 if SECURE else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("DJANGO_HSTS_INCLUDE_SUBDOMAINS", default=SECURE)
SECURE_HSTS_PRELOAD = env.bool("DJANGO_HSTS_PRELOAD", default=SECURE)
# Health probes come over plain HTTP from the kubelet / Docker inside the cluster. (Metrics are
# not on this port at all: gunicorn's master serves them on METRICS_PORT.)
SECURE_REDIRECT_EXEMPT = [r"^api/health$", r"^api/ready$"]
if env.bool("DJANGO_BEHIND_TLS_PROXY", default=False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SESSION_COOKIE_HTTPONLY = True
X_FRAME_OPTIONS = "DENY"
#: Admin messages live in the session, never in a cookie: a new API key is shown once through
#: one, and the default (a signed, not encrypted, cookie first) would send it to the browser.
MESSAGE_STORAGE = "django.contrib.messages.storage.session.SessionStorage"

INSTALLED_APPS = [
    "ocr_admin.apps.OcrAdminSiteConfig",  # django.contrib.admin with the gateway's own pages
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "gateway.apps.GatewayStaticFilesConfig",  # django.contrib.staticfiles, no source maps
    "corsheaders",
    "rest_framework",
    "rest_framework_api_key",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "axes",
    "ocr_api",
    "ocr_admin",
    "ocr_ops",
    "ocr_jobs",
    "ocr_vision",
]

MIDDLEWARE = [
    "ocr_api.middleware.RequestIdMiddleware",
    # Before anything that may answer (a preflight is answered here, without a key).
    "corsheaders.middleware.CorsMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last (django-axes' rule): answers a locked-out sign-in with the lockout page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "gateway.urls"
WSGI_APPLICATION = "gateway.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {
    "default": env.db_url("DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'db.sqlite3'}"),
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Several gunicorn workers write audit rows and throttle counters: write-ahead logging lets
    # readers go on during a write and commits without a full fsync each time; IMMEDIATE
    # transactions wait for the write lock instead of failing with "database is locked".
    DATABASES["default"].setdefault("OPTIONS", {}).update({
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
    })
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# No cache setting: the throttling counters are rows of the database (ocr_api.throttling),
# changed atomically there, which a cache cannot promise (Django's database cache's incr is a
# read and a write).

# --- Admin sign-in guard (django-axes) -------------------------------------------------------
#: Sign-ins (the admin's, and the demo page's, which uses it) go through django-axes first: a
#: failed one is recorded (admin: Axes -> Access attempts, Access failures), and after
#: OCR_ADMIN_LOGIN_FAILURE_LIMIT failures for one user name, or from one client address, that
#: name or address is locked out for OCR_ADMIN_LOCKOUT_MINUTES (every further failure starts
#: the time again), right password or not: 429 and a page that says so. API keys never go
#: through it. Unlocking: deploy/README.md.
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend",
                           "django.contrib.auth.backends.ModelBackend"]
AXES_VERBOSE = False                       # no banner line in every manage.py command
AXES_FAILURE_LIMIT = env.int("OCR_ADMIN_LOGIN_FAILURE_LIMIT", default=5)
AXES_COOLOFF_TIME = dt.timedelta(minutes=env.int("OCR_ADMIN_LOCKOUT_MINUTES", default=15))
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]      # each on its own, not the pair
#: The client's address as the API sees it (X-Forwarded-For only from OCR_TRUSTED_PROXIES):
#: behind the proxy every sign-in would otherwise come from the proxy's address.
AXES_CLIENT_IP_CALLABLE = "ocr_api.audit.client_ip"
AXES_RESET_ON_SUCCESS = True               # a right password (not locked out) forgets failures
AXES_ENABLE_ACCESS_FAILURE_LOG = True      # one row per failure, with locked_out
AXES_LOCKOUT_CALLABLE = "ocr_admin.lockout.lockout_response"   # an admin page, 429

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(env.str("DJANGO_STATIC_ROOT", default=str(VAR_DIR / "static")))
# gunicorn serves the admin's and API docs' static files itself (WhiteNoise), no nginx needed.
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["ocr_api.authentication.ApiKeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["ocr_api.authentication.HasApiKey"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "ocr_api.formats.renderers.FormatNegotiation",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "ocr_api.error_handlers.exception_handler",
    "UNAUTHENTICATED_USER": None,
}

SPECTACULAR_SETTINGS = {
    "TITLE": "OCR gateway API",
    "DESCRIPTION": "Find and read the text in images: CRAFT + LinkRefiner detection, "
                   "PP-OCRv6 and Tesseract recognition, served by NVIDIA Triton.\n\n"
                   "Every error is JSON, `{\"error\": {\"code\", \"message\", "
                   "\"field\"?}, \"request_id\"}`, whatever format was asked; besides the "
                   "statuses each operation lists, a path not here answers 404 `not_found` "
                   "and a method an endpoint lacks 405 `method_not_allowed`.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SERVE_AUTHENTICATION": [],
    # Swagger UI assets are served from the sidecar package, not a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# --- Triton -------------------------------------------------------------------------------
#: The model repository served by the embedded Triton (and fetch_models' target).
TRITON_MODEL_REPOSITORY = Path(env.str("TRITON_MODEL_REPOSITORY",
                                       default=str(BASE_DIR / "triton_models" / "repository")))
#: gRPC target of Triton: ``host:port``, or ``dns:///triton-headless:8001`` for client-side
#: round-robin over several Triton pods.
TRITON_GRPC_URL = env.str("TRITON_GRPC_URL", default="localhost:8001")
#: The ensemble of the CRAFT pipeline; the DB pipeline's is ocr_contract.tensors.DB_ENSEMBLE.
TRITON_MODEL = env.str("TRITON_MODEL", default=ENSEMBLE)
#: The text detector of requests that name none (detector=auto): craft, db, or auto (chosen
#: here by measurement: ocr_api.detectors).
OCR_DETECTOR = env.str("OCR_DETECTOR", default=DETECTOR_AUTO)
if OCR_DETECTOR not in DETECTOR.choices:
    raise ValueError(f"OCR_DETECTOR must be one of {', '.join(DETECTOR.choices)}, "
                     f"not {OCR_DETECTOR!r}")
#: Triton's Prometheus endpoint; /api/models reports the cpu flavour's engines from it.
TRITON_METRICS_URL = env.str("TRITON_METRICS_URL", default="http://localhost:8003/metrics")
#: Deadline of one inference in seconds; past it the request answers 504 (gunicorn's worker
#: timeout and the proxy's read timeout follow it: one setting, in ocr_contract.settings).
TRITON_TIMEOUT_S = shared_settings.TRITON_TIMEOUT_S.read()
#: Send image bytes through system shared memory (gateway and Triton on the same host only).
TRITON_SHARED_MEMORY = env.bool("TRITON_SHARED_MEMORY", default=False)
#: Size of each shared-memory region; larger images go in the gRPC message.
TRITON_SHARED_MEMORY_BYTES = env.int("TRITON_SHARED_MEMORY_BYTES", default=8 * 1024 * 1024)
#: Seconds a client is told to wait (Retry-After) when Triton is unavailable.
TRITON_RETRY_AFTER_S = env.int("TRITON_RETRY_AFTER_S", default=5)

# --- Audit log ----------------------------------------------------------------------------
#: ``manage.py purge_audit_log`` deletes rows older than this many days.
OCR_AUDIT_RETENTION_DAYS = env.int("OCR_AUDIT_RETENTION_DAYS", default=90)

# --- OCR request limits -------------------------------------------------------------------
# Each limit (its variable, default and unit) is defined once, in ocr_contract.limits, and
# read the same way by Triton's preprocess model.
OCR_MAX_UPLOAD_BYTES = limits.MAX_UPLOAD_BYTES.read()
#: A batch is held in a worker's memory several times over while it is inferred.
OCR_BATCH_MAX_IMAGES = limits.BATCH_MAX_IMAGES.read()
OCR_BATCH_MAX_UPLOAD_BYTES = limits.BATCH_MAX_UPLOAD_BYTES.read()
OCR_MAX_PIXELS = limits.MAX_PIXELS.read()
OCR_MAX_PAGES = limits.MAX_PAGES.read()
TRITON_CONCURRENT_PAGES = limits.CONCURRENT_PAGES.read()
OCR_ADMISSION_PERCENT = limits.ADMISSION_PERCENT.read()
OCR_PARSER_PROCESSES = limits.PARSER_PROCESSES.read()
OCR_PARSER_TIMEOUT_MS = limits.PARSER_TIMEOUT_MS.read()
OCR_PARSER_MEMORY_BYTES = limits.PARSER_MEMORY_BYTES.read()
OCR_MIN_IMAGE_SIDE = limits.MIN_IMAGE_SIDE.read()
OCR_LONG_SIDE_MIN = limits.LONG_SIDE_MIN.read()
OCR_LONG_SIDE_MAX = limits.LONG_SIDE_MAX.read()

#: Reverse proxies whose X-Forwarded-For is believed (addresses or CIDR networks).
OCR_TRUSTED_PROXIES = env.list("OCR_TRUSTED_PROXIES", default=[])
#: Requests without a valid API key (none, unknown, revoked, expired) one client address may
#: send per minute; more answer 429 rate_limited, counted in the database (ocr_api.throttling).
OCR_UNAUTHENTICATED_RATE_PER_MINUTE = env.int("OCR_UNAUTHENTICATED_RATE_PER_MINUTE", default=60)

# --- Jobs (ocr_jobs): long documents read page by page by worker processes ---------------
#: The broker the pages go through (Redis with AOF, docs/jobs-broker.md).
OCR_BROKER_URL = env.str("OCR_BROKER_URL", default="redis://127.0.0.1:6379/0")
OCR_JOB_MAX_PAGES = limits.JOB_MAX_PAGES.read()
OCR_JOB_MAX_BYTES = limits.JOB_MAX_BYTES.read()
OCR_JOB_PAGE_TIMEOUT_S = limits.JOB_PAGE_TIMEOUT_S.read()
#: Seconds a finished job (its upload, pages and result) is kept; manage.py purge_jobs deletes
#: what is older.
OCR_JOB_RESULT_TTL = env.int("OCR_JOB_RESULT_TTL", default=24 * 3600)
#: Pages of one key in the broker at a time (fair order between keys, docs/jobs-broker.md).
OCR_JOB_WINDOW = env.int("OCR_JOB_WINDOW", default=4)
#: Threads of one job worker process (also its prefetch).
OCR_JOB_WORKER_THREADS = env.int("OCR_JOB_WORKER_THREADS", default=2)
#: Deliveries of one page (a crash, a retried Triton failure) before the page, and its job, fail.
OCR_JOB_PAGE_MAX_DELIVERIES = env.int("OCR_JOB_PAGE_MAX_DELIVERIES", default=4)
#: Seconds without a worker heartbeat before Redis gives a dead worker's pages to another.
OCR_JOB_HEARTBEAT_S = env.int("OCR_JOB_HEARTBEAT_S", default=15)
#: Where webhooks may go (ocr_jobs.webhooks.policy): production refuses private addresses and
#: plain http.
OCR_WEBHOOK_ALLOW_PRIVATE = env.bool("OCR_WEBHOOK_ALLOW_PRIVATE", default=False)
OCR_WEBHOOK_HTTP_HOSTS = env.list("OCR_WEBHOOK_HTTP_HOSTS", default=[])
OCR_WEBHOOK_CA_FILE = env.str("OCR_WEBHOOK_CA_FILE", default="")

# Uploads up to the cap stay in memory; Django refuses bigger bodies itself.
DATA_UPLOAD_MAX_MEMORY_SIZE = OCR_MAX_UPLOAD_BYTES + limits.MULTIPART_SLACK_BYTES
#: The largest body any endpoint takes (an upload limit plus multipart framing; a job's
#: document is the largest by default).
OCR_LARGEST_BODY_BYTES = (max(OCR_MAX_UPLOAD_BYTES, OCR_BATCH_MAX_UPLOAD_BYTES,
                              OCR_JOB_MAX_BYTES) + limits.MULTIPART_SLACK_BYTES)
#: The most gateway.unread_body reads and drops of a body the gateway refused unread: twice the
#: largest it takes, because a proxy in front may pass larger bodies on so that the gateway
#: answers their 413 itself (the Kubernetes Ingress lets 48 MiB through); make serve's and
#: compose's nginx pass none over OCR_LARGEST_BODY_BYTES.
OCR_UNREAD_BODY_MAX_BYTES = 2 * OCR_LARGEST_BODY_BYTES
FILE_UPLOAD_MAX_MEMORY_SIZE = DATA_UPLOAD_MAX_MEMORY_SIZE

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"request_id": {"()": "ocr_api.middleware.RequestIdLogFilter"}},
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s [%(request_id)s] %(name)s %(message)s"},
        # LOG_FORMAT=json: one JSON object per line, for log shippers.
        "json": {"()": "pythonjsonlogger.json.JsonFormatter",
                 "fmt": "%(asctime)s %(levelname)s %(name)s %(request_id)s %(message)s",
                 "rename_fields": {"asctime": "time", "levelname": "level",
                                   "name": "logger"}},
    },
    "handlers": {
        "console": {"class": "logging.StreamHandler",
                    "formatter": env.str("LOG_FORMAT", default="plain"),
                    "filters": ["request_id"]},
    },
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
    # The searchable PDF's library logs at INFO what it does to every file.
    "loggers": {"pikepdf": {"level": "WARNING"}},
}
