"""Writes for datasets: create from a built-in or an upload, process (check + summarise),
change a CSV's options (re-checked), rename, delete; and whether a dataset can be trained on."""

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
from .models import Dataset, DatasetKind, DatasetStatus, DatasetVersion, blob_dir

logger = logging.getLogger(__name__)

UPLOAD_SUFFIXES: dict[str, tuple[str, ...]] = {
    DatasetKind.CSV: (".csv", ".tsv", ".txt"),
    DatasetKind.IMAGES: (".zip",),
    DatasetKind.TENSORS: (".safetensors", ".npz"),
}


def data_limits() -> Any:
    """The engine's DataLimits with the service's upload size and archive limits."""
    from engine.data import DataLimits

    return DataLimits(
        max_bytes=settings.NETLOOM_MAX_UPLOAD_BYTES,
        max_entries=settings.NETLOOM_MAX_ARCHIVE_ENTRIES,
        max_image_pixels=settings.NETLOOM_MAX_IMAGE_PIXELS,
        max_total_pixels=settings.NETLOOM_MAX_ARCHIVE_PIXELS,
    )


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
        summary = _inspect(dataset, dataset.options, progress=_progress_writer(dataset.pk, also=progress))
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
    digest = file_digest(dataset.file_path) if dataset.file_path is not None else ""
    with transaction.atomic():
        dataset.save(update_fields=["summary", "recipe", "status", "error", "progress", "updated_at"])
        _first_version(dataset, digest=digest)
    return dataset


def _inspect(dataset: Dataset | DatasetVersion, options: dict[str, Any], progress: Any = None) -> dict[str, Any]:
    """The engine's full check and summary of the stored file under `options` (DataError if bad).

    A CSV is parsed once into its columnar copy (`dataset.table_path`), kept while it matches
    the file and the options; the check, and later every run, reads that copy. `dataset` may be
    a version (its own file and copy).
    """
    from engine.data import DataError, inspect_upload

    if isinstance(dataset, DatasetVersion):
        kind = dataset.dataset.kind
        path, table = dataset.file_path, dataset.table_path
        if path is None or not path.is_file():
            raise DataError("the uploaded file is missing; upload it again")
        return inspect_upload(str(path), kind, dict(options), data_limits(),
                              table_path=table if kind == DatasetKind.CSV else None, progress=progress)
    path = dataset.file_path
    if path is None or not path.is_file():
        raise DataError("the uploaded file is missing; upload it again")
    table = dataset.table_path if dataset.kind == DatasetKind.CSV else None
    return inspect_upload(
        str(path), dataset.kind, dict(options), data_limits(), table_path=table, progress=progress
    )


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
        _version_fail(version, {"message": message, "row": None, "column": None, "entry": None, "field": None})
    dataset = Dataset.objects.filter(pk=dataset_id, status=DatasetStatus.PROCESSING).first()
    if dataset is None:
        return
    _fail(dataset, {"message": message, "row": None, "column": None, "entry": None, "field": None})


def _source(dataset: Dataset | DatasetVersion, options: dict[str, Any]) -> dict[str, Any]:
    # split/transforms are recipe siblings of the source, never source keys (the engine forbids
    # unknown keys there), so a run's recipe stays valid whatever the upload's options held.
    chosen = {k: v for k, v in options.items() if k not in ("split", "transforms")}
    kind = dataset.dataset.kind if isinstance(dataset, DatasetVersion) else dataset.kind
    return {"kind": kind, "path": str(dataset.file_path), **chosen}


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
        before = locked.options
        locked.options = merged
        locked.recipe = _source(locked, merged)
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
        _blob_release(file)



# --- versions -----------------------------------------------------------------------------

VERSION_RUNS_NAMED = 20  # a refused delete names at most this many runs


def dataset_latest_version(*, dataset: Dataset) -> DatasetVersion | None:
    """The newest ready version (what a new run trains on unless it names one)."""
    return dataset.versions.filter(status=DatasetStatus.READY).order_by("-number").first()


