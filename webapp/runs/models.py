"""Runs, their metric points and events (one sequence per run), checkpoints, explanations."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models

from .expressions import metric_index_expressions


class RunStatus(models.TextChoices):
    """Where a run is in its life (DESIGN.md "Runs")."""

    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"
    INTERRUPTED = "interrupted", "Interrupted"
    # A sweep's trial stopped by its pruner (the reason is in `error`); ends like a cancel.
    PRUNED = "pruned", "Pruned"


TERMINAL_STATUSES = frozenset({RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.CANCELLED, RunStatus.PRUNED})


class ExportStatus(models.TextChoices):
    """Where the export (ONNX and the zip) of a succeeded run is: its latest "runs.export" job's
    state (webapp/runs/selectors.py::run_export_state)."""

    NONE = "none", "Not asked for"
    PENDING = "pending", "Queued or running"
    READY = "ready", "Done"
    FAILED = "failed", "Failed"


class RunQuerySet(models.QuerySet):
    """Every bulk UPDATE of runs moves their `version` too, so no write path can forget it."""

    def update(self, **kwargs: Any) -> int:
        kwargs.setdefault("version", models.F("version") + 1)
        return super().update(**kwargs)

    update.alters_data = True  # type: ignore[attr-defined]

    def touch(self) -> int:
        """Move the runs' version alone: something their detail shows changed elsewhere (a
        graph or dataset renamed, the creator's name)."""
        return self.update()


