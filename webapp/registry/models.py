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
    # The second admin who approved the move, when the team asks for approval (the actor then
    # is the one who asked for it).
    approved_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                                    related_name="+")
    note = models.CharField(max_length=500, blank=True, default="")
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-at", "-id"]


class ApprovalStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    APPROVED = "approved", "Approved"
    REJECTED = "rejected", "Rejected"


class AliasApproval(models.Model):
    """A request to move a guarded alias, waiting for a second admin of the team.

    `from_version` is what the alias named when the request was filed: approving a request
    after the alias moved some other way is refused as stale, since the person approving
    judged the move against a version that is no longer the one replaced.
    """

    model = models.ForeignKey(RegisteredModel, on_delete=models.CASCADE, related_name="approvals")
    alias = models.CharField(max_length=40)
    version = models.ForeignKey(ModelVersion, on_delete=models.CASCADE, related_name="approvals")
    from_version = models.PositiveIntegerField(null=True, blank=True)
    note = models.CharField(max_length=500, blank=True, default="")
    status = models.CharField(max_length=10, choices=ApprovalStatus.choices, default=ApprovalStatus.PENDING)
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True,
                                     related_name="+")
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                                   related_name="+")
    decided_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["model", "status"], name="aliasapproval_model_status")]

    def __str__(self) -> str:
        return f"{self.model} {self.alias} -> v{self.version.number} ({self.status})"
