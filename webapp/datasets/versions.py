"""Writes for a dataset's versions (decision 0019): upload version n+1 (refused when its bytes equal
a version's), check it as an upload is, keep the dataset's own fields on its newest ready version,
delete a version no run uses, and release a stored blob once no version refers to it.

Reads (the list, one version, the diff of two) are in selectors.py; the engine's check of a stored
file is in inspection.py, shared with a dataset's first upload (services.py).
"""

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

from webapp.audit.services import audit_record
from webapp.errors import Conflict, DomainError

from .digests import file_digest
from .inspection import inspect_stored, recipe_source, unreadable, upload_suffix
from .models import Dataset, DatasetKind, DatasetStatus, DatasetVersion, blob_dir

logger = logging.getLogger(__name__)

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
        suffix = upload_suffix(kind, original_filename)
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
        summary = inspect_stored(version, version.options, progress=write)
    except DataError as exc:
        return version_fail(version, exc.to_json())
    except Exception as exc:
        logger.exception("dataset version %s: processing failed", version_id)
        return version_fail(version, unreadable(exc))
    with transaction.atomic():
        dataset = Dataset.objects.select_for_update().get(pk=version.dataset_id)
        version.summary = summary
        version.recipe = recipe_source(version, version.options)
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


def version_fail(version: DatasetVersion, error: dict[str, Any]) -> DatasetVersion:
    file = version.file
    version.status = DatasetStatus.FAILED
    version.error = error
    version.file = ""
    version.save(update_fields=["status", "error", "file"])
    blob_release(file)
    return version


def blob_release(file: str) -> None:
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
    blob_release(file)
