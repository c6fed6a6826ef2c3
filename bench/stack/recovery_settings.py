"""Settings of the recovery bench's stack (bench/recovery.py): the test stack's, with the runs
app's production lease, heartbeat and reaper timings (webapp/runs/conf.py), not the tests' short ones.
"""

from tests.stack.e2e_settings import *  # noqa: F403

# What a deployment runs with: the defaults of webapp/runs/conf.py.
del RUNS_LEASE_SECONDS, RUNS_HEARTBEAT_SECONDS, RUNS_REAP_SECONDS  # noqa: F821
NETLOOM_CHECK_EVENTS = False
LOGGING = {**LOGGING, "root": {"handlers": ["console"], "level": "WARNING"}}  # noqa: F405
