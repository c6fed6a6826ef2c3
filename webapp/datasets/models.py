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
        """Where a CSV's columnar copy (Arrow IPC) is kept, beside its file; it may not exist (older uploads)."""
        path = self.file_path
        return path.parent / "table.arrow" if path is not None else self.storage_dir / "table.arrow"

    @property
    def storage_dir(self) -> Path:
        """The folder that holds this dataset's files (removed with it)."""
        return Path(settings.MEDIA_ROOT) / "datasets" / str(self.pk)


BLOBS_FOLDER = "datasets/blobs"  # under MEDIA_ROOT: one folder per content digest


def blob_dir(digest: str) -> Path:
    """The content-addressed folder of the data whose sha256 is `digest` (its file and columnar copy)."""
    return Path(settings.MEDIA_ROOT) / BLOBS_FOLDER / digest[:2] / digest


class DatasetVersion(models.Model):
    """One immutable version of a dataset's data: its bytes (by digest), summary and options.

    `number` counts 1..n per dataset (given under the dataset's row lock). `digest` is the sha256
    of the stored bytes (a built-in's: of its generated data, engine.data.builtin.builtin_digest).
    `file` is relative to MEDIA_ROOT: version 1 of an upload keeps the dataset's own file
    (datasets/<id>/data.*); later versions live content-addressed under datasets/blobs/<ab>/<digest>/,
    so identical data is stored once. A version being processed or refused has `status`
    processing or failed (with the engine's `error`); only ready versions are used.
    """

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    status = models.CharField(max_length=12, choices=DatasetStatus.choices, default=DatasetStatus.READY)
    digest = models.CharField(max_length=64, blank=True, default="")
    size = models.BigIntegerField(default=0)
    file = models.CharField(max_length=500, blank=True, default="")
    original_filename = models.CharField(max_length=255, blank=True, default="")
    options = models.JSONField(default=dict, blank=True)
    recipe = models.JSONField(default=dict, blank=True)
    summary = models.JSONField(default=dict, blank=True)
    error = models.JSONField(null=True, blank=True)
    progress = models.FloatField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
        related_name="dataset_versions",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["dataset_id", "number"]
        constraints = [
            models.UniqueConstraint(fields=["dataset", "number"], name="dataset_version_number_unique")
        ]
        indexes = [models.Index(fields=["digest"], name="dataset_version_digest")]

    def __str__(self) -> str:
        return f"dataset {self.dataset_id} v{self.number} ({self.digest[:12]})"

    @property
    def file_path(self) -> Path | None:
        """Absolute path of the version's file, or None (built-ins)."""
        return Path(settings.MEDIA_ROOT) / self.file if self.file else None

    @property
    def table_path(self) -> Path | None:
        """A CSV version's columnar copy, beside its file (it may not exist)."""
        path = self.file_path
        return path.parent / "table.arrow" if path is not None else None
