"""Atomic writes: a reader sees the old file or folder, or the new one, never half of either.

Every writer of checkpoints, exports and the worker's export folder goes through these two
helpers. Leftovers of a crash are hidden siblings named `.<name>.tmp-<hex>` (and
`.<name>.old-<hex>` for a folder being replaced); `sweep_leftovers` removes them.

A write that fails because its volume is full removes what it wrote and raises `OSError(ENOSPC)`
naming the destination, whichever library wrote (safetensors reports the kernel's error as a
`SafetensorError` whose text ends "(os error 28)"): `storage_full` tells a full volume apart from
every other failure, so a caller can retry later instead of failing for good.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["atomic_dir", "atomic_file", "storage_full", "sweep_leftovers", "write_bytes_atomic"]

FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
# How Rust libraries (safetensors) word the kernel's error, "... (os error 28)", and how Python's
# does in a message carried across processes (a rank's error), "[Errno 28] ...".
_OS_ERROR_TEXT = re.compile(r"\(os error (\d+)\)|\[Errno (\d+)\]")


def storage_full(exc: BaseException | None) -> OSError | None:
    """The error that says a volume is full (ENOSPC, EDQUOT) in `exc` or its causes; None otherwise.

    A library that reports the kernel's error in its own exception type (safetensors) counts too:
    an `OSError` with that errno is returned for it.
    """
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.errno in FULL_ERRNOS:
            return exc
        found = _OS_ERROR_TEXT.search(str(exc)) if not isinstance(exc, OSError) else None
        number = int(found.group(1) or found.group(2)) if found else None
        if number in FULL_ERRNOS:
            return OSError(number, os.strerror(number))
        exc = exc.__cause__ or exc.__context__
    return None


def _full_error(exc: BaseException, final: Path) -> OSError | None:
    """An OSError(ENOSPC) naming `final` for a write to it that failed on a full volume."""
    full = storage_full(exc)
    if full is None or isinstance(exc, OSError) and exc.filename:
        return None  # not a full volume, or an OSError that names its file already
    return OSError(full.errno, f"{os.strerror(full.errno or errno.ENOSPC)} while writing {final}", str(final))


def _sibling(final: Path, kind: str) -> Path:
    return final.parent / f".{final.name}.{kind}-{uuid.uuid4().hex[:8]}"


@contextmanager
def atomic_dir(final: Path | str) -> Iterator[Path]:
    """Yield a temporary sibling directory; on success it replaces `final` in one rename."""
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = _sibling(final, "tmp")
    tmp.mkdir()
    try:
        yield tmp
        if final.exists():
            # A directory cannot be renamed over a non-empty one: move the old one aside first.
            old = _sibling(final, "old")
            os.replace(final, old)
            os.replace(tmp, final)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, final)
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        full = _full_error(exc, final)
        if full is not None:
            raise full from exc
        raise


@contextmanager
def atomic_file(final: Path | str) -> Iterator[Path]:
    """Yield a temporary sibling path to write; on success it replaces `final` in one rename."""
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = _sibling(final, "tmp")
    try:
        yield tmp
        os.replace(tmp, final)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        full = _full_error(exc, final)
        if full is not None:
            raise full from exc
        raise


def write_bytes_atomic(path: Path | str, data: bytes) -> None:
    """Write `data` next to `path`, flush it to disk, and rename it into place."""
    with atomic_file(path) as tmp, open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def sweep_leftovers(folder: Path | str, *, older_than_s: float = 0.0) -> list[Path]:
    """Remove crash leftovers (`.*.tmp-*`, `.*.old-*`) anywhere below `folder`.

    Args:
        older_than_s: keep leftovers younger than this (a writer may still be using them).

    Returns:
        the paths removed.
    """
    folder = Path(folder)
    if not folder.is_dir():
        return []
    cutoff = time.time() - older_than_s
    removed: list[Path] = []
    for pattern in (".*.tmp-*", ".*.old-*"):
        for path in folder.rglob(pattern):
            try:
                if path.lstat().st_mtime > cutoff:
                    continue
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    path.unlink(missing_ok=True)
                removed.append(path)
            except FileNotFoundError:
                continue
    return removed
