"""Image archives: a zip with one folder per class, checked from its central directory first."""

from __future__ import annotations

import io
import multiprocessing
import os
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import PurePosixPath

import numpy as np
import torch
from PIL import Image, UnidentifiedImageError
from torch import Tensor, nn
from torch.utils.data import DataLoader, Dataset

from engine.data.errors import DataError
from engine.data.limits import DataLimits, MiB, checked_file_size

IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".gif", ".bmp", ".webp", ".tif", ".tiff"})
RATIO_FLOOR = 64 * 1024  # smaller entries are never bombs, however well they compress
STREAM_CHUNK_BYTES = 16 * MiB  # decoded images held at once while streaming through an archive


@dataclass
class ArchiveIndex:
    """The images of an archive (entry names) and their class labels, found without decoding."""

    path: str
    entries: list[str]
    labels: np.ndarray  # (N,) int64
    classes: list[str]
    skipped: list[str] = field(default_factory=list)  # entries that are not images (README, ...)

    def __len__(self) -> int:
        return len(self.entries)


def _is_junk(parts: list[str]) -> bool:
    return (
        parts[0] == "__MACOSX"
        or any(p.startswith(".") for p in parts)
        or parts[-1]
        in {
            "Thumbs.db",
            "desktop.ini",
        }
    )


def _check_name(name: str) -> None:
    clean = name.replace("\\", "/")
    if clean.startswith("/") or (len(clean) > 1 and clean[1] == ":"):
        raise DataError("absolute paths are not allowed in the archive", entry=name)
    if ".." in clean.split("/"):
        raise DataError("'..' is not allowed in archive paths", entry=name)


def open_archive(path: str, limits: DataLimits) -> zipfile.ZipFile:
    """Open a zip file (reads only its central directory)."""
    checked_file_size(path, limits, "archive")
    try:
        return zipfile.ZipFile(path)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError) as exc:
        raise DataError(f"not a readable zip archive ({exc})") from None


def check_entry(
    info: zipfile.ZipInfo, limits: DataLimits, total: int = 0, *, max_bytes: int | None = None
) -> int:
    """Refuse a zip entry by what its central directory declares, before anything is inflated.

    Args:
        total: the declared bytes of the entries checked before this one.
        max_bytes: the limit for this entry (default `limits.max_entry_bytes`).

    Returns:
        `total` with this entry's declared size added.
    """
    name = info.filename
    limit = limits.max_entry_bytes if max_bytes is None else max_bytes
    if info.flag_bits & 0x1:
        raise DataError("encrypted entries are not supported", entry=name)
    if info.file_size > limit:
        raise DataError(
            f"declares {info.file_size} bytes uncompressed; the limit per entry is {limit}",
            entry=name,
        )
    total += info.file_size
    if total > limits.max_uncompressed_bytes:
        raise DataError(
            f"the archive declares more than {limits.max_uncompressed_bytes} bytes uncompressed "
            f"(the limit), reached at this entry",
            entry=name,
        )
    if info.compress_type != zipfile.ZIP_STORED and info.file_size > RATIO_FLOOR:
        ratio = info.file_size / max(info.compress_size, 1)
        if ratio > limits.max_ratio:
            raise DataError(
                f"compression ratio {ratio:.0f}:1 is above the limit {limits.max_ratio:.0f}:1",
                entry=name,
            )
    return total


def scan_archive(path: str, limits: DataLimits) -> ArchiveIndex:
    """Check every entry's path and declared sizes, then find the class folders; decodes nothing."""
    with open_archive(path, limits) as zf:
        infos = zf.infolist()
    if len(infos) > limits.max_entries:
        raise DataError(
            f"the archive has {len(infos)} entries; the limit is {limits.max_entries} entries "
            f"per archive"
        )
    total = 0
    images: list[tuple[list[str], str]] = []
    skipped: list[str] = []
    for info in infos:
        name = info.filename
        _check_name(name)
        if info.is_dir():
            continue
        total = check_entry(info, limits, total)
        parts = [p for p in name.replace("\\", "/").split("/") if p]
        if _is_junk(parts):
            continue
        if PurePosixPath(parts[-1]).suffix.lower() in IMAGE_SUFFIXES:
            images.append((parts, name))
        else:
            skipped.append(name)
    if not images:
        raise DataError("the archive holds no images (.png, .jpg, .gif, .bmp, .webp, .tif)")
    # One folder around everything (archive made by zipping the dataset folder): look inside it.
    tops = {parts[0] for parts, _ in images}
    if len(tops) == 1 and all(len(parts) >= 3 for parts, _ in images):
        images = [(parts[1:], name) for parts, name in images]
    for parts, name in images:
        if len(parts) < 2:
            raise DataError(
                "image is not inside a class folder (expected class_name/image.png)", entry=name
            )
    classes = sorted({parts[0] for parts, _ in images})
    if len(classes) < 2:
        raise DataError(
            f"the archive has one class folder ({classes[0]!r}); at least 2 are needed, one folder per class"
        )
    by_class = {c: k for k, c in enumerate(classes)}
    images.sort(key=lambda item: (by_class[item[0][0]], item[1]))
    return ArchiveIndex(
        path=path,
        entries=[name for _, name in images],
        labels=np.array([by_class[parts[0]] for parts, _ in images], dtype=np.int64),
        classes=classes,
        skipped=skipped,
    )


