"""Tensor sources: .safetensors or .npz files with arrays x and y."""

from __future__ import annotations

import dataclasses
import math
import os
import zipfile

import numpy as np

from engine.data.archive import check_entry
from engine.data.errors import DataError
from engine.data.limits import DataLimits, checked_file_size
from engine.data.raw import RawData
from engine.data.recipe import TensorsSource

AUTO_CLASSES = 1000  # integer targets with more distinct values than this cannot be classes


def _read_safetensors(path: str) -> dict[str, np.ndarray]:
    from safetensors import SafetensorError, safe_open

    arrays: dict[str, np.ndarray] = {}
    try:
        with safe_open(path, framework="pt") as f:
            keys = set(f.keys())
            _check_keys(keys)
            for key in ("x", "y"):
                tensor = f.get_tensor(key)
                if tensor.dtype.is_complex:
                    raise DataError(f"has dtype {tensor.dtype}; numbers must be real", field=key)
                # bfloat16/float16 have no exact numpy twin everywhere: go through float32.
                if tensor.is_floating_point():
                    tensor = tensor.float()
                arrays[key] = tensor.numpy()
    except SafetensorError as exc:
        raise DataError(f"not a readable .safetensors file ({exc})") from None
    return arrays


def _check_npz_members(path: str, limits: DataLimits) -> None:
    """Refuse an .npz whose x or y would inflate past what an uncompressed upload may hold.

    An .npz is a zip of .npy files. What x and y inflate to is judged, not how well they
    compress: each member's declared size, and their sum, may not pass the cap (what the same
    arrays uploaded uncompressed could be), and each array's own header (shape times itemsize)
    must fit inside its member's declared size. Python's zipfile never yields more than a member
    declares (and fails its CRC when the data disagrees), so numpy allocates at most the header's
    size and reads at most the declared bytes: memory stays under the cap whatever the ratio.
    A ratio limit alone refused honest data: 20,000 class-sorted int64 labels compress 450:1.
    """
    # An .npz may hold no more than the same arrays uploaded as an uncompressed file could.
    cap = min(limits.max_uncompressed_bytes, limits.max_bytes)
    bounded = dataclasses.replace(limits, max_uncompressed_bytes=cap, max_ratio=math.inf)
    try:
        with zipfile.ZipFile(path) as zf:
            total = 0
            for name in ("x.npy", "y.npy"):
                try:
                    info = zf.getinfo(name)
                except KeyError:
                    continue  # _check_keys names what is missing
                if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
                    # zipfile inflates bzip2/lzma a whole read at a time, past the declared size.
                    raise DataError(
                        f"is compressed with method {info.compress_type}; an .npz member is stored "
                        "or deflated (as numpy writes it)",
                        entry=name,
                    )
                total = check_entry(info, bounded, total, max_bytes=cap)
                with zf.open(info) as f:
                    major, _ = np.lib.format.read_magic(f)
                    read_header = (
                        np.lib.format.read_array_header_1_0
                        if major == 1
                        else np.lib.format.read_array_header_2_0
                    )
                    shape, _, dtype = read_header(f)
                nbytes = math.prod(shape) * dtype.itemsize
                if nbytes > info.file_size:
                    raise DataError(
                        f"the array header declares {nbytes} bytes but the entry holds "
                        f"{info.file_size}; the file is damaged or crafted",
                        field=name.removesuffix(".npy"),
                    )
    except DataError:
        raise
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        raise DataError(f"not a readable .npz file ({exc})") from None


def _read_npz(path: str, limits: DataLimits) -> dict[str, np.ndarray]:
    _check_npz_members(path, limits)
    try:
        with np.load(path, allow_pickle=False) as npz:
            _check_keys(set(npz.files))
            return {key: npz[key] for key in ("x", "y")}
    except DataError:
        raise
    except ValueError as exc:
        # allow_pickle=False refuses object arrays with a ValueError.
        raise DataError(f"not a plain numeric .npz file ({exc})") from None
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        raise DataError(f"not a readable .npz file ({exc})") from None


def _check_keys(keys: set[str]) -> None:
    missing = [k for k in ("x", "y") if k not in keys]
    if missing:
        raise DataError(
            f"the file must hold arrays named 'x' and 'y'; missing {', '.join(map(repr, missing))}; "
            f"found: {', '.join(sorted(map(repr, keys))) or 'nothing'}",
            field=missing[0],
        )


