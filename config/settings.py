"""Floorboard settings. Everything comes from the environment; the defaults run a fresh clone on
SQLite, the filesystem and a filesystem Celery broker, with no external service."""

import re
from pathlib import Path
from urllib.parse import urlsplit

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from config.env import env_bool, env_float, env_int, env_list, env_map, env_retired, env_str

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("FLOORBOARD_VAR_DIR", str(BASE_DIR / "var")))

DEBUG = env_bool("DJANGO_DEBUG", False)
SECRET_KEY = env_str("DJANGO_SECRET_KEY")
if not SECRET_KEY:
    # Only a DEBUG process (`make demo`) may sign with a key everyone knows; anything else
    # (production, whatever its other settings say) refuses to start without its own.
    if not DEBUG:
        raise ImproperlyConfigured(
            "DJANGO_SECRET_KEY must be set when DJANGO_DEBUG is off; for local use only, "
            "set DJANGO_DEBUG=1 instead"
        )
    SECRET_KEY = "floorboard-local-development-only"
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["127.0.0.1", "localhost", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])

# --- HTTPS and browser protections ---------------------------------------------------------
# Production defaults (FLOORBOARD_PRODUCTION=1) pass `manage.py check --deploy`; each can be
# turned off from the environment, e.g. for a local Compose stack served over plain HTTP.
PRODUCTION = env_bool("FLOORBOARD_PRODUCTION", False)
# Production served over plain HTTP (a local Compose stack): no HTTPS redirect, no HSTS, cookies
# over HTTP. One switch for the defaults below; each can still be set on its own.
PLAIN_HTTP = env_bool("FLOORBOARD_PLAIN_HTTP", False)
_HTTPS = PRODUCTION and not PLAIN_HTTP
SECURE_HSTS_SECONDS = env_int("FLOORBOARD_HSTS_SECONDS", 365 * 24 * 3600 if _HTTPS else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("FLOORBOARD_HSTS_INCLUDE_SUBDOMAINS", _HTTPS)
SECURE_HSTS_PRELOAD = env_bool("FLOORBOARD_HSTS_PRELOAD", _HTTPS)
SECURE_SSL_REDIRECT = env_bool("FLOORBOARD_SSL_REDIRECT", _HTTPS)
SESSION_COOKIE_SECURE = env_bool("FLOORBOARD_SECURE_COOKIES", _HTTPS)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
# Trust the proxy's X-Forwarded-Proto (docker/nginx.conf ends TLS and sets it to the scheme it
# served; never enable it without a proxy that overwrites the header, or clients could claim
# HTTPS). The Host header is the client's, port included (nginx passes $http_host), so
# X-Forwarded-Host is never read (USE_X_FORWARDED_HOST stays off).
SECURE_PROXY_SSL_HEADER = (
    ("HTTP_X_FORWARDED_PROTO", "https")
    if env_bool("FLOORBOARD_TRUST_X_FORWARDED_PROTO", PRODUCTION)
    else None
)
USE_X_FORWARDED_HOST = False
USE_X_FORWARDED_PORT = False
INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "evaluation",
    "leaderboard",
    "leaderboard.accounts",
    "leaderboard.uploads",
    "annotation",
]
# Benchmark plug-ins: each package is a Django app exposing `plugin` (evaluation/benchmarks/base.py).
FLOORBOARD_BENCHMARKS = env_list("FLOORBOARD_BENCHMARKS", ["evaluation.benchmarks.mpbench", "evaluation.benchmarks.msibench", "evaluation.benchmarks.duplexmpe", "evaluation.benchmarks.audiomc"])  # fmt: skip
INSTALLED_APPS += [path for path in FLOORBOARD_BENCHMARKS if path not in INSTALLED_APPS]
# The development tools (config/devtools: the bench_* commands and soak) only where asked for:
# the Makefile's bench and soak targets set it, the image and compose never do.
DEV_TOOLS = env_bool("FLOORBOARD_DEV_TOOLS", False)
if DEV_TOOLS:
    INSTALLED_APPS += ["config.devtools"]

