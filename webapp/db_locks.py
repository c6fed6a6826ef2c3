"""Writes that wait out a locked SQLite database instead of dropping what they write.

SQLite lets one connection write at a time. With the default settings (WAL, IMMEDIATE
transactions, a busy timeout: webapp/settings.py SQLITE_OPTIONS) a writer waits for the lock
at BEGIN; past the timeout, or on a connection without those options, the write fails with
OperationalError("database is locked"). `retry_while_locked` runs a write again with back-off
for that error only, and re-raises it when it still fails, so the caller fails loudly rather
than go on with a hole. PostgreSQL never says "locked": there it is one call.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

from django.db import OperationalError, connection

logger = logging.getLogger(__name__)

T = TypeVar("T")


def is_locked(exc: BaseException) -> bool:
    """True for SQLite's "database is locked" / "database table is locked" / busy errors."""
    text = str(exc).lower()
    return isinstance(exc, OperationalError) and ("locked" in text or "busy" in text)


def retry_while_locked(write: Callable[[], T], *, what: str, attempts: int = 6, first_wait: float = 0.2) -> T:
    """`write()` (which opens its own transaction), again after 0.2, 0.4, 0.8 ... s while the
    database is locked; the last error re-raised after `attempts` tries.

    Inside a caller's transaction there is nothing to retry (the caller's transaction is broken
    too): one call.
    """
    if connection.in_atomic_block:
        return write()
    wait = first_wait
    for attempt in range(1, attempts + 1):
        try:
            return write()
        except OperationalError as exc:
            if not is_locked(exc) or attempt == attempts:
                raise
            logger.warning("%s: %s (try %d of %d); again in %.1f s", what, exc, attempt, attempts, wait)
            time.sleep(wait)
            wait *= 2
    raise AssertionError("unreachable")  # pragma: no cover
