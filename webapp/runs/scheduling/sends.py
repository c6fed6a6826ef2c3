"""Work of runs sent to the task queues by name after the commit.

Training is a Run with its lease: a runs.train token is sent with webapp/jobs/sending.py's
send_on_commit, and a send the broker refused is recorded as owed on the run (`queued_send_owed`);
the reaper (scheduling/reaper.py::run_resend_queued) sends it again. Exports and explanations are
jobs (webapp/jobs): created here and in inference/, sent and re-sent by the jobs framework. The
webapp never imports workers: tasks are queued by name (webapp/queues.py).
"""

from __future__ import annotations

from django.conf import settings
from django.db import transaction

from webapp.jobs.models import Job
from webapp.jobs.sending import send_on_commit
from webapp.jobs.services import job_create
from webapp.queues import KUBERNETES_QUEUE, RUNS_EXPORT, RUNS_KUBERNETES, RUNS_TRAIN

from ..models import Run, RunStatus
from ..stream.events import event_emit


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

    if settings.NETLOOM_RUNNER == "kubernetes":
        # The run becomes a Kubernetes Job: Kueue orders the Jobs, not the claim loop.
        send_on_commit(RUNS_KUBERNETES, [run_id], queue=KUBERNETES_QUEUE, owed=owed)
        return

    def queue() -> str | None:
        need = Run.objects.filter(pk=run_id).values_list("need_kind", "need_devices").first()
        return train_queue(*need) if need else None

    send_on_commit(RUNS_TRAIN, [run_id], queue=queue, owed=owed)


def export_job_create(*, run: Run) -> Job:
    """Create the "runs.export" job (ONNX and the zip) of a succeeded run: its export is pending
    until the job ends (selectors.run_export_state)."""
    job = job_create(kind=RUNS_EXPORT, team=run.team, owner=run.created_by, subject_id=run.pk)
    Run.objects.filter(pk=run.pk).touch()  # the detail shows the export's state (api/detail.py)
    return job
