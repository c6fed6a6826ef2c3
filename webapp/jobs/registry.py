"""Job types by kind: what the webapp knows of each kind of background work.

An app declares a kind by registering a JobType (Baserow's core/jobs does the same):

    class DatasetProcessJob(JobType):
        kind = "datasets.process"
        reports_progress = True
        def on_failed(self, job): ...            # mirror the failure onto the dataset

    job_types.register(DatasetProcessJob())       # at app start (AppConfig.ready)

What runs the work lives on the workers side (workers/jobs.py: kind -> handler), since the
webapp never imports workers; one Celery task (`jobs.run`) runs a job of any kind.

Numbers left None take the JOBS_* setting (webapp/jobs/conf.py); JOBS_KINDS overrides them per
kind. A subclass may make any of them a property (read from its own setting at each use).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from webapp.queues import SHORT_QUEUE

from . import conf

if TYPE_CHECKING:
    from .models import Job


class UnknownJobKind(KeyError):
    """No job type is registered under this kind."""


class JobType:
    """One kind of job. Subclass it, set `kind`, and register an instance."""

    kind: str = ""
    # The Celery queue its `jobs.run` messages go to (webapp/queues.py).
    queue: str = SHORT_QUEUE
    # Whether its handler reports a fraction done (the job's `progress`).
    reports_progress: bool = False
    # Whether a message of this kind is a token: the worker that takes it runs the fairest queued
    # job of the kind (the team whose last such job started least recently, then the oldest), not
    # the one it names (services.job_claim_fairest). One message per queued job either way.
    fair: bool = False
    # None: the JOBS_* setting of the same name (upper case).
    max_attempts: int | None = None
    lease_seconds: float | None = None
    resend_seconds: float | None = None
    queued_expire_seconds: float | None = None
    keep_seconds: float | None = None

    def value(self, name: str) -> Any:
        """The number `name` for this kind: JOBS_KINDS, else the type's own, else JOBS_<NAME>."""
        override = conf.get("JOBS_KINDS").get(self.kind, {})
        if name in override:
            return override[name]
        own = getattr(self, name)
        return conf.get(f"JOBS_{name.upper()}") if own is None else own

    def on_done(self, job: Job) -> None:
        """Called in the transaction that records the job done: announce the outcome on the
        subject (its state now reads done). `job.result` is set."""

    def on_resent(self, job: Job, waited_s: float) -> None:
        """Called after the reaper sent a queued job again because it waited `waited_s` seconds
        since its last send (its message may be lost): say so on the subject, if the kind wants."""

    def on_failed(self, job: Job) -> None:
        """Called in the transaction that fails the job (its handler raised, its worker was lost
        too often, or it waited too long): mirror the failure onto the subject. `job.error` is set."""


class JobTypeRegistry:
    """Job types by kind."""

    def __init__(self) -> None:
        self._types: dict[str, JobType] = {}

    def register(self, job_type: JobType) -> JobType:
        """Add a job type; registering another type under a taken kind is an error."""
        if not job_type.kind:
            raise ValueError(f"{type(job_type).__name__} has no kind")
        known = self._types.get(job_type.kind)
        if known is not None and type(known) is not type(job_type):
            raise ValueError(f"job kind {job_type.kind!r} is already {type(known).__name__}'s")
        self._types[job_type.kind] = job_type
        return job_type

    def unregister(self, kind: str) -> None:
        """Remove a kind (tests that register their own)."""
        self._types.pop(kind, None)

    def get(self, kind: str) -> JobType:
        try:
            return self._types[kind]
        except KeyError:
            raise UnknownJobKind(kind) from None

    def __contains__(self, kind: object) -> bool:
        return kind in self._types

    def __iter__(self) -> Iterator[JobType]:
        return iter(list(self._types.values()))

    def kinds(self) -> list[str]:
        return sorted(self._types)


job_types = JobTypeRegistry()
