"""What the runs app tells the apps above it, without importing them.

`run_finished` is sent (after the commit) whenever a run reaches a terminal status: the worker's
outcome (`run_finish`), a cancel before training started (`run_cancel`), the reaper giving up
(`run_reap`). Receivers get `run_id` and `status`; the sweeps app schedules its next trials on it.
A receiver that raises is logged, never passed on to the run's own path.
"""

from __future__ import annotations

import logging

from django.db import transaction
from django.dispatch import Signal

logger = logging.getLogger(__name__)

run_finished = Signal()


def run_finished_send(*, run_id: int, status: str) -> None:
    """Send `run_finished` once the current transaction commits (at once outside one)."""

    def send() -> None:
        for receiver, result in run_finished.send_robust(sender=None, run_id=run_id, status=status):
            if isinstance(result, Exception):
                logger.error("run_finished receiver %r failed for run %s", receiver, run_id, exc_info=result)

    transaction.on_commit(send)