class Run(models.Model):
    """A graph revision trained on a dataset with a config, owned by a team.

    `version` moves with every write of the row (RunQuerySet.update, save) and when a name the
    detail shows changes elsewhere (signals.py): the detail's cache key (detail.py).
    """

    objects = RunQuerySet.as_manager()

    team = models.ForeignKey("accounts.Team", on_delete=models.CASCADE, related_name="runs")
    graph_revision = models.ForeignKey(
        "graphs.GraphRevision", on_delete=models.PROTECT, related_name="runs"
    )
    # Null only for a run that recorded imported weights (origin {"kind": "import"}): nothing trained.
    dataset = models.ForeignKey(
        "datasets.Dataset", on_delete=models.PROTECT, related_name="runs", null=True, blank=True
    )
    # The exact data the run trains on, for ever (resume, fine-tune, evaluation read it, never "latest").
    dataset_version = models.ForeignKey(
        "datasets.DatasetVersion", on_delete=models.PROTECT, related_name="runs", null=True, blank=True
    )
    # What people call it and note about it (editable; the runs table searches them).
    name = models.CharField(max_length=200, blank=True, default="")
    notes = models.TextField(blank=True, default="")
    tags = models.JSONField(default=list, blank=True)  # distinct short strings
    # Where the weights start: {} (from scratch), or {"run": id, "checkpoint": name,
    # "mode": "finetune" | "resume", "plan": the init plan (loaded / mismatched / new / unused)}.
    # The checkpoint is copied into the run's own folder (`init/`) when the run is created.
    init = models.JSONField(default=dict, blank=True)
    # Who made it besides its creator: {} or {"sweep": id, "trial": number} (a sweep's trial), or
    # {"kind": "import", "file": name}: weights uploaded for a revision, kept as checkpoint `imported`.
    origin = models.JSONField(default=dict, blank=True)
    # The run this one repeats (POST /api/runs/<id>/reproduce/): same revision, data, config, init.
    reproduces = models.ForeignKey("self", on_delete=models.SET_NULL, null=True, blank=True,
                                   related_name="reproductions")
    # The Netloom that created it: {"netloom": package version, "commit": git commit or absent}.
    code_version = models.JSONField(default=dict, blank=True)
    # The whole validated TrainConfig (engine defaults filled in), so a run can be repeated.
    config = models.JSONField()
    # The whole DataRecipe (source with its current path, transforms, split) the run trains on.
    recipe = models.JSONField(default=dict)
    status = models.CharField(
        max_length=12, choices=RunStatus.choices, default=RunStatus.QUEUED, db_index=True
    )
    # Progress, refreshed by the worker's recorder a few times a second at most.
    epoch = models.FloatField(default=0.0)
    step = models.BigIntegerField(default=0)
    total_steps = models.BigIntegerField(null=True, blank=True)
    eta_seconds = models.FloatField(null=True, blank=True)
    latest_metrics = models.JSONField(default=dict, blank=True)
    final_metrics = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True, default="")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="runs"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # Worker-lost handling: each lease taken counts as an attempt.
    attempts = models.PositiveIntegerField(default=0)
    max_attempts = models.PositiveIntegerField(default=3)
    # Fencing: only the holder of lease_token may write the run's events and outcome.
    lease_token = models.CharField(max_length=32, null=True, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    worker = models.CharField(max_length=200, blank=True, default="")
    # The devices of that worker the run trains on ("cpu", "cpu x2", "cuda:0,cuda:1"); kept after it ends.
    device = models.CharField(max_length=200, blank=True, default="")
    # What the run needs from a worker (webapp/runs/scheduling/devices.py::run_need, from config device and
    # processes): its train queue is train.<need_kind>.<need_devices> (webapp/queues.py).
    need_kind = models.CharField(max_length=3, default="any")
    need_devices = models.PositiveSmallIntegerField(default=1)
    # Order inside its team's queued runs (higher first); editors set -10..10 (services.run_update).
    priority = models.SmallIntegerField(default=0)
    cancel_requested = models.BooleanField(default=False)
    # Set when the worker training the run shuts down (a scale-down, a drain, SIGTERM): the run
    # stops within a step, checkpoints and is queued again for another worker (workers/training.py).
    drain_requested = models.BooleanField(default=False)
    # When runs.train was last sent for this run while queued (create, requeue, the reaper's
    # re-send of a message the broker may have lost); null on runs older than this field.
    queued_sent_at = models.DateTimeField(null=True, blank=True)
    # True while runs.train is owed: its send failed (the broker was down); the reaper sends it.
    queued_send_owed = models.BooleanField(default=False)
    # Why a queued run waits, as the cluster says it (NETLOOM_RUNNER=kubernetes: its Kueue
    # Workload's condition, or its pods' scheduling; workers/kubernetes.py); "" on the Celery path.
    waiting_detail = models.CharField(max_length=1000, blank=True, default="")
    # Last sequence number handed to one of this run's events (metric points share their event's).
    event_seq = models.BigIntegerField(default=0)
    # Moves with every change of what the run's detail shows (see the class docstring).
    version = models.BigIntegerField(default=0)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["status", "lease_expires_at"], name="run_status_lease"),
            # The runs page: a team's runs newest first, and by a headline metric best first
            # (expressions.py; docs/decisions/0023-runs-expression-indexes.md).
            models.Index(fields=["team", "-created_at", "-id"], name="run_team_created"),
            models.Index(*metric_index_expressions("val/accuracy"), name="run_team_val_accuracy"),
            models.Index(*metric_index_expressions("val/loss"), name="run_team_val_loss"),
        ]

    def __str__(self) -> str:
        return f"run {self.pk} ({self.status})"

    def save(self, *args: Any, **kwargs: Any) -> None:
        """Save, moving `version` (also when only some fields are saved)."""
        if self.pk is not None:
            self.version = models.F("version") + 1
            fields = kwargs.get("update_fields")
            if fields is not None:
                kwargs["update_fields"] = {*fields, "version"}
        super().save(*args, **kwargs)
        if isinstance(self.version, models.expressions.Combinable):
            self.refresh_from_db(fields=["version"])

    @property
    def fraction(self) -> float | None:
        """Share of the planned steps done, 0..1 (None before the worker knows the total)."""
        if not self.total_steps:
            return None
        return min(1.0, self.step / self.total_steps)

    @property
    def is_finished(self) -> bool:
        """True once the run has reached a terminal status."""
        return self.status in TERMINAL_STATUSES


class WorkerKind(models.TextChoices):
    """What a worker trains on."""

    CPU = "cpu", "CPU"
    GPU = "gpu", "GPU"


