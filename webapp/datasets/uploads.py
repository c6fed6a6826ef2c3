"""Streams an uploaded file into MEDIA_ROOT chunk by chunk, stopping at the size limit.

Nothing half-written stays: an upload whose declared length would not leave the disk margin free
is refused before its first byte (507, webapp/disk.py); a write that fails (a full volume: 507)
or a request that fails after the file began (the client went away, a refusal) removes the
partial file (`discard_partial_upload`, called by the API's error handling); a file a killed
server left behind is removed by the next server process that starts, or the reaper, as soon as
its writer is gone (the file is named after its process), or once it has not been written to for
NETLOOM_UPLOAD_STALE_SECONDS (webapp/datasets/services.py::upload_leftovers_sweep).
"""

from __future__ import annotations

import contextlib
import os
import socket
import uuid
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.core.files.uploadhandler import FileUploadHandler, StopFutureHandlers

from webapp.api.errors import PayloadTooLarge
from webapp.disk import space_check

# Multipart framing and the small form fields around the file.
_ENVELOPE_BYTES = 64 * 1024


def incoming_dir() -> Path:
    """Where uploads are written while they arrive (same filesystem as datasets: moves are renames)."""
    return Path(settings.MEDIA_ROOT) / "uploads"


def upload_file_name() -> str:
    """`<random>-<pid>-<host>.part`: the sweep removes at once a file whose writer on this host is gone."""
    return f"{uuid.uuid4().hex}-{os.getpid()}-{socket.gethostname()}.part"


class IncomingUpload(UploadedFile):
    """An uploaded file on disk; deleted when closed unless a service moved it away first."""

    def __init__(self, path: Path, name: str, content_type: str, size: int, charset: str | None):
        super().__init__(open(path, "rb"), name, content_type, size, charset)  # noqa: SIM115
        self.path = path

    def temporary_file_path(self) -> str:
        """Absolute path of the received bytes."""
        return str(self.path)

    def close(self) -> None:
        """Close and remove the partial/unclaimed file (Django closes uploads after the response)."""
        try:
            self.file.close()
        finally:
            self.path.unlink(missing_ok=True)


class LimitedUploadHandler(FileUploadHandler):
    """Writes each file to MEDIA_ROOT/uploads/<random>.part and raises 413 past `max_bytes`."""

    def __init__(self, request: Any = None, max_bytes: int | None = None) -> None:
        super().__init__(request)
        self.max_bytes = max_bytes if max_bytes is not None else settings.NETLOOM_MAX_UPLOAD_BYTES
        self.total = 0
        self.path: Path | None = None
        self.handle: Any = None
        self.completed: list[IncomingUpload] = []

    def handle_raw_input(
        self,
        input_data: Any,
        META: Any,
        content_length: int,
        boundary: bytes,
        encoding: str | None = None,
    ) -> None:
        """Refuse at once when the declared length is over the limit, or more than the volume can take."""
        if content_length and content_length > self.max_bytes + _ENVELOPE_BYTES:
            raise PayloadTooLarge(self.max_bytes)
        if content_length:
            space_check(incoming_dir(), needed=content_length)
        return None

    def new_file(self, *args: Any, **kwargs: Any) -> None:
        """Open the destination file for the next file field."""
        super().new_file(*args, **kwargs)
        directory = incoming_dir()
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / upload_file_name()
        self.handle = open(self.path, "wb")  # noqa: SIM115
        self.received = 0
        raise StopFutureHandlers()

    def receive_data_chunk(self, raw_data: bytes, start: int) -> None:
        """Append a chunk, or stop and delete everything once the limit is passed."""
        self.total += len(raw_data)
        if self.total > self.max_bytes:
            self._discard()
            raise PayloadTooLarge(self.max_bytes)
        try:
            self.handle.write(raw_data)
        except OSError:
            self._discard()  # a full volume (507, webapp/api/errors.py) or a failing disk
            raise
        return None

    def file_complete(self, file_size: int) -> IncomingUpload:
        """Hand the finished file to Django as an IncomingUpload."""
        self.handle.close()
        self.handle = None
        assert self.path is not None
        upload = IncomingUpload(
            self.path, self.file_name or "upload", self.content_type, file_size, self.charset
        )
        self.path = None
        self.completed.append(upload)
        return upload

    def upload_interrupted(self) -> None:
        """The client went away: delete what arrived."""
        self._discard()

    def discard_partial_upload(self) -> None:
        """The request failed (webapp/api/errors.py calls this): remove the file being received and
        those received before it in this request."""
        self._discard()

    def _discard(self) -> None:
        if self.handle is not None:
            with contextlib.suppress(OSError):  # flushing the last bytes fails on a full volume too
                self.handle.close()
            self.handle = None
        if self.path is not None:
            self.path.unlink(missing_ok=True)
            self.path = None
        # Files already received in this request are dropped too: the request as a whole failed.
        for upload in self.completed:
            upload.close()
        self.completed = []
