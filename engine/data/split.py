"""Split row indices into train / val / test by fraction and seed, stratified for classes."""

from __future__ import annotations

import numpy as np
from sklearn.model_selection import train_test_split  # type: ignore[import-untyped]

from engine.data.errors import DataError
from engine.data.recipe import Split


def _cut(
    idx: np.ndarray, size: int, labels: np.ndarray | None, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """Split idx into (rest, held) with `size` held rows."""
    if size == 0:
        return idx, idx[:0]
    if labels is not None:
        try:
            rest, held = train_test_split(
                idx, test_size=size, random_state=seed, stratify=labels[idx]
            )
            return rest, held
        except ValueError:
            # Too few rows of some class to stratify (or fewer held rows than classes): plain split.
            pass
    rest, held = train_test_split(idx, test_size=size, random_state=seed)
    return rest, held


def split_indices(
    n: int, split: Split, labels: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sorted (train, val, test) row indices; `labels` given means stratify by them."""
    n_test = max(1, round(split.test * n)) if split.test > 0 else 0
    n_val = max(1, round(split.val * n)) if split.val > 0 else 0
    if n - n_test - n_val < 1:
        raise DataError(
            f"only {n} rows: too few for a split with val={split.val} and test={split.test}",
            field="split",
        )
    strat = labels if split.stratify else None
    idx = np.arange(n)
    rest, test = _cut(idx, n_test, strat, split.seed)
    train, val = _cut(rest, n_val, strat, split.seed)
    return np.sort(train), np.sort(val), np.sort(test)
