"""The one Celery task of jobs (`jobs.run`, args [job_id]) and the handlers it runs, by kind.

A job's kind is registered on the web side (webapp/jobs/registry.py: queue, attempts, lease, keep
time); what runs it is registered here, since the webapp never imports workers:

    @job_handler("datasets.process")
    def process_dataset_job(job: Job, progress: Progress) -> dict | None:
        ...                    # call the app's service; progress(fraction) as the work goes
        return {...}           # the job's result (JSON); raise JobFailed(error) for a failure

The task claims the job (queued -> running, one more attempt: a duplicate delivery, or one for a
job another worker runs or that finished, returns at once), beats while the handler runs (every
quarter of the kind's lease, so only a lost worker lets the lease run out), and records the
outcome: done with the result, or failed with the error (JobFailed's, or "internal" for any
other exception; failures are not retried, only a lost worker's job runs again). Every write is
fenced by the attempt it claimed (webapp/jobs/services.py).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from django.db import connection

from webapp.celery import app
from webapp.jobs.models import Job
from webapp.jobs.registry import UnknownJobKind, job_types
from webapp.jobs.services import job_beat, job_claim, job_claim_fairest, job_error, job_finish
from webapp.queues import JOBS_RUN

logger = logging.getLogger(__name__)


class JobFailed(Exception):
    """Raised by a handler: the job fails with `error` ({"message", "code", ...}, or a message)."""

    def __init__(self, error: dict[str, Any] | str, *, code: str = "failed") -> None:
        if isinstance(error, str):
            error = job_error(error, code=code)
        self.error = {"code": code, **error}
        super().__init__(self.error.get("message", ""))


class Progress:
    """What a handler calls with the fraction done (0..1): stored at most every 1% and 0.5 s
    (the last one always) when the kind reports progress, and a heartbeat in any case.
    `lost` turns True once the job is no longer this attempt's (reaped, cancelled)."""

    def __init__(self, *, job_id: int, attempt: int, reports: bool) -> None:
        self.job_id, self.attempt, self.reports = job_id, attempt, reports
        self.lost = False
        self._last = (-1.0, 0.0)  # (fraction stored, monotonic time)

    def __call__(self, fraction: float) -> None:
        now = time.monotonic()
        stored, at = self._last
        if self.lost or (fraction - stored < 0.01 and fraction < 1.0) or (now - at < 0.5 and fraction < 1.0):
            return
        self._last = (fraction, now)
        held = job_beat(job_id=self.job_id, attempt=self.attempt, progress=fraction if self.reports else None)
        self.lost = not held


Handler = Callable[[Job, Progress], dict[str, Any] | None]
HANDLERS: dict[str, Handler] = {}


def job_handler(kind: str) -> Callable[[Handler], Handler]:
    """Register the function that runs jobs of `kind` on this worker."""

    def register(handler: Handler) -> Handler:
        known = HANDLERS.get(kind)
        if known is not None and known is not handler:
            raise ValueError(f"job kind {kind!r} already has a handler: {known.__qualname__}")
        HANDLERS[kind] = handler
        return handler

    return register


def handler_for(kind: str) -> Handler | None:
    """The handler of `kind`. The modules that register handlers are the Celery app's `include`
    (webapp/celery.py): a worker has imported them; any other caller imports them here once."""
    if kind not in HANDLERS:
        app.loader.import_default_modules()
    return HANDLERS.get(kind)


@app.task(name=JOBS_RUN, acks_late=True, reject_on_worker_lost=True)
def run_job(job_id: int) -> str:
    """Run one job of any kind (thin: job_execute does it)."""
    return job_execute(int(job_id))


def job_execute(job_id: int) -> str:
    """Claim the job, run its kind's handler, record the outcome; what happened, in a word.

    A kind this worker has no handler for is left queued (not claimed): a worker that has one
    takes it at a re-send.
    """
    kind = Job.objects.filter(pk=job_id).values_list("kind", flat=True).first()
    if kind is None:
        return "missing"
    handler = handler_for(kind)
    if handler is None:
        logger.error("job %s: no handler for kind %r on this worker; left queued", job_id, kind)
        return "no handler"
    try:
        job_type = job_types.get(kind)
        reports, lease, fair = job_type.reports_progress, float(job_type.value("lease_seconds")), job_type.fair
    except UnknownJobKind:
        reports, lease, fair = False, 60.0, False
    # A fair kind's message is a token: it runs whichever queued job of the kind is due.
    job = job_claim_fairest(kind=kind) if fair else job_claim(job_id=job_id)
    if job is None:
        return "not queued"  # a duplicate delivery, or running elsewhere, finished, cancelled
    progress = Progress(job_id=job.pk, attempt=job.attempts, reports=reports)
    stop = threading.Event()
    beating = threading.Thread(
        target=_beat, args=(job.pk, job.attempts, lease / 4, stop), name=f"job-{job.pk}-beat", daemon=True
    )
    beating.start()
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    try:
        result = handler(job, progress)
    except JobFailed as exc:
        error = exc.error
    except Exception as exc:
        logger.exception("job %s (%s) failed", job_id, kind)
        error = job_error(
            f"internal error ({type(exc).__name__}: {exc}); the administrators have the details",
            code="internal",
        )
    finally:
        stop.set()
        beating.join(timeout=10)
    if not job_finish(job_id=job.pk, attempt=job.attempts, result=result, error=error):
        return "lost"  # reaped or cancelled meanwhile: its outcome is not this attempt's to write
    return "failed" if error is not None else "done"


def _beat(job_id: int, attempt: int, interval: float, stop: threading.Event) -> None:
    """Renew the job's lease every `interval` seconds until `stop` (or the job is lost)."""
    try:
        while not stop.wait(max(interval, 0.05)):
            try:
                if not job_beat(job_id=job_id, attempt=attempt):
                    return
            except Exception:  # a beat that fails (a lock, a blip) is tried again at the next one
                logger.exception("job %s: heartbeat failed; trying again", job_id)
    finally:
        connection.close()  # this thread's own database connection
