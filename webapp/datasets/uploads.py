"""Streams an uploaded file into MEDIA_ROOT chunk by chunk, stopping at the size limit."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.core.files.uploadhandler import FileUploadHandler, StopFutureHandlers

from webapp.api.errors import PayloadTooLarge

# Multipart framing and the small form fields around the file.
_ENVELOPE_BYTES = 64 * 1024


def incoming_dir() -> Path:
    """Where uploads are written while they arrive (same filesystem as datasets: moves are renames)."""
    return Path(settings.MEDIA_ROOT) / "uploads"


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
        """Refuse at once when the declared length is already over the limit."""
        if content_length and content_length > self.max_bytes + _ENVELOPE_BYTES:
            raise PayloadTooLarge(self.max_bytes)
        return None

    def new_file(self, *args: Any, **kwargs: Any) -> None:
        """Open the destination file for the next file field."""
        super().new_file(*args, **kwargs)
        directory = incoming_dir()
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / f"{uuid.uuid4().hex}.part"
        self.handle = open(self.path, "wb")  # noqa: SIM115
        self.received = 0
        raise StopFutureHandlers()

    def receive_data_chunk(self, raw_data: bytes, start: int) -> None:
        """Append a chunk, or stop and delete everything once the limit is passed."""
        self.total += len(raw_data)
        if self.total > self.max_bytes:
            self._discard()
            raise PayloadTooLarge(self.max_bytes)
        self.handle.write(raw_data)
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

    def _discard(self) -> None:
        if self.handle is not None:
            self.handle.close()
            self.handle = None
        if self.path is not None:
            self.path.unlink(missing_ok=True)
            self.path = None
        # Files already received in this request are dropped too: the request as a whole failed.
        for upload in self.completed:
            upload.close()
        self.completed = []
