"""load_dataset: a recipe in, train/val/test tensors and DatasetInfo out."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import Tensor

from engine.data.archive import (
    ArchiveImages,
    ArchiveIndex,
    LazyImageSet,
    channel_stats,
    check_pixels,
    decode_all,
    decode_image,
    decoded_bytes,
    open_archive,
    read_entry,
    scan_archive,
)
from engine.data.augment import build_augmentation
from engine.data.builtin import BUILTIN_DATASETS
from engine.data.csv_table import csv_raw
from engine.data.errors import DataError
from engine.data.limits import DataLimits
from engine.data.normalize import compute_stats, norm_axis
from engine.data.pipeline import fit_pipeline
from engine.data.raw import RawData
from engine.data.recipe import DataRecipe, ImagesSource, parse_recipe
from engine.data.split import split_indices
from engine.data.tensor_file import tensors_raw
from engine.data.tensorset import DatasetInfo, Splits, TensorSet


@dataclass
class Loaded:
    """Splits plus what only the reader saw: the first rows as written, skipped entries."""

    splits: Splits
    preview: dict[str, Any] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    index: ArchiveIndex | None = None


def load_dataset(
    recipe: DataRecipe | dict[str, Any] | str, limits: DataLimits | None = None
) -> Splits:
    """Read, check, split and normalise a dataset; every bad input raises DataError."""
    return load(recipe, limits).splits


def load(
    recipe: DataRecipe | dict[str, Any] | str,
    limits: DataLimits | None = None,
    *,
    progress: Callable[[float], object] | None = None,
) -> Loaded:
    """load_dataset, keeping the reader's preview (summaries use it).

    `progress` hears the fraction of an image archive decoded, when it is streamed (lazy).
    """
    model = parse_recipe(recipe)
    limits = limits or DataLimits()
    source = model.source
    if isinstance(source, ImagesSource):
        return _load_images(model, source, limits, progress)
    if source.kind == "builtin":
        raw = BUILTIN_DATASETS[source.name].load(source.seed)
    elif source.kind == "csv":
        raw = csv_raw(source, limits)
    else:
        raw = tensors_raw(source, limits)
    labels = raw.y if raw.task == "classification" else None
    train, val, test = split_indices(len(raw), model.split, labels)
    return Loaded(_finish(model, raw, train, val, test), preview=raw.preview)


def _finish(
    model: DataRecipe, raw: RawData, train: np.ndarray, val: np.ndarray, test: np.ndarray
) -> Splits:
    """Encode (CSV), normalise with train statistics, attach augmentation to train."""
    keep = None
    columns = raw.columns
    feature_names = raw.feature_names
    recipe_json = model.model_dump(mode="json")
    if raw.encode is not None:
        table = raw.encode(train)
        x_np, feature_names, columns = table.x, table.feature_names, table.columns
        keep = torch.from_numpy(table.numeric)
        if table.source is not None:  # the source with its fitted missing-value fills
            recipe_json["source"] = table.source
    else:
        assert raw.x is not None
        x_np = raw.x
    feature_shape = list(x_np.shape[1:])
    x = torch.from_numpy(np.ascontiguousarray(x_np))
    y = torch.from_numpy(np.ascontiguousarray(raw.y))
    is_float = x.is_floating_point()
    method = model.transforms.normalize if is_float else "none"
    axis = norm_axis(feature_shape)
    stats = compute_stats(x[torch.from_numpy(train)], method, axis, keep)
    info = DatasetInfo(
        task=raw.task,
        feature_shape=feature_shape,
        num_classes=len(raw.classes) if raw.task == "classification" else None,
        classes=list(raw.classes),
        feature_names=list(feature_names),
        target_name=raw.target_name,
        output_size=len(raw.classes) if raw.task == "classification" else int(raw.y.shape[1]),
        normalization=method,
        norm_axis=axis if stats is not None else None,
        mean=stats[0] if stats else None,
        std=stats[1] if stats else None,
        x_dtype="float32" if is_float else "int64",
        rows={"total": len(y), "train": len(train), "val": len(val), "test": len(test)},
        columns=columns,
        recipe=recipe_json,
    )
    info.pipeline = fit_pipeline(model, info)
    if is_float:
        x = info.normalize(x).float()
    transform = None
    if model.transforms.augment:
        channel_stats_ok = axis == "channel" and stats is not None
        transform = build_augmentation(
            model.transforms.augment,
            feature_shape,
            mean=stats[0] if channel_stats_ok and stats else None,
            std=stats[1] if channel_stats_ok and stats else None,
        )

    def part(rows: np.ndarray, aug: Any = None) -> TensorSet:
        idx = torch.from_numpy(rows)
        return TensorSet(x.index_select(0, idx), y.index_select(0, idx), aug)

    return Splits(part(train, transform), part(val), part(test), info)


def _load_images(
    model: DataRecipe,
    source: ImagesSource,
    limits: DataLimits,
    progress: Callable[[float], object] | None = None,
) -> Loaded:
    size = (source.size[0], source.size[1])
    index = scan_archive(source.path, limits)
    # Bounded by work, not bytes: every image's size is read from its header and held to the
    # pixel limits before any image is decoded.
    check_pixels(index, limits)
    train, val, test = split_indices(len(index), model.split, index.labels)
    feature_shape = [source.channels, size[0], size[1]]
    if decoded_bytes(index, size, source.channels) <= limits.in_memory_bytes:
        raw = RawData(
            x=decode_all(index, size, source.channels, limits),
            y=index.labels,
            task="classification",
            classes=index.classes,
            feature_names=[],
            target_name="class",
            feature_shape=feature_shape,
        )
        splits = _finish(model, raw, train, val, test)
        return Loaded(splits, skipped=index.skipped, index=index)
    # Too big to hold decoded: one pass validates every image and sums train statistics,
    # then workers decode per batch.
    sums = channel_stats(index, size, source.channels, limits, train, progress)
    method = model.transforms.normalize
    mean: list[float] | None
    std: list[float] | None
    if method == "standard":
        mean, std = sums["mean"].tolist(), np.where(sums["std"] > 1e-12, sums["std"], 1.0).tolist()
    elif method == "minmax":
        spread = sums["max"] - sums["min"]
        mean, std = sums["min"].tolist(), np.where(spread > 1e-12, spread, 1.0).tolist()
    else:
        mean = std = None
    info = DatasetInfo(
        task="classification",
        feature_shape=feature_shape,
        num_classes=len(index.classes),
        classes=list(index.classes),
        feature_names=[],
        target_name="class",
        output_size=len(index.classes),
        normalization=method,
        norm_axis="channel" if mean is not None else None,
        mean=mean,
        std=std,
        rows={"total": len(index), "train": len(train), "val": len(val), "test": len(test)},
        recipe=model.model_dump(mode="json"),
    )
    info.pipeline = fit_pipeline(model, info, limits)
    transform = (
        build_augmentation(model.transforms.augment, feature_shape, mean=mean, std=std)
        if model.transforms.augment
        else None
    )

    def part(rows: np.ndarray, aug: Any = None) -> LazyImageSet:
        return LazyImageSet(
            ArchiveImages(index, rows, size, source.channels, limits), mean, std, aug
        )

    splits = Splits(part(train, transform), part(val), part(test), info)
    return Loaded(splits, skipped=index.skipped, index=index)


def train_sample(
    recipe: DataRecipe | dict[str, Any] | str, index: int, limits: DataLimits | None = None
) -> tuple[DataRecipe, Tensor]:
    """Train sample `index` in input units (pixels in [0, 1] for images), without augmentation."""
    model = parse_recipe(recipe)
    limits = limits or DataLimits()
    source = model.source
    if isinstance(source, ImagesSource):
        # Decode just the one image rather than the whole archive.
        archive = scan_archive(source.path, limits)
        train, _, _ = split_indices(len(archive), model.split, archive.labels)
        if not 0 <= index < len(train):
            raise DataError(
                f"index {index} is outside the train split (0..{len(train) - 1})", field="index"
            )
        name = archive.entries[int(train[index])]
        with open_archive(source.path, limits) as zf:
            data = read_entry(zf, name, limits)
        size = (source.size[0], source.size[1])
        return model, torch.from_numpy(decode_image(data, name, size, source.channels, limits))
    splits = load(model, limits).splits
    train_set = splits.train
    assert isinstance(train_set, TensorSet)  # only image archives are ever lazy
    if not 0 <= index < len(train_set):
        raise DataError(
            f"index {index} is outside the train split (0..{len(train_set) - 1})", field="index"
        )
    return model, splits.info.denormalize(train_set.x[index : index + 1])[0]