class Worker(models.Model):
    """A Celery worker as it last announced itself (at start and on every reaper pass).

    `queues` are the ones it consumes ("short", train.<kind>.<n>); a worker without a train queue
    only runs short jobs. Alive while `last_seen` is newer than the run lease (selectors).
    """

    hostname = models.CharField(max_length=200, unique=True)
    kind = models.CharField(max_length=3, choices=WorkerKind.choices, default=WorkerKind.CPU)
    devices = models.JSONField(default=list, blank=True)
    capacity = models.PositiveSmallIntegerField(default=1)
    queues = models.JSONField(default=list, blank=True)
    current_run = models.ForeignKey(Run, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    started_at = models.DateTimeField()
    last_seen = models.DateTimeField(db_index=True)

    class Meta:
        ordering = ["hostname"]

    def __str__(self) -> str:
        return f"worker {self.hostname} ({self.kind} x{self.capacity})"

    @property
    def trains(self) -> bool:
        """True when it consumes a train queue."""
        return any(str(name).startswith("train.") for name in self.queues)


class RunEvent(models.Model):
    """A non-metric event of a run's stream (status, log, checkpoint, explanation), or a metric
    event whose points redone steps replaced in the metric store (kept so the replay has its seq)."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="events")
    seq = models.BigIntegerField()
    type = models.CharField(max_length=20)
    data = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "seq"], name="runevent_unique_run_seq")]
        ordering = ["run_id", "seq"]

    def __str__(self) -> str:
        return f"{self.type} #{self.seq} of run {self.run_id}"


class Checkpoint(models.Model):
    """A checkpoint directory the trainer completed on disk, one row per folder name.

    `name` is the folder: `epoch-0003` (at intervals), `step-0000120` (written when the run was
    cancelled), `best` (rewritten whenever the monitored metric improves: its row moves with it).
    """

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="checkpoints")
    name = models.CharField(max_length=100)
    step = models.BigIntegerField()
    epoch = models.FloatField()
    path = models.CharField(max_length=500)
    # The validation metrics the weights had when written ({} without a validation split).
    metrics = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run", "name"], name="checkpoint_unique_run_name")
        ]
        ordering = ["run_id", "step", "name"]

    def __str__(self) -> str:
        return f"checkpoint of run {self.run_id} at step {self.step}"


class ExplanationStatus(models.TextChoices):
    """Where an explanation job is."""

    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"


class Explanation(models.Model):
    """Attributions of a trained run's model for one sample (computed on the short queue)."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="explanations")
    method = models.CharField(max_length=40)
    # {"index": 3} (a test-split row) or {"input": [...]} (a raw sample)
    sample = models.JSONField()
    target = models.IntegerField(null=True, blank=True)
    layer = models.CharField(max_length=100, blank=True, default="")
    status = models.CharField(
        max_length=10, choices=ExplanationStatus.choices, default=ExplanationStatus.QUEUED
    )
    result = models.JSONField(null=True, blank=True)
    png_path = models.CharField(max_length=500, blank=True, default="")
    error = models.TextField(blank=True, default="")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="explanations"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.method} explanation {self.pk} of run {self.run_id}"


class RunView(models.Model):
    """A team's saved view of the runs list: a filter expression (webapp/runs/query.py), an
    ordering and the columns shown, under a name the team picks."""

    team = models.ForeignKey("accounts.Team", on_delete=models.CASCADE, related_name="run_views")
    name = models.CharField(max_length=100)
    filter = models.TextField(blank=True, default="")
    ordering = models.CharField(max_length=200, blank=True, default="")
    # Column keys of the runs table ("metrics.val/accuracy", "config.optimizer.lr", "nodes.fc1.out_features").
    columns = models.JSONField(default=list, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="run_views"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name", "id"]
        constraints = [models.UniqueConstraint(fields=["team", "name"], name="runview_unique_name")]

    def __str__(self) -> str:
        return f"view {self.name!r} of team {self.team_id}"
