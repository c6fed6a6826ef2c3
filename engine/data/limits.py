"""Size limits for uploaded data; the web service sets them, the engine enforces them."""

from __future__ import annotations

from dataclasses import dataclass

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
    in_memory_bytes: int = 2048 * MiB  # decoded images above this are read lazily
