"""Sending a task after the commit, owing a send the broker refused, and the re-send back-off.

Generic: any work queued by task name uses these (jobs here; runs.train, which has its own
tokens). The webapp never imports workers and never lets a broker that is down turn a committed
write into a 500: a refused send calls `owed(error)`, which records it, and the reaper sends it
again (webapp/jobs/services.py::jobs_resend for jobs).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction

logger = logging.getLogger(__name__)

Queue = str | Callable[[], str | None] | None


def send_now(task_name: str, args: Sequence[Any], *, queue: Queue = None) -> str:
    """Send task `task_name` with `args` now; "" when the broker took it, else why not (never raises).

    `queue` is a queue name, a callable that names it at send time (None: the task's own queue,
    webapp/queues.py::TASK_QUEUES), or None.
    """
    from webapp.celery import task_send_or_owe

    name = queue() if callable(queue) else queue
    return task_send_or_owe(task_name, args=list(args), queue=name)


def send_on_commit(
    task_name: str, args: Sequence[Any], *, queue: Queue = None, owed: Callable[[str], None]
) -> None:
    """After the current transaction commits (at once outside one), send the task; when the broker
    refuses it, call `owed(error)` to record the send as owed. Never raises into the request: a
    failing `owed` is logged (robust on_commit)."""
    args = list(args)

    def send() -> None:
        error = send_now(task_name, args, queue=queue)
        if error:
            owed(error)

    transaction.on_commit(send, robust=True)


def backed_off(*, now: datetime, last: datetime, origin: datetime, interval: float) -> bool:
    """True while a re-send must wait: it is due once the work has waited as long again as it had
    at the last send (`last`, counted from `origin`, its creation) and at least `interval` seconds.

    A lost message cannot be told from one waiting behind long work, so each re-send doubles the
    wait (60 s, 120 s, 240 s, ... for a 60 s interval): a long wait costs only a few duplicates.
    """
    return now - last < max(timedelta(seconds=interval), last - origin)
