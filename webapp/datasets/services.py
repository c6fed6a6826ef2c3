"""Writes for datasets: create from a built-in or an upload, process (check + summarise),
change a CSV's options (re-checked), rename, delete; and whether a dataset can be trained on.

A dataset's later versions are versions.py's; the engine's check of a stored file, which both use,
is inspection.py's."""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import ProtectedError
from django.utils import timezone

from webapp.accounts.models import Team
from webapp.audit.services import audit_record
from webapp.errors import Conflict, DomainError, NotFound

from .digests import builtin_options_digest, file_digest
from .inspection import UPLOAD_SUFFIXES, inspect_stored, recipe_source, unreadable, upload_suffix
from .models import Dataset, DatasetKind, DatasetStatus, DatasetVersion
from .versions import blob_release, dataset_version_process, version_fail

logger = logging.getLogger(__name__)

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
    with transaction.atomic():
        dataset = Dataset.objects.create(
            team=team,
            name=name or builtin,
            kind=DatasetKind.BUILTIN,
            status=DatasetStatus.READY,
            options={"builtin": builtin, **options},
            recipe=source,
            summary=summary,
            created_by=created_by,
        )
        _first_version(dataset, digest=builtin_options_digest(dataset.options))
        _audit_created(dataset)
    return dataset


def _first_version(dataset: Dataset, *, digest: str) -> DatasetVersion:
    """Version 1 of a dataset that just became ready: its file where it is, its summary and options."""
    version, _ = DatasetVersion.objects.get_or_create(
        dataset=dataset, number=1,
        defaults={"status": DatasetStatus.READY, "digest": digest, "size": dataset.size, "file": dataset.file,
                  "original_filename": dataset.original_filename, "options": dataset.options,
                  "recipe": dataset.recipe, "summary": dataset.summary, "progress": 1.0,
                  "created_by": dataset.created_by},
    )
    return version


def _audit_created(dataset: Dataset) -> None:
    audit_record(action="dataset.created", actor=dataset.created_by, team=dataset.team, obj=dataset,
                 after={"name": dataset.name, "kind": dataset.kind, "options": dataset.options,
                        "original_filename": dataset.original_filename or None})


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
    suffix = upload_suffix(kind, original_filename)
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
        # The dataset is whole from here: its entry in the audit log goes in with the file's name.
        with transaction.atomic():
            dataset.file = str(destination.relative_to(Path(settings.MEDIA_ROOT)))
            dataset.save(update_fields=["file", "updated_at"])
            _audit_created(dataset)
    except BaseException:
        _remove_files(dataset)
        dataset.delete()
        raise
    from .processing import processing_mode

    if processing_mode() == "celery":
        _queue_processing(dataset)
        return dataset
    return dataset_process(dataset.pk)


def _queue_processing(dataset: Dataset) -> None:
    """Create the dataset's processing job; the short-queue worker runs it after the commit.

    The upload is committed whatever the broker says: a broker that is down must not make it a
    500 (a retrying client would upload twice). The job's send is then owed and the reaper sends
    it once the broker is back (webapp/jobs/services.py::jobs_resend), as it re-sends a job still
    queued long after its send.
    """
    from webapp.jobs.services import job_create
    from webapp.queues import DATASETS_PROCESS

    try:
        job_create(kind=DATASETS_PROCESS, team=dataset.team, owner=dataset.created_by, subject_id=dataset.pk)
    except BaseException:
        _remove_files(dataset)
        dataset.delete()
        raise


def upload_leftovers_sweep(*, older_than_s: float) -> list[Path]:
    """Remove `MEDIA_ROOT/uploads/*.part` files nobody is writing: their writer on this host is gone
    (a killed web process: the name holds its pid and host, uploads.upload_file_name), or they are
    older than `older_than_s` (uploads cut off by a crash elsewhere)."""
    import socket
    import time

    # uploads.incoming_dir() names the same folder; that module is HTTP-side (it raises 413s).
    folder = Path(settings.MEDIA_ROOT) / "uploads"
    if not folder.is_dir():
        return []
    cutoff = time.time() - older_than_s
    host = socket.gethostname()
    removed: list[Path] = []
    for path in folder.glob("*.part"):
        try:
            if _writer_gone(path.name.removesuffix(".part"), host) or path.stat().st_mtime <= cutoff:
                path.unlink()
                removed.append(path)
        except FileNotFoundError:
            continue
    return removed