def _first_bad_row(a: np.ndarray) -> int:
    bad = ~np.isfinite(a.reshape(len(a), -1)).all(axis=1)
    return int(np.nonzero(bad)[0][0])


def tensors_raw(source: TensorsSource, limits: DataLimits) -> RawData:
    """Read and check x and y from a tensor file."""
    path = source.path
    checked_file_size(path, limits)
    suffix = os.path.splitext(path)[1].lower()
    if suffix == ".safetensors":
        arrays = _read_safetensors(path)
    elif suffix == ".npz":
        arrays = _read_npz(path, limits)
    else:
        raise DataError(
            f"unknown tensor file type {suffix!r}; use .safetensors or .npz", field="source.path"
        )
    x, y = arrays["x"], arrays["y"]
    for key, a in (("x", x), ("y", y)):
        if a.dtype.kind not in "biuf":
            raise DataError(f"has dtype {a.dtype}; numbers are needed", field=key)
        if a.ndim == 0:
            raise DataError("is a scalar; the first dimension must be the samples", field=key)
    if x.ndim < 2:
        raise DataError(
            f"has shape {list(x.shape)}; expected (samples, features...) with at least 2 dimensions",
            field="x",
        )
    if len(x) != len(y):
        raise DataError(f"x has {len(x)} samples but y has {len(y)}", field="y")
    if len(x) == 0:
        raise DataError("the file holds no samples", field="x")
    if len(x) > limits.max_rows:
        raise DataError(f"{len(x)} samples; the limit is {limits.max_rows}", field="x")
    if y.ndim > 2:
        raise DataError(
            f"has shape {list(y.shape)}; expected (N,) labels or (N, k) targets", field="y"
        )
    if x.dtype.kind == "f" and not np.isfinite(x).all():
        raise DataError("x holds NaN or infinite values", row=_first_bad_row(x), field="x")
    if y.dtype.kind == "f" and not np.isfinite(y).all():
        raise DataError("y holds NaN or infinite values", row=_first_bad_row(y), field="y")

    feature_shape = list(x.shape[1:])
    if x.dtype == np.uint8 and len(feature_shape) == 3:
        x = x.astype(np.float32) / 255.0  # 8-bit images (N, C, H, W)
    elif x.dtype.kind in "iub":
        x = x.astype(np.int64)  # token ids and other integer inputs stay integers
    else:
        x = x.astype(np.float32)

    task = source.task
    integral = y.dtype.kind in "iub" or bool(np.all(y == np.round(y)))
    if task == "auto":
        task = (
            "classification"
            if y.dtype.kind in "iub" and (y.ndim == 1 or y.shape[1] == 1)
            else "regression"
        )
    if task == "regression":
        yy = y.astype(np.float32).reshape(len(y), -1)
        return RawData(
            x=x,
            y=yy,
            task=task,
            classes=[],
            feature_names=_feature_names(feature_shape),
            target_name="y",
            feature_shape=feature_shape,
        )
    if y.ndim == 2 and y.shape[1] != 1:
        raise DataError(
            f"has shape {list(y.shape)}; classification needs one label per sample", field="y"
        )
    if not integral:
        raise DataError("holds fractional values; classification needs integer labels", field="y")
    labels = y.reshape(-1).astype(np.int64)
    uniq, codes = np.unique(labels, return_inverse=True)
    if len(uniq) > min(AUTO_CLASSES, limits.max_categories):
        raise DataError(f"has {len(uniq)} distinct labels; too many classes", field="y")
    if len(uniq) < 2:
        raise DataError(
            f"has only one class ({int(uniq[0])}); classification needs at least 2", field="y"
        )
    return RawData(
        x=x,
        y=codes.astype(np.int64),
        task="classification",
        classes=[str(int(v)) for v in uniq],
        feature_names=_feature_names(feature_shape),
        target_name="y",
        feature_shape=feature_shape,
    )


def _feature_names(feature_shape: list[int]) -> list[str]:
    # Names only for flat features; images and sequences are addressed by position.
    return [f"x{i}" for i in range(feature_shape[0])] if len(feature_shape) == 1 else []
