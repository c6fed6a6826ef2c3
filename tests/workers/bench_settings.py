"""Settings of the bench stacks (bench/stream_fanout.py, bench/api_load.py): the test stack's, at speed.

tests/workers/e2e_settings.py (its own database, Redis prefix and media folder) with the per-frame
schema checks off, as in production, and quiet logs.
"""

from tests.workers.e2e_settings import *  # noqa: F403

NETLOOM_CHECK_EVENTS = False
LOGGING = {**LOGGING, "root": {"handlers": ["console"], "level": "ERROR"}}  # noqa: F405
ROOT_URLCONF = "tests.workers.bench_urls"  # the service's URLs plus the baselines of bench/api_load.py
# Persistent connections as in production (webapp/settings.py: conn_max_age=60); the test stacks'
# conn_max_age=0 opened a new connection per request, which is not what a deployment measures.
DATABASES["default"]["CONN_MAX_AGE"] = 60  # noqa: F405
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True  # noqa: F405
