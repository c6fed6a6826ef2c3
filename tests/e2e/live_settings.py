"""Settings of the e2e server and worker: webapp.settings plus a Redis key prefix of their own.

Environment (set by tests/e2e/conftest.py):
    NETLOOM_E2E_PREFIX       key prefix of this session in Redis (channel layer and Celery queues)
    NETLOOM_E2E_STEP_DELAY   seconds added to every training step, so a browser sees a run move
Everything else (DATABASE_URL, REDIS_URL, MEDIA_ROOT, ...) is read by webapp.settings as usual.
"""

import os

# The session's prefix is its NETLOOM_INSTANCE: webapp/settings.py builds the channel layer's prefix
# and Celery's key prefix from it, as for a deployment. (A patch of the layer's prefix here once
# missed the pub/sub layer, so two e2e servers on one Redis shared run groups.)
os.environ["NETLOOM_INSTANCE"] = os.environ["NETLOOM_E2E_PREFIX"]

from webapp.settings import *  # noqa: E402, F403

# The server, the worker and manage.py share one SQLite file, with `make run`'s options
# (webapp/settings.py SQLITE_OPTIONS: WAL, IMMEDIATE transactions, a busy timeout).
RUNS_STEP_DELAY_SECONDS = float(os.environ.get("NETLOOM_E2E_STEP_DELAY", "0"))
# Mails (team invitations) are kept as files beside the media: a test reads the link there.
EMAIL_BACKEND = "django.core.mail.backends.filebased.EmailBackend"
EMAIL_FILE_PATH = MEDIA_ROOT.parent / "mail"  # noqa: F405
