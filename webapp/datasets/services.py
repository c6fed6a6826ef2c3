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
from django.utils import timezone

from webapp.accounts.models import Team
from webapp.errors import Conflict, DomainError, NotFound

from .models import Dataset, DatasetKind, DatasetStatus

logger = logging.getLogger(__name__)

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
        raise DomainError(
            "invalid",
            f"Unknown built-in dataset {builtin!r}; available: {', '.join(BUILTIN_DATASETS)}.",
            field="builtin",
        )
    unknown = set(options) - {"seed"}
    if unknown:
        raise DomainError(
            "invalid",
            f"Unknown option(s) for a built-in: {', '.join(sorted(unknown))}.",
            field="options",
        )
    source = {"kind": "builtin", "name": builtin, **options}
    try:
        summary = _summarize_source(source)
    except DataError as exc:
        raise DomainError("invalid_dataset", str(exc), field=exc.field or "options") from None
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
        raise DomainError(
            "invalid", f"Uploads must be one of {', '.join(UPLOAD_SUFFIXES)}.", field="kind"
        )
    suffix = Path(original_filename).suffix.lower()
    if suffix not in UPLOAD_SUFFIXES[kind]:
        raise DomainError(
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
    from .processing import processing_mode

    if processing_mode() == "celery":
        dataset_id = dataset.pk
        transaction.on_commit(lambda: _queue_processing(dataset_id))
        return dataset
    return dataset_process(dataset.pk)


def _queue_processing(dataset_id: int) -> bool:
    """Send datasets.process; False when the broker did not take it (never raises).

    The upload is committed: a broker that is down must not make it a 500 (a retrying client
    would upload twice). The dataset stays processing with `updated_at` at its creation, and
    the reaper sends the task again (dataset_resend_processing).
    """
    from webapp.celery import task_send_or_owe
    from webapp.queues import DATASETS_PROCESS

    return not task_send_or_owe(DATASETS_PROCESS, kwargs={"dataset_id": dataset_id})


def dataset_resend_processing(*, now: Any = None) -> list[int]:
    """Send datasets.process again for uploads left processing; their ids.

    A dataset whose row has not changed for NETLOOM_DATASET_RESEND_SECONDS (its send failed, the
    broker lost the message, or its worker was killed; reading writes progress, which keeps
    `updated_at` fresh) is sent again, waiting as long again after each send (60 s, 120 s,
    240 s, ... from its upload) so a slow queue costs few duplicates. `updated_at` records the
    send; only the reaper whose conditional UPDATE wins sends, and a send the broker refuses
    puts `updated_at` back, so the next pass tries again. A duplicate is harmless: processing
    returns at once unless the dataset is still processing.
    """
    from datetime import timedelta

    now = now or timezone.now()
    interval = timedelta(seconds=float(settings.NETLOOM_DATASET_RESEND_SECONDS))
    processing = Dataset.objects.filter(status=DatasetStatus.PROCESSING).exclude(file="")
    resent: list[int] = []
    for dataset_id, last, created_at in list(
        processing.filter(updated_at__lt=now - interval).values_list("pk", "updated_at", "created_at")
    ):
        if now - last < max(interval, last - created_at):
            continue  # backing off
        if not processing.filter(pk=dataset_id, updated_at=last).update(updated_at=now):
            continue  # another reaper sent it, or it moved on
        if _queue_processing(dataset_id):
            resent.append(dataset_id)
        else:
            processing.filter(pk=dataset_id, updated_at=now).update(updated_at=last)
    if resent:
        logger.warning("re-sent datasets.process for uploads left processing: %s", resent)
    return resent


def upload_leftovers_sweep(*, older_than_s: float) -> list[Path]:
    """Remove `MEDIA_ROOT/uploads/*.part` files older than `older_than_s` (uploads cut off by a crash)."""
    import time

    # uploads.incoming_dir() names the same folder; that module is HTTP-side (it raises 413s).
    folder = Path(settings.MEDIA_ROOT) / "uploads"
    if not folder.is_dir():
        return []
    cutoff = time.time() - older_than_s
    removed: list[Path] = []
    for path in folder.glob("*.part"):
        try:
            if path.stat().st_mtime <= cutoff:
                path.unlink()
                removed.append(path)
        except FileNotFoundError:
            continue
    return removed


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
    # A worker has it now: the reaper's re-send clock (dataset_resend_processing) starts again.
    Dataset.objects.filter(pk=dataset_id, status=DatasetStatus.PROCESSING).update(updated_at=timezone.now())
    try:
        summary = _inspect(dataset, dataset.options, progress=_progress_writer(dataset.pk))
    except DataError as exc:
        return _fail(dataset, exc.to_json())
    except Exception as exc:  # a file the engine could not read at all: still the user's to fix
        logger.exception("dataset %s: processing failed", dataset_id)
        return _fail(dataset, _unreadable(exc))
    dataset.summary = summary
    dataset.recipe = _source(dataset, dataset.options)
    dataset.status = DatasetStatus.READY
    dataset.error = None
    dataset.progress = 1.0
    dataset.save(update_fields=["summary", "recipe", "status", "error", "progress", "updated_at"])
    return dataset


def _inspect(dataset: Dataset, options: dict[str, Any], progress: Any = None) -> dict[str, Any]:
    """The engine's full check and summary of the stored file under `options` (DataError if bad).

    A CSV is parsed once into its columnar copy (`dataset.table_path`), kept while it matches
    the file and the options; the check, and later every run, reads that copy.
    """
    from engine.data import DataError, inspect_upload

    path = dataset.file_path
    if path is None or not path.is_file():
        raise DataError("the uploaded file is missing; upload it again")
    table = dataset.table_path if dataset.kind == DatasetKind.CSV else None
    return inspect_upload(
        str(path), dataset.kind, dict(options), data_limits(), table_path=table, progress=progress
    )


def _progress_writer(dataset_id: int) -> Any:
    """A progress callback that stores the fraction read, at most every 2% and 0.5 s."""
    import time

    last = {"value": -1.0, "at": 0.0}

    def write(fraction: float) -> None:
        now = time.monotonic()
        if fraction - last["value"] < 0.02 or (now - last["at"] < 0.5 and fraction < 1.0):
            return
        last.update(value=fraction, at=now)
        # updated_at too: the reaper takes a processing row that stays unchanged for lost.
        Dataset.objects.filter(pk=dataset_id).update(progress=round(fraction, 3), updated_at=timezone.now())

    return write


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
        raise DomainError("invalid", "A dataset needs a name.", field="name")
    dataset.name = name[:200]
    dataset.save(update_fields=["name", "updated_at"])
    return dataset


def csv_option_names() -> tuple[str, ...]:
    """The options a CSV dataset takes: the engine's CSV source fields besides kind and the files."""
    from engine.data.recipe import CsvSource

    return tuple(name for name in CsvSource.model_fields if name not in ("kind", "path", "table"))


def dataset_needs(*, dataset: Dataset) -> str | None:
    """What the user must still choose before the dataset can be trained on ("target"), or None."""
    if dataset.kind == DatasetKind.CSV and not dataset.options.get("target"):
        return "target"
    return None


def dataset_is_trainable(*, dataset: Dataset) -> bool:
    """Ready and nothing left to choose."""
    return dataset.status == DatasetStatus.READY and dataset_needs(dataset=dataset) is None


class DatasetCheckFailed(DomainError):
    """The stored file failed the engine's check under new options; `detail` is the DataError JSON.

    The error body carries it next to code/message/fields: `{"error": {..., "detail": {...}}}`.
    """

    def __init__(self, detail: dict[str, Any], *, field: str) -> None:
        super().__init__("invalid_dataset", detail["message"], field=field, extra={"detail": detail})
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
        raise DomainError(
            "invalid",
            f"Only CSV datasets take new options; a {dataset.kind} dataset is uploaded again instead.",
            field="options",
        )
    if dataset.status != DatasetStatus.READY:
        raise Conflict(
            "not_ready", f"The dataset is {dataset.status}; its options can change once it is ready."
        )
    allowed = csv_option_names()
    for name in options:
        if name not in allowed:
            raise DomainError(
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
            raise NotFound("not_found", "The dataset was deleted meanwhile.")
        _refuse_if_used(locked)
        locked.options = merged
        locked.recipe = _source(locked, merged)
        locked.summary = summary
        locked.save(update_fields=["options", "recipe", "summary", "updated_at"])
    dataset.refresh_from_db()
    return dataset


def _refuse_if_used(dataset: Dataset) -> None:
    if dataset.runs.exists():
        raise Conflict(
            "in_use",
            "Runs use this dataset and keep its recipe; upload the file again to train with other options.",
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
        raise Conflict("in_use", "Runs use this dataset; delete those runs first.") from None
    # Files go only once the row is gone, so a refused delete leaves everything intact.
    shutil.rmtree(storage, ignore_errors=True)