MIDDLEWARE = [
    # /healthz, answered before host validation and the HTTPS redirect (config/health.py).
    "config.health.HealthCheckMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "config.middleware.NulCharacterMiddleware",
    # Whole public pages for readers without a session, stored compressed: outside gzip.
    "leaderboard.response_cache.ReaderCacheMiddleware",
    # Pages, JSON and CSV go out gzip-compressed (static files are precompressed by whitenoise).
    "config.middleware.TextCompressionMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "config.middleware.ContentSecurityPolicyMiddleware",
    # Last: a view whose storage did not answer gets a 503 page, not a bare 500.
    "config.middleware.StorageUnavailableMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]

# --- Database -------------------------------------------------------------------------------
DATABASES = {
    "default": dj_database_url.parse(
        env_str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'floorboard.sqlite3'}"),
        conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 0),
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    # WAL and IMMEDIATE transactions let the web process and the demo worker write side by side.
    # synchronous=NORMAL: in WAL mode a commit is safe against corruption without an fsync each.
    DATABASES["default"]["OPTIONS"] = {
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "transaction_mode": "IMMEDIATE",
        "timeout": 30,
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Storage --------------------------------------------------------------------------------
MEDIA_ROOT = Path(env_str("FLOORBOARD_MEDIA_ROOT", str(VAR_DIR / "media")))
MEDIA_URL = "/media/"
STATIC_URL = "/static/"
STATIC_ROOT = VAR_DIR / "static"
STATICFILES_DIRS = [BASE_DIR / "static"]

AWS_STORAGE_BUCKET_NAME = env_str("AWS_STORAGE_BUCKET_NAME")
AWS_S3_ENDPOINT_URL = env_str("AWS_S3_ENDPOINT_URL")
# Presigned links are SigV4, which names the bucket's region.
AWS_S3_REGION_NAME = env_str("AWS_S3_REGION_NAME") or "us-east-1"
# The store's address as browsers reach it (presigned audio and upload parts go there), when the
# site reaches it under a private name (Compose's http://s3:9000). Empty: AWS_S3_ENDPOINT_URL.
S3_PUBLIC_ENDPOINT_URL = env_str("FLOORBOARD_S3_PUBLIC_ENDPOINT_URL") or AWS_S3_ENDPOINT_URL
for _name, _url in (
    ("AWS_S3_ENDPOINT_URL", AWS_S3_ENDPOINT_URL),
    ("FLOORBOARD_S3_PUBLIC_ENDPOINT_URL", S3_PUBLIC_ENDPOINT_URL),
):
    if _url and not re.fullmatch(r"https?://[^/\s?#]+/?", _url):
        raise ImproperlyConfigured(
            f"{_name}={_url!r} is not an http:// or https:// address without a path"
        )
# Every call to the bucket (config/storage.py): a connection is given up after the connect
# timeout, an answer that stops coming after the read timeout (seconds without a byte), and a
# call is tried this many times in all, with exponential back-off between tries. A store that
# hangs costs a page or a task at most about attempts x (connect + read) seconds.
STORAGE_CONNECT_TIMEOUT_SECONDS = env_float("FLOORBOARD_STORAGE_CONNECT_TIMEOUT_SECONDS", 2.0)
STORAGE_READ_TIMEOUT_SECONDS = env_float("FLOORBOARD_STORAGE_READ_TIMEOUT_SECONDS", 5.0)
STORAGE_MAX_ATTEMPTS = env_int("FLOORBOARD_STORAGE_MAX_ATTEMPTS", 3, minimum=1)
if AWS_STORAGE_BUCKET_NAME:
    default_storage = {
        "BACKEND": "config.storage.S3Storage",
        "OPTIONS": {
            "bucket_name": AWS_STORAGE_BUCKET_NAME,
            "endpoint_url": AWS_S3_ENDPOINT_URL or None,
            "public_endpoint_url": S3_PUBLIC_ENDPOINT_URL or None,
            "region_name": AWS_S3_REGION_NAME,
            "access_key": env_str("AWS_ACCESS_KEY_ID") or None,
            "secret_key": env_str("AWS_SECRET_ACCESS_KEY") or None,
            "default_acl": None,
            "querystring_auth": True,
            "querystring_expire": env_int("AWS_QUERYSTRING_EXPIRE", 300),
            "file_overwrite": True,
        },
    }
else:
    default_storage = {
        "BACKEND": "django.core.files.storage.FileSystemStorage",
        "OPTIONS": {"location": str(MEDIA_ROOT), "base_url": MEDIA_URL, "allow_overwrite": True},
    }
STORAGES = {
    "default": default_storage,
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}

# --- Content-Security-Policy ----------------------------------------------------------------
# Scripts only from this site (plotly.js included); inline styles for the timeline and plotly;
# audio and upload parts may go to the store browsers reach (the origin of
# FLOORBOARD_S3_PUBLIC_ENDPOINT_URL, http:// included when that is what it names; AWS's own
# hosts without an endpoint). In production only. FLOORBOARD_CONTENT_SECURITY_POLICY replaces it
# whole; "none": no header; empty (as Compose passes an unset variable): this default.
if not AWS_STORAGE_BUCKET_NAME:
    STORAGE_BROWSER_SOURCES = ""
elif S3_PUBLIC_ENDPOINT_URL:
    STORAGE_BROWSER_SOURCES = " " + S3_PUBLIC_ENDPOINT_URL.rstrip("/")
else:
    STORAGE_BROWSER_SOURCES = " https://*.amazonaws.com"
CONTENT_SECURITY_POLICY = env_str("FLOORBOARD_CONTENT_SECURITY_POLICY").strip() or (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    f"img-src 'self' data: blob:; media-src 'self' blob:{STORAGE_BROWSER_SOURCES}; "
    f"connect-src 'self'{STORAGE_BROWSER_SOURCES}; "
    "font-src 'self' data:; object-src 'none'; base-uri 'self'; form-action 'self'; "
    "frame-ancestors 'none'"
    if PRODUCTION
    else "none"
)
if CONTENT_SECURITY_POLICY.lower() == "none":
    CONTENT_SECURITY_POLICY = ""

# --- Celery ---------------------------------------------------------------------------------
# Loaded by config/celery.py with namespace="CELERY"; tests/config/test_celery.py checks them.
# The filesystem broker has no host; "localhost" is what kombu puts in when none is given, named
# here so that it does not warn about it on every connection ("No hostname was supplied").
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", "filesystem://localhost/")
if CELERY_BROKER_URL.startswith("filesystem://"):
    _broker_dir = VAR_DIR / "broker"
    for _folder in ("queue", "processed", "control", "quarantine"):
        (_broker_dir / _folder).mkdir(parents=True, exist_ok=True)
    # filesystem:// is served by config/broker.py (whole-message writes, a quarantine for files
    # that do not decode): kombu's own lets a consumer read a half-written message and stop.
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_broker_dir / "queue"),
        "data_folder_out": str(_broker_dir / "queue"),
        "processed_folder": str(_broker_dir / "processed"),
        "control_folder": str(_broker_dir / "control"),
        "quarantine_folder": str(_broker_dir / "quarantine"),
        "store_processed": False,
        # An idle worker looks for new messages this often (seconds): every stage of a
        # submission queues the next, so the default second would be paid at each step. At
        # 0.02 s a stage waits 10 ms for the next on average, and an idle worker spends about
        # half a percent of a core looking.
        "polling_interval": 0.02,
    }