def read_entry(zf: zipfile.ZipFile, name: str, limits: DataLimits) -> bytes:
    """The bytes of one entry, read with a bound so a header that lies cannot exhaust memory."""
    info = zf.getinfo(name)
    bound = min(info.file_size, limits.max_entry_bytes)
    try:
        with zf.open(info) as f:
            data = f.read(bound + 1)
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, OSError) as exc:
        raise DataError(f"corrupt archive entry ({exc})", entry=name) from None
    if len(data) > bound:
        raise DataError("holds more data than its header declares", entry=name)
    return data


def decode_image(
    data: bytes, name: str, size: tuple[int, int], channels: int, limits: DataLimits
) -> np.ndarray:
    """Decode, convert to L or RGB, resize to size=(H, W), scale to [0, 1]; (C, H, W) float32."""
    try:
        with Image.open(io.BytesIO(data)) as img:
            width, height = img.size
            if width * height > limits.max_image_pixels:
                raise DataError(
                    f"image is {width}x{height} pixels; the limit is {limits.max_image_pixels} pixels",
                    entry=name,
                )
            img.load()
            # Palette and grey+alpha images convert cleanly only through RGBA.
            rgba: Image.Image = img.convert("RGBA") if img.mode in ("P", "LA") else img
            pixels = rgba.convert("L" if channels == 1 else "RGB")
            if pixels.size != (size[1], size[0]):
                pixels = pixels.resize((size[1], size[0]), Image.Resampling.BILINEAR)
            arr = np.asarray(pixels, dtype=np.float32) / 255.0
    except DataError:
        raise
    except (
        UnidentifiedImageError,
        OSError,
        ValueError,
        SyntaxError,
        Image.DecompressionBombError,
    ) as exc:
        raise DataError(f"not a readable image ({type(exc).__name__}: {exc})", entry=name) from None
    return arr[None] if channels == 1 else arr.transpose(2, 0, 1)  # (C, H, W)


def decoded_bytes(index: ArchiveIndex, size: tuple[int, int], channels: int) -> int:
    """Memory the decoded float32 images would take."""
    return len(index) * channels * size[0] * size[1] * 4


def decode_all(
    index: ArchiveIndex, size: tuple[int, int], channels: int, limits: DataLimits
) -> np.ndarray:
    """Every image decoded into one (N, C, H, W) float32 array."""
    out = np.empty((len(index), channels, size[0], size[1]), dtype=np.float32)
    with open_archive(index.path, limits) as zf:
        for i, name in enumerate(index.entries):
            out[i] = decode_image(read_entry(zf, name, limits), name, size, channels, limits)
    return out


def image_size(zf: zipfile.ZipFile, name: str) -> tuple[int, int]:
    """(width, height) of one archive image, read from its header: Pillow's `Image.open` is lazy,
    so no pixel is decoded (and Pillow's own MAX_IMAGE_PIXELS check runs on the header too)."""
    try:
        with zf.open(name) as f, Image.open(f) as img:
            return img.size
    except Image.DecompressionBombError as exc:
        raise DataError(f"image is too large to read ({exc})", entry=name) from None
    except (zipfile.BadZipFile, zlib.error, NotImplementedError) as exc:
        raise DataError(f"corrupt archive entry ({exc})", entry=name) from None
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError, EOFError) as exc:
        raise DataError(f"not a readable image ({type(exc).__name__}: {exc})", entry=name) from None


def check_pixels(index: ArchiveIndex, limits: DataLimits) -> int:
    """Refuse an archive by the work it holds: each image's width x height and the sum over all
    images, read from their headers before any image is decoded.

    Returns:
        The archive's pixels, summed over its images.
    """
    total = 0
    with open_archive(index.path, limits) as zf:
        for name in index.entries:
            width, height = image_size(zf, name)
            if width * height > limits.max_image_pixels:
                raise DataError(
                    f"image is {width}x{height} pixels; the limit per image is "
                    f"{limits.max_image_pixels} pixels",
                    entry=name,
                )
            total += width * height
            if total > limits.max_total_pixels:
                raise DataError(
                    f"the archive's images hold more than {limits.max_total_pixels} pixels "
                    f"together (the limit per archive), reached at this entry",
                    entry=name,
                )
    return total


