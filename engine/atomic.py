"""Atomic writes: a reader sees the old file or folder, or the new one, never half of either.

Every writer of checkpoints, exports and the worker's export folder goes through these two
helpers. Leftovers of a crash are hidden siblings named `.<name>.tmp-<hex>` (and
`.<name>.old-<hex>` for a folder being replaced); `sweep_leftovers` removes them.
"""

from __future__ import annotations

import os
import shutil
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["atomic_dir", "atomic_file", "write_bytes_atomic", "sweep_leftovers"]


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
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
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
    except BaseException:
        tmp.unlink(missing_ok=True)
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
