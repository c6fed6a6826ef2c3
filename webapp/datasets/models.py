"""Dataset: a team's built-in or uploaded data, ready once the engine has checked and summarised it."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.db import models


class DatasetKind(models.TextChoices):
    """Where the data comes from."""

    BUILTIN = "builtin", "Built in"
    CSV = "csv", "CSV table"
    IMAGES = "images", "Image archive (zip, one folder per class)"
    TENSORS = "tensors", "Tensors (.safetensors / .npz)"


class DatasetStatus(models.TextChoices):
    """Processing state; only ready datasets can be trained on."""

    PROCESSING = "processing", "Processing"
    READY = "ready", "Ready"
    FAILED = "failed", "Failed"


class Dataset(models.Model):
    """A dataset owned by a team.

    `options` are what the user chose (target, features, size, channels ...); `recipe` is the
    engine's `source` entry of a DataRecipe built from them; `summary` is the engine's summary;
    `error` is the engine's DataError JSON when processing failed. `file` is relative to
    MEDIA_ROOT and empty for built-ins and failed uploads. A CSV also has its columnar copy,
    `table_path` (Arrow IPC, written once when it is processed), in the same folder.
    """

    team = models.ForeignKey("accounts.Team", on_delete=models.CASCADE, related_name="datasets")
    name = models.CharField(max_length=200)
    kind = models.CharField(max_length=10, choices=DatasetKind.choices)
    status = models.CharField(
        max_length=12, choices=DatasetStatus.choices, default=DatasetStatus.PROCESSING
    )
    options = models.JSONField(default=dict, blank=True)
    recipe = models.JSONField(default=dict, blank=True)
    summary = models.JSONField(default=dict, blank=True)
    error = models.JSONField(null=True, blank=True)
    file = models.CharField(max_length=500, blank=True, default="")
    original_filename = models.CharField(max_length=255, blank=True, default="")
    size = models.BigIntegerField(default=0)
    # Fraction of the file read while processing (0..1); 1 once ready, null before any reading.
    progress = models.FloatField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="datasets",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["team", "status"], name="dataset_team_status")]

    def __str__(self) -> str:
        return f"{self.name} ({self.kind}, {self.status})"

    @property
    def file_path(self) -> Path | None:
        """Absolute path of the stored file, or None."""
        return Path(settings.MEDIA_ROOT) / self.file if self.file else None

    @property
    def table_path(self) -> Path:
        """Where a CSV's columnar copy (Arrow IPC) is kept; it may not exist (older uploads)."""
        return self.storage_dir / "table.arrow"

    @property
    def storage_dir(self) -> Path:
        """The folder that holds this dataset's files (removed with it)."""
        return Path(settings.MEDIA_ROOT) / "datasets" / str(self.pk)
