"""Content digests of dataset versions: sha256 of a stored file, streamed (bounded memory)."""

from __future__ import annotations

import hashlib
from pathlib import Path

CHUNK = 1 << 20


def file_digest(path: Path) -> str:
    """sha256 (hex) of the file's bytes, read 1 MiB at a time."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def builtin_options_digest(options: dict) -> str:
    """A built-in dataset's digest: of its generated data under its seed (engine)."""
    from engine.data.builtin import builtin_digest

    return builtin_digest(str(options.get("builtin")), int(options.get("seed") or 0))
