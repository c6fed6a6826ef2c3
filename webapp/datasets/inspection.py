"""The engine's check of a dataset's stored file, shared by a dataset's first upload (services.py)
and its later versions (versions.py): which files each kind takes, the service's limits, the check
and summary, the recipe source a stored file gives, and the error of a file the engine could not
read at all."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings

from webapp.errors import DomainError

from .models import Dataset, DatasetKind, DatasetVersion

UPLOAD_SUFFIXES: dict[str, tuple[str, ...]] = {
    DatasetKind.CSV: (".csv", ".tsv", ".txt"),
    DatasetKind.IMAGES: (".zip",),
    DatasetKind.TENSORS: (".safetensors", ".npz"),
}


def upload_suffix(kind: str, original_filename: str) -> str:
    """The uploaded file's suffix (".csv"), or a DomainError on `file` when `kind` takes no such file."""
    suffix = Path(original_filename).suffix.lower()
    if suffix not in UPLOAD_SUFFIXES[kind]:
        raise DomainError(
            "invalid",
            f"A {kind} upload must end with {' or '.join(UPLOAD_SUFFIXES[kind])} (got {original_filename!r}).",
            field="file",
        )
    return suffix


def data_limits() -> Any:
    """The engine's DataLimits with the service's upload size and archive limits."""
    from engine.data import DataLimits

    return DataLimits(
        max_bytes=settings.NETLOOM_MAX_UPLOAD_BYTES,
        max_entries=settings.NETLOOM_MAX_ARCHIVE_ENTRIES,
        max_image_pixels=settings.NETLOOM_MAX_IMAGE_PIXELS,
        max_total_pixels=settings.NETLOOM_MAX_ARCHIVE_PIXELS,
    )


def inspect_stored(dataset: Dataset | DatasetVersion, options: dict[str, Any], progress: Any = None) -> dict[str, Any]:
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


def recipe_source(dataset: Dataset | DatasetVersion, options: dict[str, Any]) -> dict[str, Any]:
    """The recipe's `source` entry for the stored file under `options` (the file's path included)."""
    # split/transforms are recipe siblings of the source, never source keys (the engine forbids
    # unknown keys there), so a run's recipe stays valid whatever the upload's options held.
    chosen = {k: v for k, v in options.items() if k not in ("split", "transforms")}
    kind = dataset.dataset.kind if isinstance(dataset, DatasetVersion) else dataset.kind
    return {"kind": kind, "path": str(dataset.file_path), **chosen}


def unreadable(exc: Exception) -> dict[str, Any]:
    """The DataError JSON of a file the engine could not read at all (still the user's to fix)."""
    return {
        "message": f"could not read the file: {exc}",
        "row": None,
        "column": None,
        "entry": None,
        "field": None,
    }
