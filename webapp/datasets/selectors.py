"""Reads for datasets: the recipe source a run uses, and previews."""

from __future__ import annotations

from typing import Any

from .models import Dataset, DatasetKind


def dataset_source(*, dataset: Dataset) -> dict[str, Any]:
    """The `source` entry of a DataRecipe for this dataset, with the file's current path."""
    source = dict(dataset.recipe)
    if dataset.kind != DatasetKind.BUILTIN and dataset.file_path is not None:
        source["path"] = str(dataset.file_path)
    return source


def dataset_recipe(
    *,
    dataset: Dataset,
    transforms: dict[str, Any] | None = None,
    split: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A whole DataRecipe (JSON) for a run on this dataset."""
    recipe: dict[str, Any] = {"source": dataset_source(dataset=dataset)}
    if transforms is not None:
        recipe["transforms"] = transforms
    if split is not None:
        recipe["split"] = split
    return recipe
