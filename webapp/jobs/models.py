"""A job: one piece of background work of a registered kind, its state, attempts and outcome.

The kind (webapp/jobs/registry.py) says what the work is, which queue runs it and how long its
row is kept; `subject_id` is the id of the object the work is about, its meaning the kind's
(the dataset of a "datasets.process" job). The worker that runs it is found by kind on the
workers side (workers/jobs.py).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone


class JobState(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"


UNFINISHED_STATES = (JobState.QUEUED, JobState.RUNNING)
FINISHED_STATES = (JobState.DONE, JobState.FAILED, JobState.CANCELLED)


class Job(models.Model):
    """One job. Every change of state is a conditional UPDATE in webapp/jobs/services.py.

    `attempts` counts claims: a worker's writes are fenced by the attempt it claimed, so a
    worker that lost its job (its lease ran out and another worker took it) writes nothing.
    `sent_at` is when the task was last sent; `send_owed` that the broker refused the last send
    (the reaper sends it again at its next pass). `beat_at` is the running worker's last sign
    of life (progress or heartbeat); `expires_at` when a finished job's row is removed.
    """

    kind = models.CharField(max_length=100)
    team = models.ForeignKey("accounts.Team", on_delete=models.CASCADE, related_name="jobs")
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="jobs",
    )
    subject_id = models.BigIntegerField(null=True, blank=True)
    state = models.CharField(max_length=10, choices=JobState.choices, default=JobState.QUEUED)
    # Fraction done (0..1) for kinds that report it; null before the first report.
    progress = models.FloatField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    max_attempts = models.PositiveIntegerField(default=1)
    params = models.JSONField(default=dict, blank=True)
    result = models.JSONField(null=True, blank=True)
    # {"message": ..., "code": ..., and whatever the kind adds (a DataError's row and column)}.
    error = models.JSONField(null=True, blank=True)
    send_owed = models.BooleanField(default=False)
    sent_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    beat_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            # The API's list: a team's jobs, by kind and state.
            models.Index(fields=["team", "kind", "state"], name="job_team_kind_state"),
            # A kind's job for an object (the processing job of a dataset).
            models.Index(fields=["kind", "subject_id"], name="job_kind_subject"),
            # The reaper's queries, each over the few rows it can act on.
            models.Index(fields=["id"], condition=Q(send_owed=True), name="job_send_owed"),
            models.Index(fields=["kind", "sent_at"], condition=Q(state="queued"), name="job_queued_sent"),
            models.Index(fields=["kind", "beat_at"], condition=Q(state="running"), name="job_running_beat"),
            models.Index(fields=["expires_at"], name="job_expires"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} #{self.pk} ({self.state})"

    @property
    def finished(self) -> bool:
        return self.state in FINISHED_STATES
