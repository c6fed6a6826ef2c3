"""Settings of the bench stacks (bench/stream_fanout.py, bench/api_load.py): the test stack's, at speed.

tests/workers/e2e_settings.py (its own database, Redis prefix and media folder) with the per-frame
schema checks off, as in production, and quiet logs.
"""

from tests.workers.e2e_settings import *  # noqa: F403

NETLOOM_CHECK_EVENTS = False
LOGGING = {**LOGGING, "root": {"handlers": ["console"], "level": "ERROR"}}  # noqa: F405
