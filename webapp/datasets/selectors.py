"""Reads for datasets: the recipe source a run uses, and previews."""

from __future__ import annotations

from typing import Any

from .models import Dataset, DatasetKind


def dataset_source(*, dataset: Dataset) -> dict[str, Any]:
    """The `source` entry of a DataRecipe for this dataset, with the file's current path.

    A CSV's source also names its columnar copy (`table`) when there is one, so training,
    explanation and prediction read that instead of parsing the CSV again (an upload from
    before the copy existed has none: the engine parses the CSV), and the encoding that was
    detected when it was processed.
    """
    source = dict(dataset.recipe)
    source.pop("table", None)  # never what a user wrote: only the file this dataset owns
    if dataset.kind != DatasetKind.BUILTIN and dataset.file_path is not None:
        source["path"] = str(dataset.file_path)
    if dataset.kind == DatasetKind.CSV:
        detected = (dataset.summary or {}).get("csv", {}).get("encoding")
        if source.get("encoding", "auto") == "auto" and detected:
            source["encoding"] = detected
        if dataset.pk is not None and dataset.table_path.is_file():
            source["table"] = str(dataset.table_path)
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
