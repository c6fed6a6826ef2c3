"""Work sent to the task queues by name after the commit, and the back-off of a re-send.

When the broker is down the send is recorded as owed on the row; the reaper (scheduling/reaper.py)
sends it again. The webapp never imports workers: tasks are queued by name (webapp/queues.py).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db import transaction

from webapp.queues import RUNS_EXPLAIN, RUNS_EXPORT, RUNS_TRAIN

from ..models import Explanation, ExplanationStatus, ExportStatus, Run, RunStatus
from ..stream.events import event_emit


def _task_send(name: str, *, args: list[Any]) -> str:
    """Queue a task by name on its queue; "" when sent, else why not (never raises).

    The webapp never imports workers, and Celery loads late. A broker that is down must not
    turn a committed write into a 500: the caller records the send as owed and run_reap sends it.
    """
    from webapp.celery import task_send_or_owe

    return task_send_or_owe(name, args=args)


def _send_on_commit(name: str, pk: int, *, owed: Any) -> None:
    """After the commit, send task `name` for `pk`; on failure call `owed(error)` (never raises)."""

    def send() -> None:
        error = _task_send(name, args=[pk])
        if error:
            owed(error)

    # robust: even a failing `owed` write is logged, never raised into the committed request.
    transaction.on_commit(send, robust=True)


def _queue_train(run_id: int, *, announce: bool = True) -> None:
    """Send a runs.train token to the run's need queue after the commit; when the broker is down,
    mark it owed for the reaper.

    The token carries the run's id, but the worker that takes it claims the fairest fitting
    queued run (run_claim), which may be another one: one token per queued run.
    """
    from webapp.queues import train_queue

    def owed(error: str) -> None:
        with transaction.atomic():
            marked = Run.objects.filter(pk=run_id, status=RunStatus.QUEUED).update(queued_send_owed=True)
            if marked and announce:
                event_emit(run_id=run_id, event={
                    "type": "log", "level": "warning",
                    "message": "the task queue is unreachable; training is asked for again as soon "
                               f"as it is back (nothing to do on your side): {error}",
                })

    def send() -> None:
        from webapp.celery import task_send_or_owe

        need = Run.objects.filter(pk=run_id).values_list("need_kind", "need_devices").first()
        queue = train_queue(*need) if need else None
        error = task_send_or_owe(RUNS_TRAIN, args=[run_id], queue=queue)
        if error:
            owed(error)

    transaction.on_commit(send, robust=True)


def _backed_off(*, now: Any, last: Any, origin: Any, interval: float) -> bool:
    """True while a re-send must wait: it is due once the work has waited as long again as it
    had at the last send (and at least `interval`), so a long wait costs only a few duplicates."""
    return now - last < max(timedelta(seconds=interval), last - origin)


_UNFINISHED_EXPLANATION = (ExplanationStatus.QUEUED, ExplanationStatus.RUNNING)


def _queue_explain(explanation_id: int) -> None:
    """Send runs.explain after the commit; when the broker is down, mark it owed (sent_at null)."""

    def owed(error: str) -> None:
        Explanation.objects.filter(pk=explanation_id, status__in=_UNFINISHED_EXPLANATION).update(sent_at=None)

    _send_on_commit(RUNS_EXPLAIN, explanation_id, owed=owed)


def _queue_export(run_id: int) -> None:
    """Send runs.export after the commit; a broker error leaves the export pending and owed
    (export_sent_at null), and the reaper sends it once the broker is back (run_export_resend)."""

    def owed(error: str) -> None:
        Run.objects.filter(pk=run_id, export_status=ExportStatus.PENDING).update(export_sent_at=None)

    _send_on_commit(RUNS_EXPORT, run_id, owed=owed)
