"""Writes for datasets: create from a built-in or an upload, process (check + summarise),
change a CSV's options (re-checked), rename, delete; and whether a dataset can be trained on."""

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
    from engine.data import DataError

    dataset = Dataset.objects.get(pk=dataset_id)
    if dataset.status != DatasetStatus.PROCESSING:
        return dataset
    try:
        summary = _inspect(dataset, dataset.options)
    except DataError as exc:
        return _fail(dataset, exc.to_json())
    except Exception as exc:  # a file the engine could not read at all: still the user's to fix
        logger.exception("dataset %s: processing failed", dataset_id)
        return _fail(dataset, _unreadable(exc))
    dataset.summary = summary
    dataset.recipe = _source(dataset, dataset.options)
    dataset.status = DatasetStatus.READY
    dataset.error = None
    dataset.save(update_fields=["summary", "recipe", "status", "error", "updated_at"])
    return dataset


def _inspect(dataset: Dataset, options: dict[str, Any]) -> dict[str, Any]:
    """The engine's full check and summary of the stored file under `options` (DataError if bad)."""
    from engine.data import DataError, inspect_upload

    path = dataset.file_path
    if path is None or not path.is_file():
        raise DataError("the uploaded file is missing; upload it again")
    return inspect_upload(str(path), dataset.kind, dict(options), data_limits())


def _source(dataset: Dataset, options: dict[str, Any]) -> dict[str, Any]:
    # split/transforms are recipe siblings of the source, never source keys (the engine forbids
    # unknown keys there), so a run's recipe stays valid whatever the upload's options held.
    chosen = {k: v for k, v in options.items() if k not in ("split", "transforms")}
    return {"kind": dataset.kind, "path": str(dataset.file_path), **chosen}


def _unreadable(exc: Exception) -> dict[str, Any]:
    return {
        "message": f"could not read the file: {exc}",
        "row": None,
        "column": None,
        "entry": None,
        "field": None,
    }


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


def csv_option_names() -> tuple[str, ...]:
    """The options a CSV dataset takes: the engine's CSV source fields besides kind and path."""
    from engine.data.recipe import CsvSource

    return tuple(name for name in CsvSource.model_fields if name not in ("kind", "path"))


def dataset_needs(*, dataset: Dataset) -> str | None:
    """What the user must still choose before the dataset can be trained on ("target"), or None."""
    if dataset.kind == DatasetKind.CSV and not dataset.options.get("target"):
        return "target"
    return None


def dataset_is_trainable(*, dataset: Dataset) -> bool:
    """Ready and nothing left to choose."""
    return dataset.status == DatasetStatus.READY and dataset_needs(dataset=dataset) is None


class DatasetCheckFailed(ServiceError):
    """The stored file failed the engine's check under new options; `detail` is the DataError JSON."""

    def __init__(self, detail: dict[str, Any], *, field: str) -> None:
        super().__init__("invalid_dataset", detail["message"], field=field)
        self.detail = detail


def dataset_options_update(*, dataset: Dataset, options: dict[str, Any]) -> Dataset:
    """Re-check a ready CSV's stored file with changed options; on success they replace the old ones.

    `options` is a merge patch: a key given replaces the stored one, null removes it (the engine's
    default applies). The file goes through the same engine check as upload processing; options,
    recipe and summary are written together in one transaction, only once the check passed. A
    failed check raises DatasetCheckFailed (400, row/column named) and changes nothing, the file
    included. Refused with 409 `in_use` while runs use the dataset, since each run stores the
    recipe it was made from.
    """
    from engine.data import DataError

    if dataset.kind != DatasetKind.CSV:
        raise ServiceError(
            "invalid",
            f"Only CSV datasets take new options; a {dataset.kind} dataset is uploaded again instead.",
            field="options",
        )
    if dataset.status != DatasetStatus.READY:
        raise ServiceError(
            "not_ready",
            f"The dataset is {dataset.status}; its options can change once it is ready.",
            status_code=409,
        )
    allowed = csv_option_names()
    for name in options:
        if name not in allowed:
            raise ServiceError(
                "invalid",
                f"Unknown CSV option {name!r}; a CSV takes {', '.join(allowed)}.",
                field=f"options.{name}",
            )
    _refuse_if_used(dataset)
    merged = {k: v for k, v in {**dataset.options, **options}.items() if v is not None}
    try:
        summary = _inspect(dataset, merged)
    except DataError as exc:
        raise DatasetCheckFailed(exc.to_json(), field=_option_field(exc, merged)) from None
    except Exception as exc:
        logger.exception("dataset %s: re-check failed", dataset.pk)
        raise DatasetCheckFailed(_unreadable(exc), field="options") from None
    with transaction.atomic():
        # Locking the row also holds back a run being created on it meanwhile (its foreign key
        # needs the row); one that got in while the file was read is caught by the second look.
        locked = Dataset.objects.select_for_update().filter(pk=dataset.pk).first()
        if locked is None:
            raise ServiceError("not_found", "The dataset was deleted meanwhile.", status_code=404)
        _refuse_if_used(locked)
        locked.options = merged
        locked.recipe = _source(locked, merged)
        locked.summary = summary
        locked.save(update_fields=["options", "recipe", "summary", "updated_at"])
    dataset.refresh_from_db()
    return dataset


def _refuse_if_used(dataset: Dataset) -> None:
    if dataset.runs.exists():
        raise ServiceError(
            "in_use",
            "Runs use this dataset and keep its recipe; upload the file again to train with other options.",
            status_code=409,
        )


def _option_field(exc: Any, options: dict[str, Any]) -> str:
    """The request field an engine error belongs to ("source.target" -> "options.target")."""
    if exc.field and exc.field.startswith("source."):
        return "options." + exc.field.removeprefix("source.")
    if exc.column is not None and exc.column == options.get("target"):
        return "options.target"  # e.g. a one-class target: the choice is what to change
    return "options"


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
