"""A team's registered models, their versions, aliases and the history of every alias move.

A version is immutable: its files (the run's export bundle at registration: safetensors,
model.py, the preprocessing in data.json, export.json, ONNX when there is one) are copied into
the registry's own folder, so deleting the run breaks nothing; `source` keeps who the version came
from (run, checkpoint, graph revision, dataset) as it was. An alias names one version of its
model; every move is an AliasMove row, in the same transaction as the move.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class RegisteredModel(models.Model):
    """A named model of a team (`iris-classifier`), with numbered versions and aliases."""

    team = models.ForeignKey("accounts.Team", on_delete=models.CASCADE, related_name="registered_models")
    name = models.CharField(max_length=100)
    description = models.TextField(blank=True, default="")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="registered_models"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name", "id"]
        constraints = [models.UniqueConstraint(fields=["team", "name"], name="registeredmodel_unique_name")]

    def __str__(self) -> str:
        return self.name


class ModelVersion(models.Model):
    """Version `number` of a model: files copied from a run's export or one of its checkpoints."""

    model = models.ForeignKey(RegisteredModel, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    # The run it came from while that run exists; `source` keeps the facts after it is deleted.
    run = models.ForeignKey("runs.Run", on_delete=models.SET_NULL, null=True, blank=True,
                            related_name="model_versions")
    # {"run", "run_name", "checkpoint" (null: the run's final export), "graph", "graph_name",
    #  "revision", "dataset", "dataset_name", "task", "classes"}
    source = models.JSONField(default=dict)
    # The metrics recorded with those weights (the checkpoint's, or the run's final ones).
    metrics = models.JSONField(default=dict, blank=True)
    note = models.CharField(max_length=500, blank=True, default="")
    # Formats built for other runtimes, beside the version's files (a "registry.formats" job):
    # {"pt2": {"file", "size", "metric", "value", "fp32_value", "accuracy_delta", "max_abs_diff",
    #  "latency_ms": {"b1", "b64"}, "fp32_latency_ms": {...}, "threads", "built_at"}, "int8": ...};
    # a format the graph does not allow: {"error"}.
    formats = models.JSONField(default=dict, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="model_versions"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["model_id", "-number"]
        constraints = [models.UniqueConstraint(fields=["model", "number"], name="modelversion_unique_number")]

    def __str__(self) -> str:
        return f"{self.model} v{self.number}"


class ModelAlias(models.Model):
    """`production`, `staging`, ...: a name for one version of the model."""

    model = models.ForeignKey(RegisteredModel, on_delete=models.CASCADE, related_name="aliases")
    name = models.CharField(max_length=40)
    version = models.ForeignKey(ModelVersion, on_delete=models.PROTECT, related_name="aliases")
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["model", "name"], name="modelalias_unique_name")]


class AliasMove(models.Model):
    """One move of an alias: from a version (null: it was new) to a version (null: dropped)."""

    model = models.ForeignKey(RegisteredModel, on_delete=models.CASCADE, related_name="alias_moves")
    alias = models.CharField(max_length=40)
    from_version = models.PositiveIntegerField(null=True, blank=True)
    to_version = models.PositiveIntegerField(null=True, blank=True)
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+")
    note = models.CharField(max_length=500, blank=True, default="")
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-at", "-id"]
