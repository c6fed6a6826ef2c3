"""Size limits for uploaded data; the web service sets them, the engine enforces them."""

from __future__ import annotations

import os
from dataclasses import dataclass

from engine.data.errors import DataError

MiB = 1 << 20


@dataclass(frozen=True)
class DataLimits:
    """Upper bounds checked before (and while) a dataset is read."""

    max_bytes: int = 512 * MiB  # size of the uploaded file itself
    max_rows: int = 2_000_000  # CSV data rows / tensor samples
    max_columns: int = 2_000  # CSV columns in the file
    max_categories: int = 1_000  # distinct values of a categorical column or classes of a target
    max_entries: int = 100_000  # entries in an image archive's central directory
    max_uncompressed_bytes: int = 2048 * MiB  # sum of the archive's declared entry sizes
    max_entry_bytes: int = 64 * MiB  # one archive entry, uncompressed
    max_ratio: float = 200.0  # uncompressed / compressed size of one entry (zip bombs)
    max_image_pixels: int = 4096 * 4096  # width * height of one image before resizing
    # Sum of width * height over an archive's images, read from their headers before any is
    # decoded: decoding costs time by pixels (about 30 Mpixel/s on one core), not by bytes.
    max_total_pixels: int = 1_000_000_000
    in_memory_bytes: int = 2048 * MiB  # decoded images above this are read lazily


def checked_file_size(path: str, limits: DataLimits, what: str = "file") -> int:
    """The file's size in bytes; DataError when it cannot be read or is over `limits.max_bytes`."""
    try:
        size = os.path.getsize(path)
    except OSError as exc:
        raise DataError(f"cannot read the {what}: {exc.strerror}") from None
    if size > limits.max_bytes:
        raise DataError(f"the {what} is {size} bytes; the limit is {limits.max_bytes}")
    return size