def _writer_gone(stem: str, host: str) -> bool:
    """True when `<random>-<pid>-<host>` names a process of this host that no longer runs."""
    parts = stem.split("-", 2)
    if len(parts) != 3 or parts[2] != host or not parts[1].isdigit():
        return False
    try:
        os.kill(int(parts[1]), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # alive, another user's
    return False


def dataset_process(dataset_id: int, *, progress: Callable[[float], Any] | None = None) -> Dataset:
    """Check and summarise an uploaded dataset through the engine; idempotent.

    Ready or failed datasets are returned unchanged (a job run again is harmless). On a bad
    file the dataset becomes `failed` with the engine's error (row / column / entry named) and
    its files are removed. `progress`, given, also hears the fraction read (the job's reporter).
    """
    from engine.data import DataError

    dataset = Dataset.objects.get(pk=dataset_id)
    if dataset.status == DatasetStatus.READY:
        # A later version waits for its check (the same job kind, subject the dataset).
        for pending in dataset.versions.filter(status=DatasetStatus.PROCESSING).order_by("number"):
            dataset_version_process(pending.pk, progress=progress)
        dataset.refresh_from_db()
        return dataset
    if dataset.status != DatasetStatus.PROCESSING:
        return dataset
    try:
        summary = inspect_stored(dataset, dataset.options, progress=_progress_writer(dataset.pk, also=progress))
    except DataError as exc:
        return _fail(dataset, exc.to_json())
    except Exception as exc:  # a file the engine could not read at all: still the user's to fix
        logger.exception("dataset %s: processing failed", dataset_id)
        return _fail(dataset, unreadable(exc))
    dataset.summary = summary
    dataset.recipe = recipe_source(dataset, dataset.options)
    dataset.status = DatasetStatus.READY
    dataset.error = None
    dataset.progress = 1.0
    digest = file_digest(dataset.file_path) if dataset.file_path is not None else ""
    with transaction.atomic():
        dataset.save(update_fields=["summary", "recipe", "status", "error", "progress", "updated_at"])
        _first_version(dataset, digest=digest)
    return dataset


def _progress_writer(dataset_id: int, also: Callable[[float], Any] | None = None) -> Any:
    """A progress callback that stores the fraction read, at most every 2% and 0.5 s (and passes
    it on to `also`, the job's reporter)."""
    import time

    last = {"value": -1.0, "at": 0.0}

    def write(fraction: float) -> None:
        now = time.monotonic()
        if fraction - last["value"] < 0.02 or (now - last["at"] < 0.5 and fraction < 1.0):
            return
        last.update(value=fraction, at=now)
        Dataset.objects.filter(pk=dataset_id).update(progress=round(fraction, 3), updated_at=timezone.now())
        if also is not None:
            also(fraction)

    return write


def dataset_processing_failed(*, dataset_id: int, error: dict[str, Any]) -> None:
    """The processing job failed without the dataset knowing (its worker was lost too often):
    a dataset (or a new version of it) still processing fails with the job's message; its files are removed."""
    message = error.get("message") or "processing failed"
    for version in DatasetVersion.objects.filter(dataset_id=dataset_id, status=DatasetStatus.PROCESSING):
        version_fail(version, {"message": message, "row": None, "column": None, "entry": None, "field": None})
    dataset = Dataset.objects.filter(pk=dataset_id, status=DatasetStatus.PROCESSING).first()
    if dataset is None:
        return
    _fail(dataset, {"message": message, "row": None, "column": None, "entry": None, "field": None})


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


def dataset_rename(*, dataset: Dataset, name: str, actor: AbstractBaseUser | None = None) -> Dataset:
    """Rename a dataset (its contents never change); `actor`: who, for the audit log."""
    name = name.strip()
    if not name:
        raise DomainError("invalid", "A dataset needs a name.", field="name")
    before = dataset.name
    with transaction.atomic():
        dataset.name = name[:200]
        dataset.save(update_fields=["name", "updated_at"])
        if dataset.name != before:
            audit_record(action="dataset.renamed", actor=actor, team=dataset.team, obj=dataset,
                         before={"name": before}, after={"name": dataset.name})
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


def dataset_options_update(
    *, dataset: Dataset, options: dict[str, Any], actor: AbstractBaseUser | None = None
) -> Dataset:
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
        summary = inspect_stored(dataset, merged)
    except DataError as exc:
        raise DatasetCheckFailed(exc.to_json(), field=_option_field(exc, merged)) from None
    except Exception as exc:
        logger.exception("dataset %s: re-check failed", dataset.pk)
        raise DatasetCheckFailed(unreadable(exc), field="options") from None
    with transaction.atomic():
        # Locking the row also holds back a run being created on it meanwhile (its foreign key
        # needs the row); one that got in while the file was read is caught by the second look.
        locked = Dataset.objects.select_for_update().filter(pk=dataset.pk).first()
        if locked is None:
            raise NotFound("not_found", "The dataset was deleted meanwhile.")
        _refuse_if_used(locked)
        before = locked.options
        locked.options = merged
        locked.recipe = recipe_source(locked, merged)
        locked.summary = summary
        locked.save(update_fields=["options", "recipe", "summary", "updated_at"])
        # The version holding this file takes the new reading of the same bytes (no run uses it).
        DatasetVersion.objects.filter(dataset=locked, file=locked.file, status=DatasetStatus.READY).update(
            options=merged, recipe=locked.recipe, summary=summary)
        if merged != before:
            audit_record(action="dataset.options_changed", actor=actor, team=locked.team, obj=locked,
                         before={"options": before}, after={"options": merged})
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


def dataset_delete(*, dataset: Dataset, actor: AbstractBaseUser | None = None) -> None:
    """Delete a dataset and its files; refused (409) while runs use it."""
    from webapp.jobs.services import jobs_cancel
    from webapp.queues import DATASETS_PROCESS

    storage = dataset.storage_dir
    dataset_id = dataset.pk
    files = list(dataset.versions.exclude(file="").values_list("file", flat=True))
    try:
        with transaction.atomic():
            audit_record(action="dataset.deleted", actor=actor, team=dataset.team, obj=dataset,
                         before={"name": dataset.name, "kind": dataset.kind})
            dataset.delete()
            jobs_cancel(kind=DATASETS_PROCESS, subject_id=dataset_id)
    except ProtectedError:
        raise Conflict("in_use", "Runs use this dataset; delete those runs first.") from None
    # Files go only once the row is gone, so a refused delete leaves everything intact.
    shutil.rmtree(storage, ignore_errors=True)
    for file in files:
        blob_release(file)
