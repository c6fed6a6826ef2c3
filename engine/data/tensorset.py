"""In-memory tensors batched by index, the splits of a dataset, and what is known about it."""

from __future__ import annotations

import copy
import math
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

import torch
from torch import Tensor, nn


class BatchSource(Protocol):
    """Anything the trainer can draw (x, y) batches from: TensorSet or LazyImageSet."""

    y: Tensor  # (N,) or (N, k): targets are always held in memory

    def __len__(self) -> int: ...

    def batches(
        self,
        batch_size: int,
        shuffle: bool = False,
        generator: torch.Generator | None = None,
        *,
        drop_last: bool = False,
        augment: bool = True,
    ) -> Iterator[tuple[Tensor, Tensor]]: ...


@dataclass
class TensorSet:
    """Samples held as two tensors; batches are gathered by index, with no per-sample Python work.

    `transform` (training augmentation) is applied to each batch when `augment` is true.
    """

    x: Tensor  # (N, *feature_shape)
    y: Tensor  # (N,) int64 or (N, k) float32
    transform: nn.Module | None = None

    def __post_init__(self) -> None:
        if len(self.x) != len(self.y):
            raise ValueError(f"x has {len(self.x)} rows but y has {len(self.y)}")

    def __len__(self) -> int:
        return len(self.x)

    def num_batches(self, batch_size: int, *, drop_last: bool = False) -> int:
        """How many batches one epoch gives."""
        n = len(self)
        return n // batch_size if drop_last else math.ceil(n / batch_size)

    def batches(
        self,
        batch_size: int,
        shuffle: bool = False,
        generator: torch.Generator | None = None,
        *,
        drop_last: bool = False,
        augment: bool = True,
    ) -> Iterator[tuple[Tensor, Tensor]]:
        """One epoch of (x, y) batches; every row exactly once (the last batch may be smaller)."""
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        n = len(self)
        stop = n - n % batch_size if drop_last else n
        order = torch.randperm(n, generator=generator).to(self.x.device) if shuffle else None
        for start in range(0, stop, batch_size):
            if order is None:
                xb, yb = self.x[start : start + batch_size], self.y[start : start + batch_size]
            else:
                idx = order[start : start + batch_size]
                xb, yb = self.x.index_select(0, idx), self.y.index_select(0, idx)
            if augment and self.transform is not None:
                with torch.no_grad():
                    xb = self.transform(xb)
            yield xb, yb

    def to(self, device: torch.device | str) -> TensorSet:
        """A copy on `device` (the augmentation module moves with it)."""
        transform = copy.deepcopy(self.transform).to(device) if self.transform is not None else None
        return TensorSet(self.x.to(device), self.y.to(device), transform)


@dataclass
class DatasetInfo:
    """What a model and the pages need to know about a loaded dataset (JSON via to_json)."""

    task: str  # "classification" | "regression"
    feature_shape: list[int]
    num_classes: int | None  # None for regression
    classes: list[str]
    feature_names: list[str]
    target_name: str | None
    output_size: int  # units the last layer needs: num_classes, or the regression target width
    normalization: str = "none"  # "standard" | "minmax" | "none"
    norm_axis: str | None = None  # "feature" | "channel" | "element"; None when not normalised
    # Applied as (x - mean) / std; for minmax, mean is the train minimum and std the range.
    mean: list[float] | None = None
    std: list[float] | None = None
    x_dtype: str = "float32"
    rows: dict[str, int] = field(default_factory=dict)
    columns: list[dict[str, Any]] = field(default_factory=list)  # CSV columns and their encoding
    recipe: dict[str, Any] = field(default_factory=dict)
    # Every step from the raw input to x, fitted on the train split (engine.data.pipeline).
    pipeline: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """A JSON-able dict (stored with the run and the export)."""
        return asdict(self)

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> DatasetInfo:
        """The inverse of to_json (keys this version does not know, such as data.json's extras, are left out)."""
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in obj.items() if k in known})

    def _stat_shape(self) -> list[int]:
        if self.norm_axis == "channel":
            return [-1] + [1] * (len(self.feature_shape) - 1)
        if self.norm_axis == "element":
            return list(self.feature_shape)
        return [-1]

    def normalize(self, x: Tensor) -> Tensor:
        """Apply the train statistics to raw inputs (N, *feature_shape)."""
        if self.mean is None or self.std is None:
            return x
        mean = torch.tensor(self.mean, dtype=x.dtype, device=x.device).reshape(self._stat_shape())
        std = torch.tensor(self.std, dtype=x.dtype, device=x.device).reshape(self._stat_shape())
        return (x - mean) / std

    def denormalize(self, x: Tensor) -> Tensor:
        """Undo normalize (for previews and explanations in input units)."""
        if self.mean is None or self.std is None:
            return x
        mean = torch.tensor(self.mean, dtype=x.dtype, device=x.device).reshape(self._stat_shape())
        std = torch.tensor(self.std, dtype=x.dtype, device=x.device).reshape(self._stat_shape())
        return x * std + mean


@dataclass
class Splits:
    """The train, validation and test parts of a dataset, and its DatasetInfo."""

    train: BatchSource  # TensorSet, or LazyImageSet for archives too big to hold decoded
    val: BatchSource
    test: BatchSource
    info: DatasetInfo

    def __iter__(self) -> Iterator[Any]:
        return iter((self.train, self.val, self.test, self.info))
