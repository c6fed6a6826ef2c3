"""Explain one sample of a dataset: a test-split row by index, or raw values the user typed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import torch
from torch import nn

from engine.explain.methods import ExplainError, Explanation, explain

__all__ = ["SampleInfo", "explain_sample", "sample_tensor"]


class SampleInfo(Protocol):
    """What explain_sample needs of a dataset (engine.data.DatasetInfo has it)."""

    feature_shape: Sequence[int]
    feature_names: list[str] | None
    task: str

    def normalize(self, x: torch.Tensor) -> torch.Tensor: ...

    def denormalize(self, x: torch.Tensor) -> torch.Tensor: ...


def sample_tensor(
    sample: Mapping[str, Any], *, info: SampleInfo, test_x: torch.Tensor | None = None
) -> torch.Tensor:
    """The network's input for `{"index": i}` (row i of the test split) or `{"input": raw values}`.

    Raw values are checked against the dataset's feature shape and normalised as in training;
    a test-split row already is. Raises ExplainError naming what does not fit.
    """
    if "index" in sample:
        if test_x is None:
            raise ExplainError("an index needs the test split")
        index = int(sample["index"])
        if not 0 <= index < len(test_x):
            raise ExplainError(f"index {index} is out of range: the test split has {len(test_x)} rows")
        return test_x[index]
    if "input" not in sample:
        raise ExplainError("a sample is {'index': row} or {'input': values}")
    raw = torch.as_tensor(sample["input"], dtype=torch.float32)  # a ragged list raises ValueError
    if list(raw.shape) != list(info.feature_shape):
        raise ExplainError(f"input has shape {list(raw.shape)}, the model needs {list(info.feature_shape)}")
    return info.normalize(raw.unsqueeze(0))[0]  # (1, *shape) -> (*shape)


def explain_sample(
    model: nn.Module,
    sample: Mapping[str, Any],
    *,
    info: SampleInfo,
    test_x: torch.Tensor | None = None,
    method: str = "integrated_gradients",
    target: int | None = None,
    layer: str | None = None,
) -> Explanation:
    """Attribute the model's output for one sample of its dataset, drawn over the raw values.

    Args:
        model: the trained model (eval mode is set by `explain`).
        sample: `{"index": i}` for row i of the test split, or `{"input": nested list}` of raw
            (not normalised) values shaped like one sample.
        info: the dataset's feature shape, names, task and normalisation.
        test_x: the normalised test split's inputs, needed for an index.
        method, target, layer: as for `explain`.
    """
    x = sample_tensor(sample, info=info, test_x=test_x)
    explanation = explain(
        model, x, method=method, target=target, layer=layer or None,
        feature_names=info.feature_names or None, task=info.task,
        display=info.denormalize(x.unsqueeze(0))[0],
    )
    classes = getattr(info, "classes", None)  # a DatasetInfo has them; a bare SampleInfo may not
    if info.task == "classification" and classes:
        explanation.classes = [str(name) for name in classes]
    return explanation