def channel_stats(
    index: ArchiveIndex,
    size: tuple[int, int],
    channels: int,
    limits: DataLimits,
    train: np.ndarray,
    progress: Callable[[float], object] | None = None,
) -> dict[str, np.ndarray]:
    """Decode every image once (which validates it) and sum per-channel statistics over train.

    Images are decoded a chunk at a time into one preallocated buffer, so memory stays the same
    whatever the archive's length. `progress` hears the fraction decoded after each image.
    """
    in_train = np.zeros(len(index), dtype=bool)
    in_train[train] = True
    chunk = max(1, STREAM_CHUNK_BYTES // (channels * size[0] * size[1] * 4))
    buffer = np.empty((min(chunk, len(index)), channels, *size), dtype=np.float32)  # (K, C, H, W)
    total = np.zeros(channels)
    squares = np.zeros(channels)
    lo = np.full(channels, np.inf)
    hi = np.full(channels, -np.inf)
    with open_archive(index.path, limits) as zf:
        for start in range(0, len(index), chunk):
            names = index.entries[start : start + chunk]
            for k, name in enumerate(names):
                buffer[k] = decode_image(read_entry(zf, name, limits), name, size, channels, limits)
                if progress is not None:
                    progress((start + k + 1) / len(index))
            rows = buffer[: len(names)][in_train[start : start + len(names)]]  # (k, C, H, W)
            if len(rows):
                total += rows.sum(axis=(0, 2, 3), dtype=np.float64)
                squares += np.einsum("nchw,nchw->c", rows, rows, dtype=np.float64)
                lo = np.minimum(lo, rows.min(axis=(0, 2, 3)))
                hi = np.maximum(hi, rows.max(axis=(0, 2, 3)))
    count = len(train) * size[0] * size[1]
    mean = total / count
    std = np.sqrt(np.maximum(squares / count - mean**2, 0.0))
    return {"mean": mean, "std": std, "min": lo, "max": hi}


class ArchiveImages(Dataset):
    """Map-style dataset that decodes one archive image per access (the slow path for big archives)."""

    def __init__(
        self,
        index: ArchiveIndex,
        rows: np.ndarray,
        size: tuple[int, int],
        channels: int,
        limits: DataLimits,
    ) -> None:
        self.index = index
        self.rows = np.asarray(rows, dtype=np.int64)
        self.size = size
        self.channels = channels
        self.limits = limits
        self._zip: zipfile.ZipFile | None = None
        self._pid = -1

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: int) -> tuple[Tensor, Tensor]:
        # A ZipFile handle must not be shared across worker processes: open one per process.
        if self._zip is None or self._pid != os.getpid():
            self._zip = open_archive(self.index.path, self.limits)
            self._pid = os.getpid()
        row = int(self.rows[i])
        name = self.index.entries[row]
        img = decode_image(
            read_entry(self._zip, name, self.limits), name, self.size, self.channels, self.limits
        )
        return torch.from_numpy(img), torch.tensor(self.index.labels[row])

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_zip"] = None
        return state


def make_loader(
    dataset: Dataset,
    batch_size: int,
    shuffle: bool = False,
    generator: torch.Generator | None = None,
    num_workers: int = 0,
    drop_last: bool = False,
) -> DataLoader:
    """A DataLoader over a lazily decoded dataset; workers decode in parallel."""
    return DataLoader(
        dataset,
        batch_size=batch_size,
        shuffle=shuffle,
        generator=generator,
        num_workers=num_workers,
        drop_last=drop_last,
        persistent_workers=False,
    )


class LazyImageSet:
    """A split of a big image archive: decoded on access, normalised and augmented per batch."""

    def __init__(
        self,
        images: ArchiveImages,
        mean: list[float] | None,
        std: list[float] | None,
        transform: nn.Module | None = None,
        num_workers: int | None = None,
    ) -> None:
        self.images = images
        self.y = torch.from_numpy(
            images.index.labels[images.rows]
        )  # (N,) labels, known without decoding
        self.mean = (
            None if mean is None else torch.tensor(mean, dtype=torch.float32).reshape(1, -1, 1, 1)
        )
        self.std = (
            None if std is None else torch.tensor(std, dtype=torch.float32).reshape(1, -1, 1, 1)
        )
        self.transform = transform
        if num_workers is None:
            # A daemonic process (a Celery prefork worker) may not start DataLoader workers.
            daemon = multiprocessing.current_process().daemon
            num_workers = 0 if daemon else min(4, max(0, (os.cpu_count() or 1) - 1))
        self.num_workers = num_workers

    def __len__(self) -> int:
        return len(self.images)

    def batches(
        self,
        batch_size: int,
        shuffle: bool = False,
        generator: torch.Generator | None = None,
        *,
        drop_last: bool = False,
        augment: bool = True,
    ) -> Iterator[tuple[Tensor, Tensor]]:
        """One epoch of normalised (x, y) batches, decoded by the loader's workers."""
        if len(self) == 0:
            return
        loader = make_loader(
            self.images, batch_size, shuffle, generator, self.num_workers, drop_last
        )
        for xb, yb in loader:  # xb: (B, C, H, W) in [0, 1]
            if self.mean is not None and self.std is not None:
                xb = (xb - self.mean) / self.std
            if augment and self.transform is not None:
                with torch.no_grad():
                    xb = self.transform(xb)
            yield xb, yb
