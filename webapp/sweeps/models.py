"""Sweeps and their trials: the sweep's own rows are the Optuna study's storage (webapp/sweeps/study.py)."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class SweepStatus(models.TextChoices):
    """Where a sweep is: running until every trial has ended, then succeeded (or failed: none completed)."""

    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    CANCELLED = "cancelled", "Cancelled"
    FAILED = "failed", "Failed"


class SweepStrategy(models.TextChoices):
    """How the next trial's parameters are chosen (Optuna samplers)."""

    GRID = "grid", "Grid"
    RANDOM = "random", "Random"
    TPE = "tpe", "TPE (Bayesian)"


class SweepPruner(models.TextChoices):
    """How poor trials are stopped early (Optuna pruners), fed by each epoch's objective."""

    NONE = "none", "None"
    MEDIAN = "median", "Median"
    SUCCESSIVE_HALVING = "successive_halving", "Successive halving"
    HYPERBAND = "hyperband", "Hyperband"


class TrialState(models.TextChoices):
    """Where a trial is. `running` is not stored: a queued trial whose run trains reads as running."""

    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    COMPLETE = "complete", "Complete"
    PRUNED = "pruned", "Pruned"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


ACTIVE_TRIAL_STATES = (TrialState.QUEUED, TrialState.RUNNING)


class Sweep(models.Model):
    """A base (graph revision, dataset, config) and a search space, explored by up to `budget` trials."""

    team = models.ForeignKey("accounts.Team", on_delete=models.CASCADE, related_name="sweeps")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="sweeps"
    )
    name = models.CharField(max_length=200)
    graph_revision = models.ForeignKey("graphs.GraphRevision", on_delete=models.PROTECT, related_name="sweeps")
    dataset = models.ForeignKey("datasets.Dataset", on_delete=models.PROTECT, related_name="sweeps")
    # The base TrainConfig as parsed (engine defaults filled in); a trial sets its space keys on it.
    config = models.JSONField()
    transforms = models.JSONField(null=True, blank=True)
    split = models.JSONField(null=True, blank=True)
    # {key: {"type": "float"|"int"|"categorical", ...}}; keys are config paths or nodes.<id>.<param>.
    space = models.JSONField()
    strategy = models.CharField(max_length=10, choices=SweepStrategy.choices)
    pruner = models.CharField(max_length=20, choices=SweepPruner.choices, default=SweepPruner.NONE)
    objective = models.JSONField()  # {"metric": "val/loss", "mode": "min"}
    budget = models.PositiveIntegerField()  # trials at most (a grid: at most its size)
    parallelism = models.PositiveIntegerField()
    seed = models.BigIntegerField(default=0)
    status = models.CharField(max_length=10, choices=SweepStatus.choices, default=SweepStatus.RUNNING,
                              db_index=True)
    error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    # Touched by the conditional UPDATE that serialises the sweep's scheduling (services._sweep_lock).
    updated_at = models.DateTimeField(auto_now=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"sweep {self.pk} {self.name!r} ({self.status})"

    @property
    def is_finished(self) -> bool:
        """True once the sweep has ended (succeeded, cancelled or failed)."""
        return self.status != SweepStatus.RUNNING


class SweepTrial(models.Model):
    """One point of the space: its parameters, its run, its objective per epoch and at the end."""

    sweep = models.ForeignKey(Sweep, on_delete=models.CASCADE, related_name="trials")
    number = models.PositiveIntegerField()  # 1, 2, 3 ... in the order asked
    # Null for a trial refused before it was queued (its config or graph did not validate).
    run = models.OneToOneField("runs.Run", on_delete=models.SET_NULL, null=True, blank=True,
                               related_name="sweep_trial")
    params = models.JSONField(default=dict)  # {space key: value}
    state = models.CharField(max_length=10, choices=TrialState.choices, default=TrialState.QUEUED)
    # The best objective value over the trial's epochs (complete and pruned trials).
    value = models.FloatField(null=True, blank=True)
    intermediate = models.JSONField(default=list, blank=True)  # [[epoch, value], ...]
    reason = models.TextField(blank=True, default="")  # why it was pruned, failed or cancelled
    # Optuna's own bookkeeping of the trial (GridSampler's grid id, successive halving's rungs).
    system_attrs = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["sweep_id", "number"]
        constraints = [models.UniqueConstraint(fields=["sweep", "number"], name="sweeptrial_unique_number")]

    def __str__(self) -> str:
        return f"trial {self.number} of sweep {self.sweep_id} ({self.state})"
