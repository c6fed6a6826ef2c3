"""Defaults of the jobs app; a Django setting of the same name overrides each one.

A job type may set its own value for any of them (webapp/jobs/registry.py), and the setting
JOBS_KINDS ({kind: {"lease_seconds": 5.0, ...}}) overrides a type's values per kind.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings

DEFAULTS: dict[str, Any] = {
    # A job is claimed at most this many times: a worker lost mid-way (its lease ran out) puts it
    # back in the queue while claims remain, else it fails. A handler that raises fails at once.
    "JOBS_MAX_ATTEMPTS": 3,
    # A running job whose worker gave no sign of life (progress, or the heartbeat every quarter
    # of this) for this long is taken for lost: queued again or failed.
    "JOBS_LEASE_SECONDS": 60.0,
    # A queued job not claimed this long after its send is sent again (its message may be lost),
    # waiting as long again after each send (60 s, 120 s, 240 s, ... from its creation).
    "JOBS_RESEND_SECONDS": 60.0,
    # A queued job no worker claimed for this long fails; None: it waits (and is re-sent) forever.
    "JOBS_QUEUED_EXPIRE_SECONDS": None,
    # A finished job's row is removed this long after it finished (its outcome is then gone).
    "JOBS_KEEP_SECONDS": 7 * 24 * 3600.0,
    # How often one process removes expired rows (every reaper pass calls jobs_reap).
    "JOBS_CLEANUP_SECONDS": 300.0,
    # Per-kind overrides of a job type's values: {"datasets.process": {"lease_seconds": 5.0}}.
    "JOBS_KINDS": {},
}


def get(name: str) -> Any:
    """The setting `name`, or its default."""
    return getattr(settings, name, DEFAULTS[name])
