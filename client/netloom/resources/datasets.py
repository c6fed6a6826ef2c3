"""Datasets: list, add a built-in, upload (with progress), versions and diffs, wait until ready."""

from __future__ import annotations

import json
import mimetypes
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, cast

from netloom.api_types import Dataset
from netloom.errors import DatasetFailed, NetloomError
from netloom.resources.transport import Transport

Progress = Callable[[int, int], None]  # (bytes sent, total bytes)


def upload_kind(path: Path) -> str:
    """The upload `kind` a file's name suggests (csv, images for a zip, tensors)."""
    suffix = path.suffix.lower()
    if suffix == ".zip":
        return "images"
    if suffix in (".safetensors", ".npz"):
        return "tensors"
    return "csv"


class _CountingFile:
    """A file that reports how much has been read from it (httpx streams multipart files by read())."""

    def __init__(self, handle: IO[bytes], total: int, progress: Progress) -> None:
        self._handle, self._total, self._progress, self._done = handle, total, progress, 0

    def read(self, size: int = -1) -> bytes:
        chunk = self._handle.read(size)
        self._done += len(chunk)
        self._progress(self._done, self._total)
        return chunk

    def seek(self, offset: int, whence: int = 0) -> int:
        position = self._handle.seek(offset, whence)
        if position == 0:
            self._done = 0
        return position

    def tell(self) -> int:
        return self._handle.tell()

    def fileno(self) -> int:
        return self._handle.fileno()


class DatasetsMixin(Transport):
    """Datasets of the user's teams."""

    def datasets(self, *, team: int | None = None) -> list[Dataset]:
        return cast(list[Dataset], self._all_pages("/api/datasets/", {"team": team}))

    def dataset(self, dataset_id: int) -> Dataset:
        return cast(Dataset, self._json("GET", f"/api/datasets/{dataset_id}/"))

    def builtins(self) -> list[dict[str, Any]]:
        """The built-in datasets the service offers (name, title, task, rows, ...)."""
        answer = self._json("GET", "/api/datasets/builtins/")
        return answer["builtins"] if isinstance(answer, dict) and "builtins" in answer else answer

    def dataset_add_builtin(
        self,
        builtin: str,
        *,
        team: int | None = None,
        name: str | None = None,
        seed: int | None = None,
    ) -> Dataset:
        body: dict[str, Any] = {
            "team": self.default_team(team),
            "builtin": builtin,
            "name": name or builtin,
        }
        if seed is not None:
            body["options"] = {"seed": seed}
        return cast(Dataset, self._json("POST", "/api/datasets/", json=body))

    def dataset_upload(
        self,
        path: str | Path,
        *,
        team: int | None = None,
        target: str | None = None,
        kind: str | None = None,
        name: str | None = None,
        options: dict[str, Any] | None = None,
        progress: Progress | None = None,
    ) -> Dataset:
        """Upload a CSV, image zip or tensors file; the answer may still be `processing` (see dataset_wait)."""
        file = Path(path)
        fields: dict[str, str] = {
            "team": str(self.default_team(team)),
            "kind": kind or upload_kind(file),
            "name": name or file.stem,
        }
        opts = dict(options or {})
        if target is not None:
            opts["target"] = target
        if opts:
            fields["options"] = json.dumps(opts)
        total = file.stat().st_size
        content_type = mimetypes.guess_type(file.name)[0] or "application/octet-stream"
        with file.open("rb") as handle:
            body: Any = _CountingFile(handle, total, progress) if progress else handle
            return cast(
                Dataset,
                self._json(
                    "POST",
                    "/api/datasets/upload/",
                    data=fields,
                    files={"file": (file.name, body, content_type)},
                ),
            )

    def dataset_versions(self, dataset_id: int) -> list[dict[str, Any]]:
        """The dataset's versions, oldest first: number, status, digest, size, summary, who made it."""
        return cast(list[dict[str, Any]], self._json("GET", f"/api/datasets/{dataset_id}/versions/"))

    def dataset_version(self, dataset_id: int, number: int) -> dict[str, Any]:
        return cast(dict[str, Any], self._json("GET", f"/api/datasets/{dataset_id}/versions/{number}/"))

    def dataset_version_upload(
        self, dataset_id: int, path: str | Path, *, options: dict[str, Any] | None = None,
        progress: Progress | None = None,
    ) -> dict[str, Any]:
        """Upload a new version of a dataset (options default to the previous version's). Bytes equal
        to an existing version are refused (ApiError 409 `duplicate_version` naming it)."""
        file = Path(path)
        fields = {"options": json.dumps(options)} if options else {}
        content_type = mimetypes.guess_type(file.name)[0] or "application/octet-stream"
        with file.open("rb") as handle:
            body: Any = _CountingFile(handle, file.stat().st_size, progress) if progress else handle
            return cast(dict[str, Any], self._json(
                "POST", f"/api/datasets/{dataset_id}/versions/", data=fields,
                files={"file": (file.name, body, content_type)},
            ))

    def dataset_version_delete(self, dataset_id: int, number: int) -> None:
        self._request("DELETE", f"/api/datasets/{dataset_id}/versions/{number}/")

    def dataset_diff(self, dataset_id: int, before: int, after: int, *, key: str | None = None) -> dict[str, Any]:
        """What changed from version `before` to `after`: rows, columns, statistics, class balance."""
        params: dict[str, Any] = {"from": before, "to": after}
        if key:
            params["key"] = key
        return cast(dict[str, Any], self._json("GET", f"/api/datasets/{dataset_id}/versions/diff/", params=params))

    def dataset_wait(
        self,
        dataset_id: int,
        *,
        timeout: float = 600.0,
        poll: float = 0.5,
        progress: Callable[[Dataset], None] | None = None,
    ) -> Dataset:
        """Wait until the dataset is processed: the ready dataset, or DatasetFailed with the located error."""
        deadline = time.monotonic() + timeout
        while True:
            dataset = self.dataset(dataset_id)
            if progress:
                progress(dataset)
            if dataset["status"] == "ready":
                return dataset
            if dataset["status"] == "failed":
                raise DatasetFailed(cast(dict[str, Any], dataset))
            if time.monotonic() > deadline:
                raise NetloomError(
                    f"dataset {dataset_id} is still processing after {timeout:.0f} s"
                )
            time.sleep(poll)
