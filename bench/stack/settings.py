"""Settings of the bench stacks (bench/stream_fanout.py, bench/api_load.py; never the tests): the test stack's, at speed.

tests/stack/e2e_settings.py (its own database, Redis prefix and media folder) with the per-frame
schema checks off, as in production, and quiet logs.
"""

from tests.stack.e2e_settings import *  # noqa: F403

NETLOOM_CHECK_EVENTS = False
LOGGING = {**LOGGING, "root": {"handlers": ["console"], "level": "ERROR"}}  # noqa: F405
ROOT_URLCONF = "bench.stack.urls"  # the service's URLs plus the baselines of bench/api_load.py
# Persistent connections as in production (webapp/settings.py: conn_max_age=60, no health
# checks); the test stacks' conn_max_age=0 opened a new connection per request, which is not what
# a deployment measures. No health checks either: a `SELECT 1` before each request's first
# statement is a round trip production does not make.
DATABASES["default"]["CONN_MAX_AGE"] = 60  # noqa: F405
# DEBUG off, as in production: with it on, Django records every query's SQL (CursorDebugWrapper)
# and WhiteNoise looks for a static file on disk for every request (its autorefresh): a fifth of
# a cached run detail's time under wrk (py-spy, docs/benchmarks.md "API under load"). The checks
# DEBUG off asks for (SECRET_KEY, ALLOWED_HOSTS, TLS redirects) belong to a deployment, not a
# loopback bench, and were settled when webapp/settings.py was read with the checkout's DEBUG.
DEBUG = False
WHITENOISE_AUTOREFRESH = False