def dataset_version_upload(
    *,
    dataset: Dataset,
    upload_path: Path,
    original_filename: str,
    options: dict[str, Any] | None,
    created_by: AbstractBaseUser | None,
) -> DatasetVersion:
    """Make version n+1 of an uploaded dataset from a new file; processed as an upload is.

    The file's sha256 is taken first: bytes equal to one of the dataset's versions are refused
    (409 `duplicate_version` naming it) and the upload removed. Otherwise the version is numbered
    under the dataset's row lock, its file moved into the content-addressed store (a blob another
    version already holds is kept once) and checked by the engine under `options` (default: the
    previous version's) in the request or on the datasets worker, as a new upload is.
    """
    try:
        kind = dataset.kind
        if kind == DatasetKind.BUILTIN:
            raise DomainError("invalid", "A built-in dataset has one version; upload a file as a new dataset.",
                              field="file")
        if dataset.status != DatasetStatus.READY:
            raise Conflict("not_ready", f"The dataset is {dataset.status}; a new version follows a ready one.")
        suffix = Path(original_filename).suffix.lower()
        if suffix not in UPLOAD_SUFFIXES[kind]:
            raise DomainError(
                "invalid",
                f"A {kind} upload must end with {' or '.join(UPLOAD_SUFFIXES[kind])} (got {original_filename!r}).",
                field="file",
            )
        digest = file_digest(upload_path)
        _refuse_duplicate(dataset, digest)
        size = upload_path.stat().st_size
        with transaction.atomic():
            locked = Dataset.objects.select_for_update().get(pk=dataset.pk)
            _refuse_duplicate(locked, digest)
            previous = dataset_latest_version(dataset=locked)
            chosen = dict(previous.options if previous is not None else locked.options) if options is None else options
            number = (locked.versions.order_by("-number").values_list("number", flat=True).first() or 0) + 1
            folder = blob_dir(digest)
            folder.mkdir(parents=True, exist_ok=True)
            destination = folder / f"data{suffix}"
            if destination.is_file():
                upload_path.unlink(missing_ok=True)  # the same bytes are stored already
            else:
                os.replace(upload_path, destination)
            version = DatasetVersion.objects.create(
                dataset=locked, number=number, status=DatasetStatus.PROCESSING, digest=digest, size=size,
                file=str(destination.relative_to(Path(settings.MEDIA_ROOT))),
                original_filename=os.path.basename(original_filename)[:255], options=chosen,
                created_by=created_by,
            )
            audit_record(action="dataset.version_created", actor=created_by, team=locked.team, obj=locked,
                         after={"version": number, "digest": digest, "size": size})
    finally:
        upload_path.unlink(missing_ok=True)
    from .processing import processing_mode

    if processing_mode() == "celery":
        from webapp.jobs.services import job_create
        from webapp.queues import DATASETS_PROCESS

        job_create(kind=DATASETS_PROCESS, team=dataset.team, owner=created_by, subject_id=dataset.pk)
        return version
    return dataset_version_process(version.pk)


def _refuse_duplicate(dataset: Dataset, digest: str) -> None:
    same = dataset.versions.filter(digest=digest).exclude(status=DatasetStatus.FAILED).first()
    if same is not None:
        raise Conflict("duplicate_version",
                       f"Version {same.number} of dataset {dataset.name!r} holds these same bytes "
                       f"(sha256 {digest[:12]}); nothing was stored.", field="file",
                       extra={"version": {"number": same.number, "digest": same.digest}})


