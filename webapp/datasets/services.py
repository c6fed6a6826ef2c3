"""Writes for datasets: create from a built-in or an upload, process (check + summarise), delete."""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import ProtectedError

from webapp.accounts.models import Team
from webapp.api.errors import ServiceError

from .models import Dataset, DatasetKind, DatasetStatus

logger = logging.getLogger(__name__)

PROCESS_TASK = "datasets.process"
UPLOAD_SUFFIXES: dict[str, tuple[str, ...]] = {
    DatasetKind.CSV: (".csv", ".tsv", ".txt"),
    DatasetKind.IMAGES: (".zip",),
    DatasetKind.TENSORS: (".safetensors", ".npz"),
}


def data_limits() -> Any:
    """The engine's DataLimits with the service's upload size."""
    from engine.data import DataLimits

    return DataLimits(max_bytes=settings.NETLOOM_MAX_UPLOAD_BYTES)


def dataset_builtin_create(
    *,
    team: Team,
    name: str,
    builtin: str,
    options: dict[str, Any],
    created_by: AbstractBaseUser | None,
) -> Dataset:
    """Create a ready dataset from a built-in (scikit-learn or generated); nothing is downloaded."""
    from engine.data import BUILTIN_DATASETS, DataError

    if builtin not in BUILTIN_DATASETS:
        raise ServiceError(
            "invalid",
            f"Unknown built-in dataset {builtin!r}; available: {', '.join(BUILTIN_DATASETS)}.",
            field="builtin",
        )
    unknown = set(options) - {"seed"}
    if unknown:
        raise ServiceError(
            "invalid",
            f"Unknown option(s) for a built-in: {', '.join(sorted(unknown))}.",
            field="options",
        )
    source = {"kind": "builtin", "name": builtin, **options}
    try:
        summary = _summarize_source(source)
    except DataError as exc:
        raise ServiceError("invalid_dataset", str(exc), field=exc.field or "options") from None
    return Dataset.objects.create(
        team=team,
        name=name or builtin,
        kind=DatasetKind.BUILTIN,
        status=DatasetStatus.READY,
        options={"builtin": builtin, **options},
        recipe=source,
        summary=summary,
        created_by=created_by,
    )


def _summarize_source(source: dict[str, Any]) -> dict[str, Any]:
    from engine.data import DataRecipe, summarize

    recipe = DataRecipe.model_validate({"source": source})
    return summarize(recipe)


def dataset_upload_create(
    *,
    team: Team,
    name: str,
    kind: str,
    options: dict[str, Any],
    upload_path: Path,
    original_filename: str,
    created_by: AbstractBaseUser | None,
) -> Dataset:
    """Take over an uploaded file, create the dataset (processing) and process or queue it.

    The file at `upload_path` is moved into MEDIA_ROOT/datasets/<id>/; on any failure it is
    removed, so no half-stored dataset remains.
    """
    if kind not in UPLOAD_SUFFIXES:
        raise ServiceError(
            "invalid", f"Uploads must be one of {', '.join(UPLOAD_SUFFIXES)}.", field="kind"
        )
    suffix = Path(original_filename).suffix.lower()
    if suffix not in UPLOAD_SUFFIXES[kind]:
        raise ServiceError(
            "invalid",
            f"A {kind} upload must end with {' or '.join(UPLOAD_SUFFIXES[kind])} (got {original_filename!r}).",
            field="file",
        )
    dataset = Dataset.objects.create(
        team=team,
        name=name or Path(original_filename).stem[:200] or kind,
        kind=kind,
        status=DatasetStatus.PROCESSING,
        options=options,
        original_filename=os.path.basename(original_filename)[:255],
        size=upload_path.stat().st_size,
        created_by=created_by,
    )
    try:
        dataset.storage_dir.mkdir(parents=True, exist_ok=True)
        # A fixed name inside our own folder: the user's file name never becomes a path.
        destination = dataset.storage_dir / f"data{suffix}"
        os.replace(upload_path, destination)
        dataset.file = str(destination.relative_to(Path(settings.MEDIA_ROOT)))
        dataset.save(update_fields=["file", "updated_at"])
    except BaseException:
        _remove_files(dataset)
        dataset.delete()
        raise
    if settings.NETLOOM_DATASET_PROCESSING == "celery":
        dataset_id = dataset.pk
        transaction.on_commit(lambda: _queue_processing(dataset_id))
        return dataset
    return dataset_process(dataset.pk)


def _queue_processing(dataset_id: int) -> None:
    # webapp.celery, not celery.current_app: in the web process the current app would be
    # Celery's default (AMQP) unless webapp.celery had been imported first.
    from webapp.celery import app

    app.send_task(PROCESS_TASK, kwargs={"dataset_id": dataset_id}, queue="short")


def dataset_process(dataset_id: int) -> Dataset:
    """Check and summarise an uploaded dataset through the engine; idempotent.

    Ready or failed datasets are returned unchanged (a redelivered task is harmless). On a
    bad file the dataset becomes `failed` with the engine's error (row / column / entry
    named) and its files are removed.
    """
    from engine.data import DataError, inspect_upload

    dataset = Dataset.objects.get(pk=dataset_id)
    if dataset.status != DatasetStatus.PROCESSING:
        return dataset
    path = dataset.file_path
    try:
        if path is None or not path.is_file():
            raise DataError("the uploaded file is missing; upload it again")
        summary = inspect_upload(str(path), dataset.kind, dict(dataset.options), data_limits())
    except DataError as exc:
        return _fail(dataset, exc.to_json())
    except Exception as exc:  # a file the engine could not read at all: still the user's to fix
        logger.exception("dataset %s: processing failed", dataset_id)
        return _fail(
            dataset,
            {
                "message": f"could not read the file: {exc}",
                "row": None,
                "column": None,
                "entry": None,
                "field": None,
            },
        )
    dataset.summary = summary
    dataset.recipe = {"kind": dataset.kind, "path": str(path), **dataset.options}
    dataset.status = DatasetStatus.READY
    dataset.error = None
    dataset.save(update_fields=["summary", "recipe", "status", "error", "updated_at"])
    return dataset


def _fail(dataset: Dataset, error: dict[str, Any]) -> Dataset:
    _remove_files(dataset)
    dataset.status = DatasetStatus.FAILED
    dataset.error = error
    dataset.file = ""
    dataset.save(update_fields=["status", "error", "file", "updated_at"])
    return dataset


def _remove_files(dataset: Dataset) -> None:
    if dataset.pk is not None:
        shutil.rmtree(dataset.storage_dir, ignore_errors=True)


def dataset_rename(*, dataset: Dataset, name: str) -> Dataset:
    """Rename a dataset (its contents never change)."""
    name = name.strip()
    if not name:
        raise ServiceError("invalid", "A dataset needs a name.", field="name")
    dataset.name = name[:200]
    dataset.save(update_fields=["name", "updated_at"])
    return dataset


def dataset_delete(*, dataset: Dataset) -> None:
    """Delete a dataset and its files; refused (409) while runs use it."""
    storage = dataset.storage_dir
    try:
        with transaction.atomic():
            dataset.delete()
    except ProtectedError:
        raise ServiceError(
            "in_use", "Runs use this dataset; delete those runs first.", status_code=409
        ) from None
    # Files go only once the row is gone, so a refused delete leaves everything intact.
    shutil.rmtree(storage, ignore_errors=True)
