"""Disk space as a user meets it: a full volume is a clear refusal naming the volume, never a 500.

An `OSError` whose errno is ENOSPC or EDQUOT, raised anywhere while a request is served, becomes
507 `insufficient_storage` (webapp/api/errors.py maps `InsufficientStorage`); a write that would
not fit is refused before its first byte (`space_check`: an upload whose Content-Length exceeds
the free space less NETLOOM_DISK_MARGIN_BYTES); a run whose worker met a full volume is queued
again or fails with this reason (workers/training.py); `GET /healthz` says `"disk": "low"` while
MEDIA_ROOT's volume has less than the margin free (webapp/health.py). docs/reliability.md
"Disk full".

Imports nothing from DRF, so the worker side classifies the same way.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from django.conf import settings

from webapp.errors import InsufficientStorage


def out_of_space(exc: BaseException | None) -> OSError | None:
    """The ENOSPC/EDQUOT error in `exc` or the exceptions it was raised from or during; else None
    (engine.atomic.storage_full: a library's own wording of it counts too)."""
    from engine.atomic import storage_full

    return storage_full(exc)


def media_root() -> Path:
    """The folder every stored file lives under."""
    return Path(settings.MEDIA_ROOT)


def _existing(path: Path) -> Path:
    """`path` or its nearest ancestor that exists (a folder not made yet lies on its parent's volume)."""
    path = path.absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def volume_of(path: Path | str | None = None) -> str:
    """The mount point of the volume that holds `path` (MEDIA_ROOT when None)."""
    current = _existing(Path(path) if path else media_root())
    while not os.path.ismount(current) and current != current.parent:
        current = current.parent
    return str(current)


def free_bytes(path: Path | str | None = None) -> int:
    """Bytes an unprivileged writer may still write on the volume that holds `path` (MEDIA_ROOT when None)."""
    return shutil.disk_usage(_existing(Path(path) if path else media_root())).free


def disk_margin() -> int:
    """What a large write leaves free on the volume (NETLOOM_DISK_MARGIN_BYTES); below it /healthz says low."""
    return int(settings.NETLOOM_DISK_MARGIN_BYTES)


def insufficient_storage(path: Path | str | None = None, *, needed: int | None = None) -> InsufficientStorage:
    """The refusal for a write that did not (or would not) fit on the volume holding `path`."""
    volume = volume_of(path)
    free = free_bytes(path)
    message = (
        f"Not enough space on the volume {volume} for {needed} bytes: {free} bytes are free and "
        f"{disk_margin()} must stay free; nothing was stored. Free space there, then try again."
        if needed is not None
        else f"No space left on the volume {volume} ({free} bytes free); nothing was stored. "
        "Free space there, then try again."
    )
    return InsufficientStorage("insufficient_storage", message, extra={"volume": volume, "free_bytes": free})


def from_os_error(exc: OSError) -> InsufficientStorage:
    """The refusal for an ENOSPC/EDQUOT error, naming the volume of the file it names (else MEDIA_ROOT's)."""
    return insufficient_storage(exc.filename if isinstance(exc.filename, str) else None)


def space_check(path: Path | str, *, needed: int) -> None:
    """Refuse (InsufficientStorage) a write of `needed` bytes that would leave less than the margin free."""
    if needed > free_bytes(path) - disk_margin():
        raise insufficient_storage(path, needed=needed)


def space_is_low(path: Path | str | None = None) -> bool:
    """True while the volume holding `path` (MEDIA_ROOT) has less than the margin free."""
    return free_bytes(path) < disk_margin()