def dataset_version_process(version_id: int, *, progress: Callable[[float], Any] | None = None) -> DatasetVersion:
    """Check and summarise a new version through the engine (as an upload); idempotent.

    Ready, the dataset's own fields (file, options, recipe, summary) follow it when it is the
    newest ready version; refused, the version is `failed` with the engine's error and its blob
    goes unless another version holds the same bytes.
    """
    from engine.data import DataError

    version = DatasetVersion.objects.select_related("dataset").get(pk=version_id)
    if version.status != DatasetStatus.PROCESSING:
        return version

    def write(fraction: float) -> None:
        DatasetVersion.objects.filter(pk=version_id).update(progress=round(fraction, 3))
        if progress is not None:
            progress(fraction)

    try:
        summary = _inspect(version, version.options, progress=write)
    except DataError as exc:
        return _version_fail(version, exc.to_json())
    except Exception as exc:
        logger.exception("dataset version %s: processing failed", version_id)
        return _version_fail(version, _unreadable(exc))
    with transaction.atomic():
        dataset = Dataset.objects.select_for_update().get(pk=version.dataset_id)
        version.summary = summary
        version.recipe = _source(version, version.options)
        version.status = DatasetStatus.READY
        version.error = None
        version.progress = 1.0
        version.save(update_fields=["summary", "recipe", "status", "error", "progress"])
        _dataset_follow_latest(dataset)
    return version


def _dataset_follow_latest(dataset: Dataset) -> None:
    """The dataset's own fields mirror its newest ready version (what previews and new runs read)."""
    latest = dataset_latest_version(dataset=dataset)
    if latest is None or latest.file == dataset.file and latest.summary == dataset.summary:
        return
    dataset.file, dataset.options, dataset.recipe = latest.file, latest.options, latest.recipe
    dataset.summary, dataset.size = latest.summary, latest.size
    dataset.original_filename = latest.original_filename
    dataset.save(update_fields=["file", "options", "recipe", "summary", "size", "original_filename", "updated_at"])


def _version_fail(version: DatasetVersion, error: dict[str, Any]) -> DatasetVersion:
    file = version.file
    version.status = DatasetStatus.FAILED
    version.error = error
    version.file = ""
    version.save(update_fields=["status", "error", "file"])
    _blob_release(file)
    return version


def _blob_release(file: str) -> None:
    """Remove a stored file (and its columnar copy) once no version refers to it any more."""
    if not file or DatasetVersion.objects.filter(file=file).exists():
        return
    path = Path(settings.MEDIA_ROOT) / file
    if Path(settings.MEDIA_ROOT, "datasets", "blobs") in path.parents:
        shutil.rmtree(path.parent, ignore_errors=True)
    else:  # a version 1 kept in its dataset's folder
        path.unlink(missing_ok=True)
        (path.parent / "table.arrow").unlink(missing_ok=True)


def dataset_version_delete(*, version: DatasetVersion, actor: AbstractBaseUser | None = None) -> None:
    """Delete a version no run uses (409 `in_use` naming the runs otherwise); the dataset's last
    version goes with the dataset (409 `last_version`). Its bytes go once no version holds them."""
    # The reverse relation: this app never imports the runs app (.importlinter).
    runs = list(version.runs.order_by("id").values("id", "name")[:VERSION_RUNS_NAMED + 1])
    if runs:
        named = ", ".join(f"{r['id']}" + (f" ({r['name']})" if r["name"] else "") for r in runs[:VERSION_RUNS_NAMED])
        more = " and more" if len(runs) > VERSION_RUNS_NAMED else ""
        raise Conflict("in_use", f"Runs train on version {version.number}: {named}{more}; delete those runs first.",
                       extra={"runs": runs[:VERSION_RUNS_NAMED]})
    with transaction.atomic():
        dataset = Dataset.objects.select_for_update().get(pk=version.dataset_id)
        others = dataset.versions.exclude(pk=version.pk).filter(status=DatasetStatus.READY)
        if version.status == DatasetStatus.READY and not others.exists():
            raise Conflict("last_version", f"Version {version.number} is the dataset's only one; delete the dataset instead.")
        file = version.file
        audit_record(action="dataset.version_deleted", actor=actor, team=dataset.team, obj=dataset,
                     before={"version": version.number, "digest": version.digest})
        try:
            version.delete()
        except ProtectedError:
            raise Conflict("in_use", f"Runs train on version {version.number}; delete those runs first.") from None
        _dataset_follow_latest(dataset)
    _blob_release(file)