else:
    # A task whose worker dies is redelivered after this many seconds (Redis broker).
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        # Longer than the hard time limit, so a live task is never handed to a second worker.
        # A dead worker's work does not wait for it: the sweeper re-queues it (see below).
        "visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 45 * 60),
        # How often a worker looks for such messages: interval x throttle seconds.
        "unacked_restore_interval": env_int("CELERY_UNACKED_RESTORE_INTERVAL", 10),
        "unacked_restore_throttle": env_int("CELERY_UNACKED_RESTORE_THROTTLE", 10),
    }
# One shared cache (throttle counters, chart data) when Redis is there; per process otherwise.
CACHE_URL = env_str(
    "FLOORBOARD_CACHE_URL",
    CELERY_BROKER_URL if CELERY_BROKER_URL.startswith(("redis://", "rediss://")) else "",
)
CACHES = {
    "default": (
        {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": CACHE_URL}
        if CACHE_URL
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
    ),
    # Whole responses for readers without a session and the boards' states
    # (leaderboard/response_cache.py, evaluation/board_state.py): shared by every web process,
    # so that one process's invalidation reaches the others at once. Redis when there is one;
    # on the embedded default, files under var/cache/responses.
    "responses": (
        {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": CACHE_URL,
            "KEY_PREFIX": "responses",
        }
        if CACHE_URL
        else {
            "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
            "LOCATION": str(VAR_DIR / "cache" / "responses"),
            "OPTIONS": {"MAX_ENTRIES": 5000},
        }
    ),
}
# Off: every response is computed (the figures of bench_load's "before" run).
RESPONSE_CACHE = env_bool("FLOORBOARD_RESPONSE_CACHE", True)
# A cached response is kept at most this long (it is replaced at once when its board changes).
RESPONSE_CACHE_SECONDS = env_int("FLOORBOARD_RESPONSE_CACHE_SECONDS", 600, minimum=1)
# A board's state is read from the database at most this often; the services that change a
# board say so at once, and anything else that changes its rows is seen within this long.
BOARD_STATE_SECONDS = env_int("FLOORBOARD_BOARD_STATE_SECONDS", 5, minimum=0)
# How long a proxy in front (docker/nginx.conf) may serve a stored public page without asking
# again (X-Accel-Expires): what it adds to the time a change takes to reach readers. 0: never.
PROXY_CACHE_SECONDS = env_int("FLOORBOARD_PROXY_CACHE_SECONDS", 2, minimum=0)
# Rows per page of GET /api/benchmarks/<slug>/leaderboard/ (rows=all: every row).
API_BOARD_PAGE_SIZE = env_int("FLOORBOARD_API_BOARD_PAGE_SIZE", 50, minimum=1)
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Pipeline messages are bounded (PIPELINE_WORK_SECONDS, then they queue their continuation);
# ingesting a large upload is the longest single piece of work.
CELERY_TASK_SOFT_TIME_LIMIT = env_int("CELERY_TASK_SOFT_TIME_LIMIT", 30 * 60)
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT", 35 * 60)
CELERY_TASK_DEFAULT_QUEUE = env_str("FLOORBOARD_QUEUE", "floorboard")
# Finishing a browser upload (validating it, answering the team whether it was accepted) has a
# queue of its own, so that a backlog of judging (a judge outage, a large re-score) does not
# keep it waiting. Every worker command consumes it as well (-Q: docker/compose.yaml, run_demo),
# and compose runs a worker for it alone; tests/config/test_celery.py checks both.
UPLOAD_QUEUE = env_str("FLOORBOARD_UPLOAD_QUEUE", f"{CELERY_TASK_DEFAULT_QUEUE}-uploads")
CELERY_TASK_ROUTES = {"leaderboard.uploads.tasks.finish_upload": {"queue": UPLOAD_QUEUE}}
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# What the beat service schedules.
CELERY_BEAT_SCHEDULE = {
    "sweep-stalled-submissions": {
        "task": "evaluation.tasks.sweep_stalled",
        "schedule": env_float("FLOORBOARD_SWEEP_SECONDS", 15.0),
    },
    "expire-abandoned-uploads": {
        "task": "leaderboard.uploads.tasks.expire_abandoned_uploads",
        "schedule": 24 * 3600,
    },
    "sweep-upload-temp-files": {
        "task": "leaderboard.uploads.tasks.sweep_upload_temp_files",
        "schedule": 3600,
    },
    "sweep-incomplete-multipart-uploads": {
        "task": "leaderboard.uploads.tasks.sweep_incomplete_multipart_uploads",
        "schedule": 3600,
    },
    "delete-pending-objects": {
        "task": "evaluation.tasks.delete_pending_objects",
        "schedule": env_float("FLOORBOARD_DELETION_RETRY_SECONDS", 300.0),
    },
    "sweep-unreferenced-objects": {
        "task": "evaluation.tasks.sweep_unreferenced_objects",
        "schedule": 24 * 3600,
    },
    "purge-failed-submission-files": {
        "task": "evaluation.tasks.purge_failed_files",
        "schedule": 3600,
    },
    "send-submission-notices": {
        "task": "leaderboard.accounts.tasks.send_submission_notices",
        "schedule": env_float("FLOORBOARD_NOTICE_SECONDS", 60.0),
    },
}

# --- Floorboard -----------------------------------------------------------------------------
# Bundle limits (issue: zip bombs and runaway uploads are rejected before anything is stored).
# Site-wide ceiling; each benchmark declares its own limit (a few GB for transcripts with audio,
# tens of GB for hours of output audio) and the smaller applies.
BUNDLE_MAX_UNCOMPRESSED_BYTES = env_int("FLOORBOARD_BUNDLE_MAX_UNCOMPRESSED_BYTES", 32 * 1024**3)
BUNDLE_MAX_COMPRESSION_RATIO = env_float("FLOORBOARD_BUNDLE_MAX_COMPRESSION_RATIO", 100.0)
# Zip entries an upload may hold at most, whatever its benchmark (each benchmark allows a number
# per task; the smaller applies). Read from the zip's end records before anything else.
BUNDLE_MAX_ENTRIES = env_int("FLOORBOARD_BUNDLE_MAX_ENTRIES", 200_000)
# A validation report keeps this many problems (and warnings) per file and per bundle; the rest
# are counted and shown as "and N more".
REPORT_MAX_PER_FILE = env_int("FLOORBOARD_REPORT_MAX_PER_FILE", 20)
REPORT_MAX_PROBLEMS = env_int("FLOORBOARD_REPORT_MAX_PROBLEMS", 500)

# LLM judges. OPENAI_BASE_URL / OPENAI_API_KEY follow the OpenAI SDK's conventions.
OPENAI_BASE_URL = env_str("OPENAI_BASE_URL", "https://api.openai.com/v1")
OPENAI_API_KEY = env_str("OPENAI_API_KEY")
OPENROUTER_API_KEY = env_str("OPENROUTER_API_KEY")
GEMINI_BASE_URL = env_str("GEMINI_BASE_URL", "https://generativelanguage.googleapis.com/v1beta")
GEMINI_API_KEY = env_str("GEMINI_API_KEY")
ANTHROPIC_BASE_URL = env_str("ANTHROPIC_BASE_URL", "https://api.anthropic.com/v1")
ANTHROPIC_API_KEY = env_str("ANTHROPIC_API_KEY")
_PROVIDER_KEYS = {
    "api.openai.com": "OPENAI_API_KEY",
    "openrouter.ai": "OPENROUTER_API_KEY",
    "generativelanguage.googleapis.com": "GEMINI_API_KEY",
    "api.anthropic.com": "ANTHROPIC_API_KEY",
}
_BASE_URL_KEYS = {
    (urlsplit(OPENAI_BASE_URL).hostname or ""): "OPENAI_API_KEY",
    (urlsplit(GEMINI_BASE_URL).hostname or ""): "GEMINI_API_KEY",
    (urlsplit(ANTHROPIC_BASE_URL).hostname or ""): "ANTHROPIC_API_KEY",
}
_BASE_URL_KEYS.pop("", None)
# The hosts a judge may call (its base URL's, or its provider's base URL above): staff cannot
# add a judge elsewhere, and a worker calls no judge elsewhere. ".example.com" allows its
# subdomains too. Default: the providers' hosts and those of the base URLs above.
JUDGE_HOSTS = [
    host.strip().lower()
    for host in env_list("FLOORBOARD_JUDGE_HOSTS", sorted({*_PROVIDER_KEYS, *_BASE_URL_KEYS}))
]
for _host in JUDGE_HOSTS:
    # A URL, or a host with a port (one colon: an IPv6 address has more), would never match.
    if re.search(r"[/@\s]", _host) or _host.count(":") == 1:
        raise ImproperlyConfigured(
            f"FLOORBOARD_JUDGE_HOSTS: {_host!r} is not a host name (write hosts alone, without "
            "scheme, port or path: api.openai.com, .example.com)"
        )
# Which API key a judge's calls carry, by the host they go to: host -> the environment variable
# holding the key. A key goes to the hosts named for it here and nowhere else (a host not named
# gets none). The providers' hosts get their own keys and the base URLs above their provider's;
# FLOORBOARD_JUDGE_API_KEYS ("host=VARIABLE,...") adds hosts or changes them ("host=": none).
JUDGE_API_KEY_BY_HOST = {
    **_PROVIDER_KEYS,
    **_BASE_URL_KEYS,
    **{
        host.lower(): variable
        for host, variable in env_map("FLOORBOARD_JUDGE_API_KEYS", {}).items()
    },
}
for _host, _variable in JUDGE_API_KEY_BY_HOST.items():
    if re.search(r"[/@\s]", _host) or _host.count(":") == 1:
        raise ImproperlyConfigured(
            f"FLOORBOARD_JUDGE_API_KEYS: {_host!r} is not a host name (write hosts alone, "
            "without scheme, port or path: judge.example.com=VARIABLE)"
        )
    if _variable and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", _variable):
        raise ImproperlyConfigured(
            f"FLOORBOARD_JUDGE_API_KEYS: {_host}={_variable!r} does not name an environment "
            "variable"
        )
# The keys themselves, by variable.
JUDGE_API_KEYS = {
    "OPENAI_API_KEY": OPENAI_API_KEY,
    "OPENROUTER_API_KEY": OPENROUTER_API_KEY,
    "GEMINI_API_KEY": GEMINI_API_KEY,
    "ANTHROPIC_API_KEY": ANTHROPIC_API_KEY,
}
JUDGE_API_KEYS |= {
    variable: env_str(variable)
    for variable in JUDGE_API_KEY_BY_HOST.values()
    if variable and variable not in JUDGE_API_KEYS
}
JUDGE_CONCURRENCY = env_int("FLOORBOARD_JUDGE_CONCURRENCY", 16)
JUDGE_TIMEOUT_SECONDS = env_float("FLOORBOARD_JUDGE_TIMEOUT_SECONDS", 120.0)
JUDGE_MAX_ATTEMPTS = env_int("FLOORBOARD_JUDGE_MAX_ATTEMPTS", 6)
JUDGE_BACKOFF_BASE_SECONDS = env_float("FLOORBOARD_JUDGE_BACKOFF_BASE_SECONDS", 1.0)
JUDGE_BACKOFF_MAX_SECONDS = env_float("FLOORBOARD_JUDGE_BACKOFF_MAX_SECONDS", 60.0)
# Work a worker holds (a judgment, a task in a processing step) is leased for this long and the
# lease is renewed every quarter of it while the worker lives; a dead worker's lapses.
JUDGE_LEASE_SECONDS = env_int("FLOORBOARD_LEASE_SECONDS", 20)
# The pipeline (evaluation/services/pipeline.py): a worker message works this long at most, then
# queues its continuation; a submission's work runs in this many messages at once; a submission
# no worker has touched for PIPELINE_STALL_SECONDS (a queued one: PIPELINE_QUEUED_STALL_SECONDS)
# is re-queued by the sweeper, which beat runs every FLOORBOARD_SWEEP_SECONDS.
PIPELINE_WORK_SECONDS = env_float("FLOORBOARD_WORK_SECONDS", 240.0)
PIPELINE_PARALLEL_TASKS = env_int("FLOORBOARD_PARALLEL_TASKS", 4)
PIPELINE_STALL_SECONDS = env_float("FLOORBOARD_STALL_SECONDS", 45.0)
PIPELINE_QUEUED_STALL_SECONDS = env_float("FLOORBOARD_QUEUED_STALL_SECONDS", 300.0)
# Workers write that they are alive this often (per queue they consume); one not seen for
# WORKER_SILENT_SECONDS counts as gone: pages, /healthz and `submit --wait` say so.
WORKER_BEAT_SECONDS = env_float("FLOORBOARD_WORKER_BEAT_SECONDS", 5.0)
WORKER_SILENT_SECONDS = env_float("FLOORBOARD_WORKER_SILENT_SECONDS", 60.0)
# /healthz writes, reads back and deletes a storage object at most this often (seconds); the
# requests in between are answered with that probe's outcome (config/health.py).
HEALTH_STORAGE_PROBE_SECONDS = env_float("FLOORBOARD_HEALTH_STORAGE_SECONDS", 60.0)
# /healthz waits this long for the storage probe (which runs beside the request, with these
# connect and read timeouts and no retry); one that has not answered by then counts as failing.
HEALTH_STORAGE_TIMEOUT_SECONDS = env_float("FLOORBOARD_HEALTH_STORAGE_TIMEOUT_SECONDS", 0.3)
# A score with failed judgments (a judge outage that outlasted the call's own retries) is
# re-judged after this pause, up to this many times, before its numbers count as final.
FAILED_RETRY_PAUSE_SECONDS = env_float("FLOORBOARD_FAILED_RETRY_PAUSE_SECONDS", 300.0)
FAILED_RETRY_ATTEMPTS = env_int("FLOORBOARD_FAILED_RETRY_ATTEMPTS", 3)

# Per-team limits (a team's own values override these). Failed submissions count against neither.
MAX_SUBMISSIONS_PER_DAY = env_int("FLOORBOARD_MAX_SUBMISSIONS_PER_DAY", 10)
MAX_CONCURRENT_EVALUATIONS = env_int("FLOORBOARD_MAX_CONCURRENT_EVALUATIONS", 2)
# The same limits per account, over all of its teams (a new team does not make more room).
MAX_SUBMISSIONS_PER_DAY_PER_ACCOUNT = env_int(
    "FLOORBOARD_MAX_SUBMISSIONS_PER_DAY_PER_ACCOUNT", MAX_SUBMISSIONS_PER_DAY
)
MAX_CONCURRENT_EVALUATIONS_PER_ACCOUNT = env_int(
    "FLOORBOARD_MAX_CONCURRENT_EVALUATIONS_PER_ACCOUNT", MAX_CONCURRENT_EVALUATIONS
)
# Storage: the bytes a team's (and an account's) submissions keep, failed ones included (each
# counts its bundle and everything the bundle unpacks to). A failed submission's files are
# deleted this many days after it failed. 0: no limit / never.
MAX_STORED_BYTES_PER_TEAM = env_int("FLOORBOARD_MAX_STORED_BYTES_PER_TEAM", 100 * 1024**3)
MAX_STORED_BYTES_PER_ACCOUNT = env_int(
    "FLOORBOARD_MAX_STORED_BYTES_PER_ACCOUNT", MAX_STORED_BYTES_PER_TEAM
)
FAILED_FILES_KEEP_DAYS = env_float("FLOORBOARD_FAILED_FILES_KEEP_DAYS", 7.0)
# Held-out results are shown to everyone but staff as their rank and, per metric, the band of this
# many points the value falls in (never the value or its counts); 0: the rank only.
HELD_OUT_BAND_POINTS = env_float("FLOORBOARD_HELD_OUT_BAND_POINTS", 10.0)
# Judge spending in USD per calendar month (UTC), priced with each judge's USD per million
# tokens: per team (a team's own value overrides it) and over the whole site. Judging whose
# estimate would pass a limit is held (evaluation/services/spending.py), and so is judging on
# a judge without a price while a limit applies. 0: no limit.
MAX_JUDGE_SPEND_PER_MONTH = env_float("FLOORBOARD_MAX_JUDGE_SPEND_PER_MONTH", 100.0)
MAX_JUDGE_SPEND_PER_MONTH_SITE = env_float("FLOORBOARD_MAX_JUDGE_SPEND_PER_MONTH_SITE", 1000.0)
# While judging runs, its charges are bounded: it stops once they pass its estimate by this many
# percent (or the room left under a limit), and is held with the figures.
JUDGE_SPEND_MARGIN_PERCENT = env_float("FLOORBOARD_JUDGE_SPEND_MARGIN_PERCENT", 100.0)
if JUDGE_SPEND_MARGIN_PERCENT < 0:
    raise ImproperlyConfigured(
        f"FLOORBOARD_JUDGE_SPEND_MARGIN_PERCENT={JUDGE_SPEND_MARGIN_PERCENT:g} is below 0"
    )
# Unfinished browser uploads per user, and the bytes they may announce together.
UPLOAD_MAX_OPEN_PER_USER = env_int("FLOORBOARD_UPLOAD_MAX_OPEN_PER_USER", 3)
UPLOAD_MAX_OPEN_BYTES_PER_USER = env_int("FLOORBOARD_UPLOAD_MAX_OPEN_BYTES_PER_USER", 8 * 1024**3)
# Uploaded files wait here while a request reads them; the beat sweeps what a killed request
# left behind once it is this old.
FILE_UPLOAD_TEMP_DIR = env_str("FLOORBOARD_UPLOAD_TEMP_DIR", str(VAR_DIR / "tmp"))
Path(FILE_UPLOAD_TEMP_DIR).mkdir(parents=True, exist_ok=True)
UPLOAD_TEMP_MAX_AGE_SECONDS = env_int("FLOORBOARD_UPLOAD_TEMP_MAX_AGE_SECONDS", 6 * 3600)
# Each web process sweeps the folder itself this often (its requests' files are in its own
# container), besides beat's hourly sweep where the workers run.
UPLOAD_TEMP_SWEEP_SECONDS = env_float("FLOORBOARD_UPLOAD_TEMP_SWEEP_SECONDS", 3600.0)
# Beat aborts incomplete multipart uploads begun this long ago, under every prefix of the
# bucket (what a store cut mid-put or mid-copy leaves), except open browser uploads'.
MULTIPART_ABORT_HOURS = env_float("FLOORBOARD_MULTIPART_ABORT_HOURS", 72.0)
# Beat deletes stored objects no row names (a store cut mid-delete, a request killed mid-store)
# once last written this long ago; younger ones may belong to a write not committed yet.
UNREFERENCED_MIN_AGE_HOURS = env_float("FLOORBOARD_UNREFERENCED_MIN_AGE_HOURS", 24.0)
# Sign-ups per client address and team creations per account and per address.
SIGNUPS_PER_ADDRESS_PER_HOUR = env_int("FLOORBOARD_SIGNUPS_PER_ADDRESS_PER_HOUR", 5)
TEAMS_PER_ACCOUNT_PER_DAY = env_int("FLOORBOARD_TEAMS_PER_ACCOUNT_PER_DAY", 3)
TEAMS_PER_ADDRESS_PER_DAY = env_int("FLOORBOARD_TEAMS_PER_ADDRESS_PER_DAY", 10)
# Logins: after this many failures for one account from one address, or from one address for
# any accounts, within the window, no password is checked for that account from that address
# (or from that address at all) until the window ends, not even the right one. An account is
# never locked everywhere: after LOGIN_ACCOUNT_BACKOFF_FAILURES failures from all addresses
# within LOGIN_ACCOUNT_BACKOFF_WINDOW_SECONDS, its password is checked at most once every
# LOGIN_ACCOUNT_BACKOFF_SECONDS, from anywhere, which slows guessing spread over many addresses.
LOGIN_MAX_FAILURES_PER_ACCOUNT_ADDRESS = env_int(
    "FLOORBOARD_LOGIN_MAX_FAILURES_PER_ACCOUNT_ADDRESS", 10, minimum=1
)
LOGIN_MAX_FAILURES_PER_ADDRESS = env_int("FLOORBOARD_LOGIN_MAX_FAILURES_PER_ADDRESS", 50, minimum=1)
LOGIN_FAILURE_WINDOW_SECONDS = env_int(
    "FLOORBOARD_LOGIN_FAILURE_WINDOW_SECONDS", 15 * 60, minimum=1
)
LOGIN_ACCOUNT_BACKOFF_FAILURES = env_int("FLOORBOARD_LOGIN_ACCOUNT_BACKOFF_FAILURES", 30, minimum=1)
LOGIN_ACCOUNT_BACKOFF_WINDOW_SECONDS = env_int(
    "FLOORBOARD_LOGIN_ACCOUNT_BACKOFF_WINDOW_SECONDS", 24 * 3600, minimum=1
)
LOGIN_ACCOUNT_BACKOFF_SECONDS = env_int("FLOORBOARD_LOGIN_ACCOUNT_BACKOFF_SECONDS", 60, minimum=1)
# The client's address: the connection's own, or, behind this many proxies that each append the
# address they were reached from to X-Forwarded-For, the entry the outermost of them appended
# (entries further left are whatever the client sent). The Compose stack's nginx, which ends TLS
# itself, is the one proxy (docker/compose.yaml sets 1); count each further proxy that appends.
# Too few and every client has a proxy's address; too many and a client can choose its own.
TRUSTED_PROXY_COUNT = env_int("FLOORBOARD_TRUSTED_PROXY_COUNT", 1 if PRODUCTION else 0, minimum=0)
env_retired(
    {
        "FLOORBOARD_TRUST_X_REAL_IP": "the client address comes from X-Forwarded-For, behind "
        "FLOORBOARD_TRUSTED_PROXY_COUNT proxies",
        "FLOORBOARD_LOGIN_MAX_FAILURES_PER_ACCOUNT": "failed logins lock an account per "
        "address (FLOORBOARD_LOGIN_MAX_FAILURES_PER_ACCOUNT_ADDRESS) and slow it down "
        "everywhere (FLOORBOARD_LOGIN_ACCOUNT_BACKOFF_FAILURES)",
    }
)
# Raters are reminded to take a break after this many minutes of work in one batch.
RATER_BREAK_MINUTES = env_float("FLOORBOARD_RATER_BREAK_MINUTES", 20.0)
# Private audio and files are reached only through signed URLs that expire this soon.
SIGNED_URL_SECONDS = env_int("FLOORBOARD_SIGNED_URL_SECONDS", 300)
# A page left open asks for fresh audio URLs with its expired ones, up to this long after it
# was rendered (the viewer and the submission's visibility are checked again).
SIGNED_URL_RENEW_SECONDS = env_int("FLOORBOARD_SIGNED_URL_RENEW_SECONDS", 7 * 24 * 3600)
# Browser uploads on the filesystem default arrive in chunks of this size.
UPLOAD_CHUNK_BYTES = env_int("FLOORBOARD_UPLOAD_CHUNK_BYTES", 8 * 1024 * 1024)
# A finish still validating after this long died with its process: it may be retried or cancelled.
UPLOAD_VALIDATING_STALE_SECONDS = env_int("FLOORBOARD_UPLOAD_VALIDATING_STALE_SECONDS", 15 * 60)

# --- E-mail ---------------------------------------------------------------------------------
# Verification links, password resets and submission notices. The demo (DEBUG) prints them on
# the console; production sends through the SMTP server the environment names.
EMAIL_BACKEND = env_str(
    "DJANGO_EMAIL_BACKEND",
    "django.core.mail.backends.console.EmailBackend"
    if DEBUG
    else "django.core.mail.backends.smtp.EmailBackend",
)
EMAIL_HOST = env_str("DJANGO_EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("DJANGO_EMAIL_PORT", 587)
EMAIL_HOST_USER = env_str("DJANGO_EMAIL_HOST_USER")
EMAIL_HOST_PASSWORD = env_str("DJANGO_EMAIL_HOST_PASSWORD")
EMAIL_USE_TLS = env_bool("DJANGO_EMAIL_USE_TLS", True)
EMAIL_USE_SSL = env_bool("DJANGO_EMAIL_USE_SSL", False)
EMAIL_TIMEOUT = env_int("DJANGO_EMAIL_TIMEOUT", 30)
DEFAULT_FROM_EMAIL = env_str("DJANGO_DEFAULT_FROM_EMAIL", "Floorboard <floorboard@localhost>")
# The site's address for links in mail sent without a request at hand (beat's notices).
FLOORBOARD_SITE_URL = env_str("FLOORBOARD_SITE_URL", "http://127.0.0.1:8000")
# A notice goes out when a submission has shown no sign of a worker this long; submissions
# older than NOTICE_LOOKBACK_DAYS are not looked at.
NOTICE_STALL_SECONDS = env_int("FLOORBOARD_NOTICE_STALL_SECONDS", 30 * 60)
NOTICE_LOOKBACK_DAYS = env_int("FLOORBOARD_NOTICE_LOOKBACK_DAYS", 14)
PASSWORD_RESET_TIMEOUT = env_int("DJANGO_PASSWORD_RESET_TIMEOUT", 3 * 24 * 3600)
# Links people ask for (address verification, password reset), per hour: about one account, from
# one client address, and to one e-mail address. Past a limit nothing is sent and the page says
# which limit and when to try again.
EMAILS_PER_ACCOUNT_PER_HOUR = env_int("FLOORBOARD_EMAILS_PER_ACCOUNT_PER_HOUR", 5, minimum=1)
EMAILS_PER_ADDRESS_PER_HOUR = env_int("FLOORBOARD_EMAILS_PER_ADDRESS_PER_HOUR", 20, minimum=1)
EMAILS_PER_RECIPIENT_PER_HOUR = env_int("FLOORBOARD_EMAILS_PER_RECIPIENT_PER_HOUR", 3, minimum=1)

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
    # Not a rule: told of every password change, it revokes the account's API tokens.
    {"NAME": "leaderboard.accounts.passwords.RevokeApiTokensOnPasswordChange"},
]

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/"

REST_FRAMEWORK = {
    "DEFAULT_RENDERER_CLASSES": [
        "rest_framework.renderers.JSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
    "DEFAULT_PARSER_CLASSES": [
        "leaderboard.api.parsers.BoundedJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "leaderboard.accounts.authentication.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.AllowAny"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_THROTTLE_CLASSES": [
        "rest_framework.throttling.AnonRateThrottle",
        "rest_framework.throttling.UserRateThrottle",
    ],
    # The API's rate limits count per client address the same way (accounts/throttle.py).
    "NUM_PROXIES": TRUSTED_PROXY_COUNT,
    "DEFAULT_THROTTLE_RATES": {
        "anon": env_str("FLOORBOARD_THROTTLE_ANON", "600/minute"),
        "user": env_str("FLOORBOARD_THROTTLE_USER", "3000/minute"),
    },
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Floorboard API",
    "DESCRIPTION": "Leaderboards, submissions, judges and judgments for spoken-conversation benchmarks.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
}

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("FLOORBOARD_LOG_LEVEL", "WARNING")},
}
