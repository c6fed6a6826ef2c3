"""The runs app's job kinds (webapp/jobs): an explanation's computation, a run's export and an
evaluation asked for asynchronously.

Each is one job about one object (`subject_id`): "runs.explain" about an explanation,
"runs.export" (ONNX and the zip) about a succeeded run, "runs.evaluate" about a run (its
`params` name the checkpoint; its result is the evaluation). What runs them is on the workers side
(workers/inference.py). The jobs framework sends, re-sends, expires and fails them; the hooks
here mirror the outcome onto the explanation or announce the export.

A run's export status is its latest export job's state (selectors.run_export_state). Its row is
removed after the default keep time like any job's: with no job left, the export's files say
whether it finished (ONNX tried and the zip made: "ready"), so a finished run needs no row
forever, and an export that failed long ago reads "none" and may be asked for again.
"""

from __future__ import annotations

from webapp.jobs.models import Job
from webapp.jobs.registry import JobType, job_types
from webapp.queues import RUNS_EVALUATE, RUNS_EXPLAIN, RUNS_EXPORT, SHORT_QUEUE


class ExplainJob(JobType):
    """Compute one explanation (subject_id: the explanation)."""

    kind = RUNS_EXPLAIN
    queue = SHORT_QUEUE
    # Still queued this long after its send: sent again (the message may be lost), backing off.
    resend_seconds = 60.0

    def on_failed(self, job: Job) -> None:
        """The explanation fails with the job's error: never left queued by a lost job."""
        from .explanations import explanation_fail

        if job.subject_id is not None:
            explanation_fail(explanation_id=job.subject_id, error=str((job.error or {}).get("message") or ""))


class ExportJob(JobType):
    """Add ONNX (where the graph allows it) and the zip to a succeeded run's export (subject_id:
    the run)."""

    kind = RUNS_EXPORT
    queue = SHORT_QUEUE
    # Exports take seconds; one still queued this long after its send is sent again.
    resend_seconds = 120.0

    def on_resent(self, job: Job, waited_s: float) -> None:
        """A line on the run's stream: the export waits, and was asked for again."""
        from ..models import Run
        from ..stream.events import event_emit

        if job.subject_id is not None and Run.objects.filter(pk=job.subject_id).exists():
            event_emit(run_id=job.subject_id, event={
                "type": "log", "level": "warning",
                "message": f"the export is still pending {int(waited_s)} s after it was last asked for; "
                           "asked again (its worker may have been lost)",
            })

    def on_done(self, job: Job) -> None:
        self._ended(job)

    def on_failed(self, job: Job) -> None:
        self._ended(job)

    def _ended(self, job: Job) -> None:
        """The run's version moves (its detail shows the export's state), then the outcome is
        announced on its stream."""
        from ..models import Run
        from .exports import run_export_announce

        if job.subject_id is not None:
            Run.objects.filter(pk=job.subject_id).touch()
            run_export_announce(run_id=job.subject_id)


class EvaluateJob(JobType):
    """Evaluate a run's final model or one checkpoint on its test split (subject_id: the run;
    params: {"checkpoint": name or null}); the result is the evaluation JSON, also stored."""

    kind = RUNS_EVALUATE
    queue = SHORT_QUEUE
    # One pass over the test split: seconds. Still queued this long after its send: sent again.
    resend_seconds = 60.0


job_types.register(ExplainJob())
job_types.register(EvaluateJob())
job_types.register(ExportJob())
