"""Settings for the processes a ServiceStack starts (web, worker): webapp.settings + the stack's env.

Environment (set by tests/stack/stack.py):
    NETLOOM_E2E_DB       SQLite file shared by the test, the worker and daphne
    NETLOOM_E2E_DB_URL   a PostgreSQL database of the stack's own instead (when the suite runs on one)
    NETLOOM_E2E_REDIS    redis URL (broker and channel layer)
    NETLOOM_E2E_PREFIX   key prefix of this stack in Redis (channel layer and Celery queues)
    NETLOOM_E2E_MEDIA    MEDIA_ROOT
    NETLOOM_E2E_STEP_DELAY seconds added to every training step (so a test can catch a run mid-way)
    NETLOOM_E2E_DATASET_PROCESSING "sync" (default) or "celery" (uploads processed by the worker)
    NETLOOM_E2E_LOG_LEVEL  the root logger's level; default WARNING (a deployment's is INFO)
"""

import os

from webapp.settings import *  # noqa: F403

DATABASES = {
    "default": postgres_database(os.environ["NETLOOM_E2E_DB_URL"], conn_max_age=0)  # noqa: F405
} if os.environ.get("NETLOOM_E2E_DB_URL") else {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.environ["NETLOOM_E2E_DB"],
        # Three processes share the file, with `make run`'s options (WAL, IMMEDIATE, a busy timeout).
        "OPTIONS": SQLITE_OPTIONS,  # noqa: F405
    }
}
REDIS_URL = os.environ["NETLOOM_E2E_REDIS"]
_PREFIX = os.environ["NETLOOM_E2E_PREFIX"]
# The stack's prefix is its NETLOOM_INSTANCE (webapp/settings.py): the same channel-layer prefix
# and Celery global_keyprefix a deployment gets, built here from the stack's Redis URL.
NETLOOM_INSTANCE = _PREFIX
# webapp/settings.py's layer (pub/sub unless NETLOOM_CHANNEL_LAYER says otherwise) on the stack's
# Redis, under the stack's prefix.
CHANNEL_LAYERS = channel_layers(  # noqa: F405
    os.environ.get("NETLOOM_CHANNEL_LAYER", "redis-pubsub"), REDIS_URL, NETLOOM_INSTANCE
)
CACHES = caches(os.environ.get("NETLOOM_CACHE", "redis"), REDIS_URL, NETLOOM_INSTANCE)  # noqa: F405
CELERY_BROKER_URL = REDIS_URL
CELERY_BROKER_TRANSPORT_OPTIONS = {"global_keyprefix": f"{NETLOOM_INSTANCE}:", "visibility_timeout": 3600}
MEDIA_ROOT = os.environ["NETLOOM_E2E_MEDIA"]
NETLOOM_DATASET_PROCESSING = os.environ.get("NETLOOM_E2E_DATASET_PROCESSING", "sync")

# Short leases so a killed worker's run is picked up within seconds.
RUNS_LEASE_SECONDS = 3.0
RUNS_HEARTBEAT_SECONDS = 0.5
RUNS_REAP_SECONDS = 1.0
# A queued run nobody took is sent again after a few seconds (a broker that lost the message).
RUNS_REQUEUE_QUEUED_SECONDS = 3.0
RUNS_STEP_DELAY_SECONDS = float(os.environ.get("NETLOOM_E2E_STEP_DELAY", "0"))
# A run whose volume was full waits at most this long for space before it trains again.
RUNS_SPACE_WAIT_SECONDS = 60.0
# Every event the worker and daphne store, publish or send is checked against its model; a misfit
# raises and logs EVENT_SCHEMA_VIOLATION (webapp/runs/stream/event_types.py) in web.log / worker-N.log.
NETLOOM_CHECK_EVENTS = True
LOGGING = {**LOGGING, "root": {"handlers": ["console"], "level": os.environ.get("NETLOOM_E2E_LOG_LEVEL", "WARNING")}}  # noqa: F405
# Mails (team invitations) are kept as files beside the media, never printed into the web log.
EMAIL_BACKEND = "django.core.mail.backends.filebased.EmailBackend"
EMAIL_FILE_PATH = os.path.join(os.path.dirname(os.environ["NETLOOM_E2E_MEDIA"].rstrip("/")), "mail")
