"""RawData: a source read into arrays, before it is split and normalised."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class EncodedTable:
    """Table features encoded with categories learned from the train rows."""

    x: np.ndarray  # (N, F) float32
    feature_names: list[str]
    numeric: np.ndarray  # (F,) bool: True where the feature is a numeric column (gets normalised)
    columns: list[dict[str, Any]]  # per source column: name, kind, role, missing, encoding
    # The source as applied: the recipe's with each missing-value rule's fitted `fill`.
    source: dict[str, Any] | None = None
    dropped_rows: int = 0  # rows left out for a missing value (strategy drop_row)


@dataclass
class RawData:
    """Features and targets of a whole dataset, before splitting."""

    y: np.ndarray  # (N,) int64 class ids, or (N, k) float32
    task: str
    classes: list[str]
    feature_names: list[str]
    target_name: str | None
    feature_shape: list[int]
    x: np.ndarray | None = None  # (N, *feature_shape); None when `encode` builds it after the split
    encode: Callable[[np.ndarray], EncodedTable] | None = None  # train row indices -> encoded table
    columns: list[dict[str, Any]] = field(default_factory=list)
    preview: dict[str, Any] = field(default_factory=dict)  # the first rows as the user wrote them

    def __len__(self) -> int:
        return len(self.y)
