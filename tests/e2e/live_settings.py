"""Settings of the e2e server and worker: webapp.settings plus a Redis key prefix of their own.

Environment (set by tests/e2e/conftest.py):
    NETLOOM_E2E_PREFIX       key prefix of this session in Redis (channel layer and Celery queues)
    NETLOOM_E2E_STEP_DELAY   seconds added to every training step, so a browser sees a run move
Everything else (DATABASE_URL, REDIS_URL, MEDIA_ROOT, ...) is read by webapp.settings as usual.
"""

import os

from webapp.settings import *  # noqa: F403

_PREFIX = os.environ["NETLOOM_E2E_PREFIX"]

# The session's prefix is its NETLOOM_INSTANCE, and the layer is built from it as webapp/settings.py
# builds a deployment's. (This once patched the prefix only into a backend named channels_redis.*;
# the pub/sub layer is webapp.channel_layer's, so two e2e servers on one Redis kept the default
# prefix and each run page also got the other server's run of the same id.)
NETLOOM_INSTANCE = _PREFIX
CHANNEL_LAYERS = channel_layers(os.environ.get("NETLOOM_CHANNEL_LAYER", "redis-pubsub"), REDIS_URL,  # noqa: F405
                                NETLOOM_INSTANCE)
CELERY_BROKER_TRANSPORT_OPTIONS = {"global_keyprefix": f"{_PREFIX}:", "visibility_timeout": 3600}
# The server, the worker and manage.py share one SQLite file: WAL lets readers go on while one
# writes, and IMMEDIATE transactions wait for the lock instead of failing on an upgrade.
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):  # noqa: F405
    DATABASES["default"].setdefault("OPTIONS", {}).update(  # noqa: F405
        {"timeout": 30, "init_command": "PRAGMA journal_mode=WAL;", "transaction_mode": "IMMEDIATE"}
    )
RUNS_STEP_DELAY_SECONDS = float(os.environ.get("NETLOOM_E2E_STEP_DELAY", "0"))
