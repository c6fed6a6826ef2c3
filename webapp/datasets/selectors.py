"""Reads for datasets: the recipe source a run uses, and previews."""

from __future__ import annotations

from typing import Any

from .models import Dataset, DatasetKind, DatasetVersion


def dataset_source(*, dataset: Dataset, version: DatasetVersion | None = None) -> dict[str, Any]:
    """The `source` entry of a DataRecipe for this dataset (`version`'s data when given, else the
    newest version's, which the dataset's own fields mirror), with the file's path.

    A CSV's source also names its columnar copy (`table`) when there is one, so training,
    explanation and prediction read that instead of parsing the CSV again (an upload from
    before the copy existed has none: the engine parses the CSV), and the encoding that was
    detected when it was processed.
    """
    data: Dataset | DatasetVersion = version if version is not None else dataset
    source = dict(data.recipe)
    source.pop("table", None)  # never what a user wrote: only the file this dataset owns
    if dataset.kind != DatasetKind.BUILTIN and data.file_path is not None:
        source["path"] = str(data.file_path)
    if dataset.kind == DatasetKind.CSV:
        detected = (data.summary or {}).get("csv", {}).get("encoding")
        if source.get("encoding", "auto") == "auto" and detected:
            source["encoding"] = detected
        table = data.table_path
        if data.pk is not None and table is not None and table.is_file():
            source["table"] = str(table)
    return source


def dataset_recipe(
    *,
    dataset: Dataset,
    transforms: dict[str, Any] | None = None,
    split: dict[str, Any] | None = None,
    version: DatasetVersion | None = None,
) -> dict[str, Any]:
    """A whole DataRecipe (JSON) for a run on this dataset (on `version` when given)."""
    recipe: dict[str, Any] = {"source": dataset_source(dataset=dataset, version=version)}
    if transforms is not None:
        recipe["transforms"] = transforms
    if split is not None:
        recipe["split"] = split
    return recipe


def dataset_versions(*, dataset: Dataset) -> Any:
    """The dataset's versions, oldest first, with who made them."""
    return dataset.versions.select_related("created_by").order_by("number")


def dataset_version_get(*, dataset: Dataset, number: int) -> DatasetVersion | None:
    return dataset.versions.select_related("created_by").filter(number=number).first()


def dataset_versions_diff(*, dataset: Dataset, before: DatasetVersion, after: DatasetVersion,
                          key: str | None = None) -> dict[str, Any]:
    """What changed from `before` to `after` (engine.data.diff): rows, columns, statistics and
    class balance of a table; files of an image archive; for tensors whether the bytes differ.
    Raises DataError (a key column one file lacks, an unreadable file)."""
    from engine.data.diff import TableFile, diff_archives, diff_tables

    head = {"from": {"number": before.number, "digest": before.digest},
            "to": {"number": after.number, "digest": after.digest}, "same_bytes": before.digest == after.digest}
    if dataset.kind == DatasetKind.CSV:
        def table(version: DatasetVersion) -> TableFile:
            options = version.options or {}
            encoding = (version.summary or {}).get("csv", {}).get("encoding") or options.get("encoding") or "auto"
            return TableFile(path=str(version.file_path), delimiter=options.get("delimiter"), encoding=encoding,
                             target=options.get("target"))

        return {**head, **diff_tables(table(before), table(after), key=key)}
    if dataset.kind == DatasetKind.IMAGES:
        return {**head, **diff_archives(str(before.file_path), str(after.file_path))}
    return {**head, "kind": dataset.kind}


def with_latest_version(queryset: Any) -> Any:
    """Datasets annotated with their newest ready version's number and digest (one query for a page)."""
    from django.db.models import OuterRef, Subquery

    newest = DatasetVersion.objects.filter(dataset=OuterRef("pk"), status="ready").order_by("-number")
    return queryset.annotate(latest_number=Subquery(newest.values("number")[:1]),
                             latest_digest=Subquery(newest.values("digest")[:1]))
