"""Django settings for Netloom: everything that varies between machines is read from the environment here.

Environment (all optional on a developer machine):
    DEBUG                     1 (default) on a checkout; 0 in production (then SECRET_KEY and ALLOWED_HOSTS are required)
    SECRET_KEY                long random string; a fixed development key is used only when DEBUG is on
    ALLOWED_HOSTS             comma-separated host names
    CSRF_TRUSTED_ORIGINS      comma-separated origins, e.g. https://netloom.example.org
    DATABASE_URL              postgres://user:pass@host:5432/name; default SQLite file var/netloom.sqlite3
    NETLOOM_PG_PREPARE        0 (default); 1: psycopg binds parameters on the server and prepares a
                              statement it has run a few times (Django's server_side_binding and
                              psycopg's prepare_threshold). Not behind a pooler in transaction mode
                              that does not track prepared statements (docs/deploy.md)
    NETLOOM_CACHE             "redis" (default: Django's cache on REDIS_URL, shared by every web
                              process, under NETLOOM_INSTANCE's prefix) or "memory" (one process)
    REDIS_URL                 default redis://127.0.0.1:6379/0 (Celery broker and channel layer)
    NETLOOM_CHANNEL_LAYER     "redis-pubsub" (default: one Redis message per server process per group
                              message, the fan-out of many watchers, docs/benchmarks.md), "redis"
                              (channels_redis's list layer: one Redis entry per member) or "memory"
                              (tests: it reaches only its own process, and behind the front the HTTP
                              views and the streams are separate processes, so a stream learns what a
                              view changed from its poller)
    NETLOOM_INSTANCE          this instance's key prefix in Redis (Celery queues "<it>:train", channel-layer
                              groups "<it>:asgi..."), so instances sharing one Redis never see each other's
                              tasks or groups; default "netloom" (`make run` picks one per checkout)
    MEDIA_ROOT                where datasets and run artefacts are stored; default var/media
    NETLOOM_MAX_UPLOAD_BYTES  largest accepted dataset upload; default 200 MiB
    NETLOOM_IMAGE             the image a version's KServe InferenceService runs (and compose builds); default netloom:latest
    NETLOOM_MEDIA_CLAIM       the PersistentVolumeClaim holding MEDIA_ROOT on a Kubernetes cluster, named by
                              a version's KServe manifest (storage pvc://<it>/registry/...); default netloom-media
    NETLOOM_RUNNER            where runs train: "celery" (default: the training workers claim them, the fair
                              order) or "kubernetes" (each run is a Kubernetes Job that the worker on the
                              "kubernetes" queue creates, watches and deletes; Kueue queues it: docs/deploy.md)
    NETLOOM_K8S_NAMESPACE     the namespace the runner creates its Jobs in; default netloom
    NETLOOM_K8S_API_URL       the Kubernetes API the runner talks to; default none: the pod's service account
                              (in-cluster), else the kubeconfig (KUBECONFIG, ~/.kube/config)
    NETLOOM_K8S_RUN_POD       JSON for every run pod: {"cpu": "4", "memory": "16Gi", "nodeSelector": {...},
                              "tolerations": [...], "gpuNodeSelector": {...}} (requests = limits; GPUs are the
                              run's processes per node when its device is cuda); default {}
    SERVING_PORT              the model server's port (`python -m serving`; `make run` starts it there and the
                              front sends /v2/ to it); default 8090
    SERVING_DEFAULT_ALIAS     the alias `/v2/models/<served>/infer` answers with (a model's `endpoint`); default
                              production
    NETLOOM_MAX_WEIGHTS_BYTES largest weights file imported as a first checkpoint; default the upload limit
    NETLOOM_DISK_MARGIN_BYTES space a large write leaves free on MEDIA_ROOT's volume (an upload that would
                              leave less is refused with 507); below it /healthz says "disk": "low";
                              default 100 MiB (webapp/disk.py)
    NETLOOM_UPLOAD_STALE_SECONDS an upload's file not written to for this long is a leftover (a killed
                              server, a lost client) and is removed at server start and by the reaper;
                              default 600
    NETLOOM_MAX_ARCHIVE_ENTRIES   most entries in an uploaded image archive; default 100,000
    NETLOOM_MAX_IMAGE_PIXELS      largest image (width x height) in an archive; default 4096 x 4096
    NETLOOM_MAX_ARCHIVE_PIXELS    most pixels of all an archive's images together; default 1,000,000,000
    NETLOOM_MAX_PARAMS        largest model a graph may describe; default 100 million parameters
    NETLOOM_MAX_NODES         most nodes in one graph; default 500 (a longer spec is refused before it is stored)
    NETLOOM_MAX_SPEC_BYTES    largest graph spec or block definition; default 5 MiB (a larger body is a 413)
    NETLOOM_DATASET_PROCESSING "auto" (default: on the datasets-queue worker when one answers, else
                              inside the request), "sync" or "celery" (webapp/datasets/processing.py)
    NETLOOM_BEHIND_TLS_PROXY  1 when a proxy terminates TLS and sets X-Forwarded-Proto
    NETLOOM_CHECK_EVENTS      1 to check every stream event against its model (webapp/runs/stream/event_types.py;
                              the tests turn it on); default 0
    NETLOOM_MAX_ACTIVATION_BYTES  most activation memory a graph may need per sample; default 2 GiB
    NETLOOM_LOGIN_FAILURE_LIMIT   failed logins before a lockout; default 10
    NETLOOM_LOGIN_LOCKOUT_MINUTES how long a lockout lasts; default 15 (failures count per account
                              and client address: webapp/api/lockout.py)
    NETLOOM_TRUSTED_PROXIES   comma-separated addresses or networks (CIDR) of proxies in front of the
                              service whose X-Forwarded-For is believed, e.g. the TLS proxy's; default
                              none: the client is the peer that connected (webapp/api/client_address.py)
    NETLOOM_SIGN_IN_RATE      password sign-ins one client address may try, any account, before 429
                              with Retry-After (DRF's rate: "30/min", the default, "500/hour")
    NETLOOM_MAX_TOKENS_PER_USER   most live (unrevoked, unexpired) API tokens one user may hold; default 100
    NETLOOM_INVITATION_DAYS   days a team invitation stays valid; default 7
    EMAIL_BACKEND             Django's e-mail backend: default the console (mails are printed to the log);
                              django.core.mail.backends.smtp.EmailBackend to send, .filebased.EmailBackend
                              (with EMAIL_FILE_PATH) to keep them as files
    EMAIL_HOST                the SMTP server; default localhost
    EMAIL_PORT                its port; default 25
    EMAIL_HOST_USER           the SMTP user name; default none
    EMAIL_HOST_PASSWORD       its password; default none
    EMAIL_USE_TLS             1: STARTTLS (usually port 587); default 0
    EMAIL_USE_SSL             1: implicit TLS (usually port 465); default 0
    EMAIL_FILE_PATH           the folder of the file backend; default var/mail
    DEFAULT_FROM_EMAIL        the sender of invitation mails; default netloom@localhost
    NETLOOM_OIDC_ISSUER       single sign-on (OpenID Connect): the provider's issuer URL, whose
                              <issuer>/.well-known/openid-configuration names its endpoints (read on
                              first use, webapp/accounts/oidc.py); unset (the default): no SSO
    NETLOOM_OIDC_CLIENT_ID    the client id this server has at the provider (required with an issuer)
    NETLOOM_OIDC_CLIENT_SECRET its secret (required with an issuer; never logged)
    NETLOOM_OIDC_NAME         the sign-in button's "Sign in with <name>"; default "SSO"
    NETLOOM_OIDC_SCOPES       scopes asked for; default "openid email profile groups"
    NETLOOM_OIDC_SIGN_ALGO    the provider's ID token signature algorithm; default RS256
    NETLOOM_OIDC_GROUPS_CLAIM the claim (ID token or userinfo) that lists the user's groups; default "groups"
    NETLOOM_OIDC_TEAM_MAP     groups to teams and roles, "group=Team:role,group2=Team:role" or JSON
                              ({"group": "Team:role"} or {"group": ["Team:role", ...]}); the teams it
                              names have their memberships set from the groups at every SSO sign-in
    NETLOOM_OIDC_CREATE_USERS 1 (default): a first SSO sign-in creates the account; 0: only accounts
                              that exist (matched by a verified e-mail) may sign in with SSO
    NETLOOM_LOCAL_PASSWORDS   1 (default); 0 refuses password sign-ins (the app's form, tokens by
                              password, the admin's form) with 403 naming SSO; needs NETLOOM_OIDC_ISSUER
    NETLOOM_DEVICES           devices this deployment's workers have, checked when a run is created:
                              "cpu" (default), "cuda" (GPUs: cuda and cuda:N pass; a worker checks the
                              index), or a list such as "cpu,cuda:0,cuda:1"; "auto" always passes.
                              A training worker's own devices: its cuda entries (else CUDA_VISIBLE_DEVICES,
                              else the CPU), which pick the train queues it consumes (webapp/runs/scheduling/devices.py)
    NETLOOM_WEB_WORKERS       processes of the HTTP server (webapp/serve.py); default 2
    NETLOOM_STREAM_WORKERS    processes of the stream server (WebSockets); default NETLOOM_WEB_WORKERS
    NETLOOM_WEB_FRONT         "nginx" (default, where nginx is installed: nginx in front of granian for HTTP
                              and uvicorn for streams) or "none" (uvicorn serves both; webapp/serve.py)
    NETLOOM_WEB_THREADS       threads of each HTTP server process that run Django's handler: default 1
                              behind the front (granian), 8 when uvicorn serves HTTP itself (webapp/asgi.py)
    NETLOOM_HTTP_HANDLER      when uvicorn serves HTTP: "wsgi" (default: Django's WSGI handler on those
                              threads) or "asgi" (Django's ASGI handler for every HTTP request, as before
                              issue 12)
    NETLOOM_CPU_PROCESSES     most processes one run may use on a CPU training worker (its capacity); default 8
    NETLOOM_WORKER_THREADS    torch's intra-op threads in each Celery worker process (training, explanations;
                              a multi-process run's ranks through OMP_NUM_THREADS); default 0: torch's own,
                              one per core. `make run` and the test stacks, which share the cores with the web
                              tier, set the cores less one (at least 1): webapp/devserver.py
    NETLOOM_DATASET_RESEND_SECONDS an upload's processing job still queued this long after its send is
                              sent again (the broker may have lost it), backing off; default 60
    STATIC_ROOT               where collectstatic puts files; default var/static
    CELERY_BROKER_URL         default REDIS_URL
    CELERY_RESULT_BACKEND     default none (tasks record their outcome in the database)
    SECURE_SSL_REDIRECT       with DEBUG off: redirect http to https; default 1
    SECURE_HSTS_SECONDS       with DEBUG off: Strict-Transport-Security max-age; default one year
    LOG_LEVEL                 root log level; default INFO

The runs app's tuning knobs (RUNS_LEASE_SECONDS, ...) are Django settings, not environment
variables: webapp/runs/conf.py lists them with their defaults; the jobs app's (JOBS_LEASE_SECONDS,
JOBS_KEEP_SECONDS, ...) are in webapp/jobs/conf.py, and JOBS_KINDS sets them per kind (the re-send
interval of explanations, "runs.explain", 60 s, and of exports, "runs.export", 120 s). Queue and task names are fixed in
webapp/queues.py. tests/webapp/test_settings.py checks that this list names every variable read.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
from datetime import timedelta
from pathlib import Path
from typing import Any

import dj_database_url

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = BASE_DIR / "var"


def env_bool(name: str, default: bool) -> bool:
    """Read a boolean from the environment ("1", "true", "yes", "on" are true)."""
    value = os.environ.get(name)
    if value is None or value.strip() == "":
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_int(name: str, default: int) -> int:
    """Read an integer from the environment."""
    value = os.environ.get(name, "").strip()
    return int(value) if value else default


def env_list(name: str, default: list[str]) -> list[str]:
    """Read a comma-separated list from the environment."""
    value = os.environ.get(name)
    if value is None:
        return default
    return [item.strip() for item in value.split(",") if item.strip()]


DEBUG = env_bool("DEBUG", True)

_DEV_SECRET_KEY = "netloom-development-key-not-for-production-use-0123456789abcdef"
SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise RuntimeError("SECRET_KEY must be set when DEBUG is off")
    SECRET_KEY = _DEV_SECRET_KEY

ALLOWED_HOSTS = env_list(
    "ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"] if DEBUG else []
)
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

# --- applications -------------------------------------------------------------------------

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
    "drf_spectacular_sidecar",  # Swagger UI's files, served by us: no CDN
    "channels",
    "axes",  # failed sign-ins per account and client address, and the lockout after too many
    "webapp.accounts",
    "webapp.jobs",
    "webapp.datasets",
    "webapp.graphs",
    "webapp.blocks",
    "webapp.runs",
    "webapp.metrics",
    "webapp.sweeps",
    "webapp.registry",
    "webapp.audit",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "webapp.api.errors.ApiErrorMiddleware",
    # Last, as django-axes asks: turns a locked-out sign-in's answer into a 429.
    "axes.middleware.AxesMiddleware",
]

# --- sign-in lockout (django-axes) and throttle -------------------------------------------
# The first backend refuses every sign-in to an account that failed too often from the client's
# address; the failures are rows in the database (AccessAttempt), so every web process sees the
# same count. Another account, or the same one from elsewhere, is not affected: behind a proxy
# every user may share one address (webapp/api/lockout.py).
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = env_int("NETLOOM_LOGIN_FAILURE_LIMIT", 10)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("NETLOOM_LOGIN_LOCKOUT_MINUTES", 15))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
# Proxies whose X-Forwarded-For is believed (addresses or networks): the client's address is then
# the nearest one in it that is not a trusted proxy (webapp/api/client_address.py).
NETLOOM_TRUSTED_PROXIES = env_list("NETLOOM_TRUSTED_PROXIES", [])
for _proxy in NETLOOM_TRUSTED_PROXIES:
    try:
        ipaddress.ip_network(_proxy, strict=False)
    except ValueError:
        raise RuntimeError(f"NETLOOM_TRUSTED_PROXIES: {_proxy!r} is not an address or network") from None
AXES_CLIENT_IP_CALLABLE = "webapp.api.lockout.lockout_client_address"
# The single sign-on callback checks no password: its failures count toward no lockout.
AXES_WHITELIST_CALLABLE = "webapp.api.lockout.lockout_exempt"
# Password sign-ins per client address (any account): past this rate, 429 with Retry-After.
NETLOOM_SIGN_IN_RATE = os.environ.get("NETLOOM_SIGN_IN_RATE", "30/min")
if not re.fullmatch(r"\d+/(s|sec|second|m|min|minute|h|hour|d|day)", NETLOOM_SIGN_IN_RATE):
    raise RuntimeError(f"NETLOOM_SIGN_IN_RATE={NETLOOM_SIGN_IN_RATE!r}: expected a count per s, min, hour or day (30/min)")
AXES_RESET_ON_SUCCESS = True
AXES_HTTP_RESPONSE_CODE = 429
AXES_LOCKOUT_CALLABLE = "webapp.api.lockout.lockout_response"
AXES_VERBOSE = False

# --- single sign-on (OpenID Connect through mozilla-django-oidc; docs/decisions/0017) -------


def oidc_team_map(text: str) -> dict[str, list[tuple[str, str]]]:
    """NETLOOM_OIDC_TEAM_MAP parsed: group -> [(team name, role)]. Accepts
    "ml-team=Vision:editor,ml-admins=Vision:admin" or JSON ({"group": "Team:role"} or a list of
    them); a bad entry stops the server with the entry named."""
    import json

    text = text.strip()
    if not text:
        return {}
    pairs: list[tuple[str, Any]] = []
    if text.startswith("{"):
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise RuntimeError(f"NETLOOM_OIDC_TEAM_MAP is not valid JSON: {exc}") from None
        if not isinstance(data, dict):
            raise RuntimeError("NETLOOM_OIDC_TEAM_MAP: expected a JSON object {\"group\": \"Team:role\"}")
        for group, value in data.items():
            for item in value if isinstance(value, list) else [value]:
                pairs.append((group, item))
    else:
        for entry in (part.strip() for part in text.split(",")):
            if not entry:
                continue
            group, sep, value = entry.partition("=")
            if not sep:
                raise RuntimeError(f"NETLOOM_OIDC_TEAM_MAP: {entry!r} is not group=Team:role")
            pairs.append((group.strip(), value))
    mapping: dict[str, list[tuple[str, str]]] = {}
    for group, value in pairs:
        if isinstance(value, dict):
            team, role = str(value.get("team", "")), str(value.get("role", ""))
        else:
            team, _, role = str(value).strip().rpartition(":")
        team, role = team.strip(), role.strip().lower()
        if not group or not team or role not in ("viewer", "editor", "admin"):
            raise RuntimeError(
                f"NETLOOM_OIDC_TEAM_MAP: {group!r} -> {value!r}: expected Team:role with a role of "
                "viewer, editor or admin"
            )
        mapping.setdefault(group, []).append((team, role))
    return mapping


NETLOOM_OIDC_ISSUER = os.environ.get("NETLOOM_OIDC_ISSUER", "").strip().rstrip("/")
NETLOOM_OIDC_ENABLED = bool(NETLOOM_OIDC_ISSUER)
NETLOOM_OIDC_NAME = os.environ.get("NETLOOM_OIDC_NAME", "").strip() or "SSO"
NETLOOM_OIDC_GROUPS_CLAIM = os.environ.get("NETLOOM_OIDC_GROUPS_CLAIM", "").strip() or "groups"
NETLOOM_OIDC_TEAM_MAP = oidc_team_map(os.environ.get("NETLOOM_OIDC_TEAM_MAP", ""))
NETLOOM_OIDC_CREATE_USERS = env_bool("NETLOOM_OIDC_CREATE_USERS", True)
NETLOOM_LOCAL_PASSWORDS = env_bool("NETLOOM_LOCAL_PASSWORDS", True)
# mozilla-django-oidc's own settings. The endpoints are not here: webapp/accounts/oidc.py reads
# them from the issuer's discovery document on first use (and again after an hour).
OIDC_RP_CLIENT_ID = os.environ.get("NETLOOM_OIDC_CLIENT_ID", "").strip()
OIDC_RP_CLIENT_SECRET = os.environ.get("NETLOOM_OIDC_CLIENT_SECRET", "").strip()
OIDC_RP_SCOPES = " ".join(os.environ.get("NETLOOM_OIDC_SCOPES", "").split()) or "openid email profile groups"
OIDC_RP_SIGN_ALGO = os.environ.get("NETLOOM_OIDC_SIGN_ALGO", "").strip() or "RS256"
OIDC_USE_PKCE = True
OIDC_CREATE_USER = NETLOOM_OIDC_CREATE_USERS
OIDC_TIMEOUT = 10
LOGIN_REDIRECT_URL = "/app/"
LOGIN_REDIRECT_URL_FAILURE = "/app/login"
if NETLOOM_OIDC_ENABLED:
    if not NETLOOM_OIDC_ISSUER.startswith(("https://", "http://")):
        raise RuntimeError(f"NETLOOM_OIDC_ISSUER={NETLOOM_OIDC_ISSUER!r}: expected an https:// URL")
    if not OIDC_RP_CLIENT_ID or not OIDC_RP_CLIENT_SECRET:
        raise RuntimeError("NETLOOM_OIDC_ISSUER is set: NETLOOM_OIDC_CLIENT_ID and NETLOOM_OIDC_CLIENT_SECRET are required too")
    if "openid" not in OIDC_RP_SCOPES.split():
        raise RuntimeError(f"NETLOOM_OIDC_SCOPES={OIDC_RP_SCOPES!r}: must include openid")
    AUTHENTICATION_BACKENDS.append("webapp.accounts.oidc.OidcBackend")
if not NETLOOM_LOCAL_PASSWORDS:
    if not NETLOOM_OIDC_ENABLED:
        raise RuntimeError("NETLOOM_LOCAL_PASSWORDS=0 without NETLOOM_OIDC_ISSUER: nobody could sign in")
    # No password checks anywhere (the admin's form included): SSO is the only way in.
    AUTHENTICATION_BACKENDS.remove("django.contrib.auth.backends.ModelBackend")

ROOT_URLCONF = "webapp.urls"
WSGI_APPLICATION = None
ASGI_APPLICATION = "webapp.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "webapp" / "templates"],
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

# --- database -----------------------------------------------------------------------------

DATABASE_URL = os.environ.get("DATABASE_URL", "").strip()


def postgres_database(url: str, *, conn_max_age: int) -> dict[str, Any]:
    """A DATABASES entry for a PostgreSQL URL, with psycopg's own prepared statements when
    NETLOOM_PG_PREPARE is on (the test and bench stacks build theirs with it too)."""
    database = dj_database_url.parse(url, conn_max_age=conn_max_age)
    if env_bool("NETLOOM_PG_PREPARE", False):
        # psycopg prepares a statement once a connection has run it this often; needs the
        # parameters bound on the server (Django binds them on the client by default).
        database.setdefault("OPTIONS", {}).update(server_side_binding=True, prepare_threshold=2)
    return database


# SQLite shared by the web process and the workers (docs/reliability.md "SQLite"): WAL lets
# readers go on while one connection writes; IMMEDIATE transactions take the write lock at BEGIN,
# waiting up to `timeout` seconds for it, where a deferred one that read first and then wrote
# would fail at once with "database is locked" (a lock upgrade SQLite will not wait for).
SQLITE_OPTIONS: dict[str, Any] = {
    "timeout": 30,
    "init_command": "PRAGMA journal_mode=WAL;",
    "transaction_mode": "IMMEDIATE",
}

if DATABASE_URL:
    DATABASES = {"default": postgres_database(DATABASE_URL, conn_max_age=60)}
    if DATABASES["default"]["ENGINE"].endswith("sqlite3"):  # sqlite:///path: the same options
        DATABASES["default"]["OPTIONS"] = SQLITE_OPTIONS
else:
    VAR_DIR.mkdir(exist_ok=True)
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": VAR_DIR / "netloom.sqlite3",
            "OPTIONS": SQLITE_OPTIONS,
        }
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# --- files --------------------------------------------------------------------------------

STATIC_URL = "/static/"
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT", VAR_DIR / "static"))
try:  # WhiteNoise warns on every start when the folder is missing (before the first collectstatic)
    STATIC_ROOT.mkdir(parents=True, exist_ok=True)
except OSError:
    pass
FRONTEND_DIST = BASE_DIR / "frontend" / "dist"
STATICFILES_DIRS = [FRONTEND_DIST] if FRONTEND_DIST.is_dir() else []
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    # Not the manifest variant: templates render without a prior collectstatic (tests, dev).
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}

MEDIA_ROOT = Path(os.environ.get("MEDIA_ROOT", VAR_DIR / "media"))

# The KServe InferenceService of a version (GET /api/models/<id>/versions/<n>/kserve/): the
# image its predictor runs and the PersistentVolumeClaim that holds MEDIA_ROOT on the cluster
# (docs/deploy.md).
NETLOOM_IMAGE = os.environ.get("NETLOOM_IMAGE", "netloom:latest")
NETLOOM_MEDIA_CLAIM = os.environ.get("NETLOOM_MEDIA_CLAIM", "netloom-media")

# Where runs train (webapp/runs/scheduling/kubernetes.py, docs/decisions/0022): the Celery workers'
# claim loop, or a Kubernetes Job per run, created in NETLOOM_K8S_NAMESPACE through the API at
# NETLOOM_K8S_API_URL (empty: in-cluster), its pods shaped by NETLOOM_K8S_RUN_POD.
NETLOOM_RUNNER = os.environ.get("NETLOOM_RUNNER", "celery").strip().lower() or "celery"
if NETLOOM_RUNNER not in ("celery", "kubernetes"):
    raise RuntimeError(f"NETLOOM_RUNNER must be 'celery' or 'kubernetes', not {NETLOOM_RUNNER!r}")
NETLOOM_K8S_NAMESPACE = os.environ.get("NETLOOM_K8S_NAMESPACE", "netloom")
NETLOOM_K8S_API_URL = os.environ.get("NETLOOM_K8S_API_URL", "")
try:
    NETLOOM_K8S_RUN_POD = json.loads(os.environ.get("NETLOOM_K8S_RUN_POD") or "{}")
except ValueError as exc:
    raise RuntimeError(f"NETLOOM_K8S_RUN_POD is not JSON: {exc}") from None

# The model server (`python -m serving`, docs/subsystems/serving.md): its port behind the front,
# and the alias `/v2/models/<served>/infer` answers with (the batching settings are read by the
# server itself from SERVING_MAX_BATCH_SIZE, SERVING_MAX_WAIT_MS, SERVING_MAX_QUEUE, SERVING_POLL_S).
SERVING_PORT = int(os.environ.get("SERVING_PORT", "8090"))
SERVING_DEFAULT_ALIAS = os.environ.get("SERVING_DEFAULT_ALIAS", "production")
MEDIA_URL = "/media/"  # never served directly: downloads go through permission-checked views

NETLOOM_MAX_UPLOAD_BYTES = env_int("NETLOOM_MAX_UPLOAD_BYTES", 200 * 1024 * 1024)
# Largest weights file (.safetensors) imported as a revision's first checkpoint; every upload is
# also held to NETLOOM_MAX_UPLOAD_BYTES.
NETLOOM_MAX_WEIGHTS_BYTES = env_int("NETLOOM_MAX_WEIGHTS_BYTES", NETLOOM_MAX_UPLOAD_BYTES)
# Free space a large write leaves on MEDIA_ROOT's volume (webapp/disk.py).
NETLOOM_DISK_MARGIN_BYTES = env_int("NETLOOM_DISK_MARGIN_BYTES", 100 * 1024 * 1024)
# An upload's file untouched this long is a leftover (webapp/datasets/services.py::upload_leftovers_sweep).
NETLOOM_UPLOAD_STALE_SECONDS = env_int("NETLOOM_UPLOAD_STALE_SECONDS", 600)
# An image archive is bounded by the work it holds, read from its directory and image headers
# before anything is decoded (engine/data/limits.py; docs/subsystems/data.md "Archives and limits").
NETLOOM_MAX_ARCHIVE_ENTRIES = env_int("NETLOOM_MAX_ARCHIVE_ENTRIES", 100_000)
NETLOOM_MAX_IMAGE_PIXELS = env_int("NETLOOM_MAX_IMAGE_PIXELS", 4096 * 4096)
NETLOOM_MAX_ARCHIVE_PIXELS = env_int("NETLOOM_MAX_ARCHIVE_PIXELS", 1_000_000_000)
# Uploaded files always go to disk (our own handler streams them into MEDIA_ROOT). Under ASGI
# Django also copies every request body into a spooled file of this size before a view runs:
# past 1 MiB it is on disk (0 would mean "never roll over", holding any body in memory).
# webapp/api/body_limit.py refuses over-limit bodies before that copy begins.
FILE_UPLOAD_MAX_MEMORY_SIZE = 1024 * 1024
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024  # JSON bodies (a large graph spec fits)
FILE_UPLOAD_PERMISSIONS = 0o640
# Every multipart body is streamed to MEDIA_ROOT/uploads and cut off at the limit (413).
FILE_UPLOAD_HANDLERS = ["webapp.datasets.uploads.LimitedUploadHandler"]

# --- engine limits ------------------------------------------------------------------------

NETLOOM_MAX_PARAMS = env_int("NETLOOM_MAX_PARAMS", 100_000_000)
NETLOOM_MAX_NODES = env_int("NETLOOM_MAX_NODES", 500)
# The engine's own limit on a spec document (engine.spec.DEFAULT_MAX_SPEC_BYTES); a body that
# carries a spec or block may be this plus the few fields around it, else 413 before it is parsed.
NETLOOM_MAX_SPEC_BYTES = env_int("NETLOOM_MAX_SPEC_BYTES", 5 * 1024 * 1024)
NETLOOM_MAX_ACTIVATION_BYTES = env_int("NETLOOM_MAX_ACTIVATION_BYTES", 2 * 1024**3)
NETLOOM_DATASET_PROCESSING = os.environ.get("NETLOOM_DATASET_PROCESSING", "auto")
# The reaper re-sends an upload's processing job still queued this long after its send (webapp/datasets/jobs.py).
NETLOOM_DATASET_RESEND_SECONDS = float(os.environ.get("NETLOOM_DATASET_RESEND_SECONDS", "60"))
# Devices a run may ask for at create time (issue 13 will let workers announce theirs).
NETLOOM_DEVICES = env_list("NETLOOM_DEVICES", ["cpu"])
NETLOOM_CPU_PROCESSES = env_int("NETLOOM_CPU_PROCESSES", 8)
NETLOOM_WORKER_THREADS = env_int("NETLOOM_WORKER_THREADS", 0)
NETLOOM_WEB_THREADS = env_int("NETLOOM_WEB_THREADS", 8)
NETLOOM_HTTP_HANDLER = os.environ.get("NETLOOM_HTTP_HANDLER", "wsgi")
if NETLOOM_HTTP_HANDLER not in ("wsgi", "asgi"):
    raise RuntimeError(f"NETLOOM_HTTP_HANDLER={NETLOOM_HTTP_HANDLER!r}: expected wsgi or asgi")
NETLOOM_MAX_TOKENS_PER_USER = env_int("NETLOOM_MAX_TOKENS_PER_USER", 100)
# How long a team invitation may be accepted (webapp/accounts/services/invitations.py::invitation_create).
NETLOOM_INVITATION_DAYS = env_int("NETLOOM_INVITATION_DAYS", 7)

# --- e-mail (invitations) ---------------------------------------------------------------------

EMAIL_BACKEND = os.environ.get("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
EMAIL_HOST = os.environ.get("EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("EMAIL_PORT", 25)
EMAIL_HOST_USER = os.environ.get("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
EMAIL_USE_SSL = env_bool("EMAIL_USE_SSL", False)
EMAIL_FILE_PATH = Path(os.environ.get("EMAIL_FILE_PATH", VAR_DIR / "mail"))
EMAIL_TIMEOUT = 10
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "netloom@localhost")
# Check every stored, published and sent stream event against its model (tests; costs a little).
NETLOOM_CHECK_EVENTS = env_bool("NETLOOM_CHECK_EVENTS", False)

# --- REST API -----------------------------------------------------------------------------

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        # Bearer first: its WWW-Authenticate header makes DRF answer 401, not 403.
        "webapp.api.authentication.BearerTokenAuthentication",
        "webapp.api.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "webapp.api.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_RENDERER_CLASSES": ["webapp.api.renderers.FastJSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["webapp.api.parsers.LimitedJSONParser"],
    "EXCEPTION_HANDLER": "webapp.api.errors.exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
    # Only the sign-in views name a scope (webapp/api/lockout.py SignInRateThrottle).
    "DEFAULT_THROTTLE_RATES": {"sign_in": NETLOOM_SIGN_IN_RATE},
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Netloom API",
    "DESCRIPTION": "Draw, train, explain and export PyTorch models.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    "GET_LIB_DOC_EXCLUDES": "webapp.api.schema_bodies.lib_doc_excludes",
    "SCHEMA_PATH_PREFIX": "/api/",
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Pydantic models that fields refer to become components: the stream's frames
    # (webapp/runs/stream/event_types.py), the dataset summary. The browser's types are generated from them.
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "webapp.runs.api.schema.stream_components_hook",
        "webapp.datasets.schema.components_hook",
        # Request bodies take their fields only (webapp/api/serializers.py KnownFieldsOnly).
        "webapp.api.schema_bodies.closed_request_bodies_hook",
        # Last: every operation's error statuses, with the one error body.
        "webapp.api.schema_errors.error_responses_hook",
    ],
    "ENUM_NAME_OVERRIDES": {
        "ParamKindEnum": "webapp.graphs.schema.PARAM_KINDS",
        # An API token's scope: "scope" is a common field name (OpenID Connect's too).
        "TokenScopeEnum": "webapp.accounts.models.TokenScope",
        # Sweeps: their status and the min/max of an objective share field names with runs'.
        "SweepStatusEnum": "webapp.sweeps.models.SweepStatus",
        "MetricModeEnum": ["min", "max"],
        # How a run starts from another run's checkpoint.
        "InitModeEnum": ["finetune", "resume"],
        # "state" is a job's field (webapp/jobs) and a sweep trial's: each keeps its own name.
        "JobStateEnum": "webapp.jobs.models.JobState",
        "StateEnum": "webapp.sweeps.models.TrialState.values",
        # A dataset's status and its versions' share one set of choices and one name.
        "DatasetStatusEnum": "webapp.datasets.models.DatasetStatus",
    },
}

# --- Channels and Celery ------------------------------------------------------------------

REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
NETLOOM_INSTANCE = os.environ.get("NETLOOM_INSTANCE", "netloom")


def channel_layers(kind: str, redis_url: str, instance: str) -> dict[str, Any]:
    """CHANNEL_LAYERS for NETLOOM_CHANNEL_LAYER `kind` on `redis_url` under `instance`'s prefix
    (the test stacks' settings call it with their own Redis and prefix)."""
    if kind == "memory":
        return {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    # redis-py 8 gives up on a read after 5 s by default, which would kill every quiet WebSocket
    # consumer; channels_redis itself waits up to 5 s for a message.
    config: dict[str, Any] = {
        "hosts": [{"address": redis_url, "socket_timeout": 30, "socket_connect_timeout": 2}],
        "prefix": f"{instance}:asgi",
    }
    if kind == "redis-pubsub":
        # A group message is one PUBLISH; each server process gets it once and hands it to its
        # own members (the list layer pushes one copy per member and pops them one round trip
        # each). No capacity or expiry: a message nobody listens to is gone (the stream never
        # depends on it).
        return {"default": {"BACKEND": "webapp.channel_layer.PubSubChannelLayer", "CONFIG": config}}
    if kind == "redis":
        return {
            "default": {
                "BACKEND": "channels_redis.core.RedisChannelLayer",
                "CONFIG": {**config, "capacity": 1000, "expiry": 30},
            }
        }
    raise RuntimeError(f"NETLOOM_CHANNEL_LAYER={kind!r}: expected redis-pubsub, redis or memory")


CHANNEL_LAYERS = channel_layers(
    os.environ.get("NETLOOM_CHANNEL_LAYER", "redis-pubsub"), REDIS_URL, NETLOOM_INSTANCE
)



def caches(kind: str, redis_url: str, instance: str) -> dict[str, Any]:
    """CACHES for NETLOOM_CACHE `kind`: Redis under the instance's prefix (values as JSON, never
    pickled: webapp/cache.py), or one process's memory."""
    # "local": this process's memory, for values whose key names their version (a run's detail
    # document under its Run.version): never stale, so each process may keep its own copy.
    local = {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "netloom-local",
             "KEY_PREFIX": instance, "OPTIONS": {"MAX_ENTRIES": 2000}}
    if kind == "memory":
        return {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}, "local": local}
    return {"default": {
        "BACKEND": "webapp.cache.TolerantRedisCache",
        "LOCATION": redis_url,
        "KEY_PREFIX": f"{instance}:cache",
        "TIMEOUT": 3600,
        "OPTIONS": {"serializer": "webapp.cache.JSONSerializer"},
    }, "local": local}


CACHES = caches(os.environ.get("NETLOOM_CACHE", "redis"), REDIS_URL, NETLOOM_INSTANCE)

CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", REDIS_URL)
# Every key kombu writes (queues, unacked messages, bindings) starts with the instance's prefix.
# The visibility timeout is webapp/celery.py's (a setting replaces the whole dict).
CELERY_BROKER_TRANSPORT_OPTIONS = {"global_keyprefix": f"{NETLOOM_INSTANCE}:", "visibility_timeout": 6 * 3600}
CELERY_RESULT_BACKEND = os.environ.get("CELERY_RESULT_BACKEND") or None
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1

# --- security -----------------------------------------------------------------------------

SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False  # the browser app reads csrftoken to send X-CSRFToken
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
if not DEBUG:
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31_536_000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    if env_bool("NETLOOM_BEHIND_TLS_PROXY", False):
        SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# No secret in a log: one filter (webapp/logredact.py) on this handler, and, through
# LOGGING_CONFIG, on every handler the process has (Django's own, the servers').
LOGGING_CONFIG = "webapp.logredact.configure_logging"
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"redact": {"()": "webapp.logredact.RedactingFilter"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "filters": ["redact"]}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {"django.request": {"level": "ERROR"}},
}
