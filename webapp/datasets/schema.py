"""OpenAPI shapes of the datasets API's engine answers: summaries, errors, previews, built-ins.

The summary is the engine's (engine/data/summary.py); it grows with the kinds of data, so only
the fields the browser reads are declared and the rest stay open (additionalProperties).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from drf_spectacular.utils import extend_schema_field
from pydantic import BaseModel, Field, RootModel
from rest_framework import serializers

from webapp.api.schema import OPEN_WIRE_CONFIG, WIRE_CONFIG, components_add, pydantic_components


class DataErrorJson(BaseModel):
    """The engine's DataError JSON: the message plus where the problem is."""

    model_config = OPEN_WIRE_CONFIG

    message: str
    row: int | None = None
    column: str | None = None
    entry: str | None = None
    field: str | None = None


class RowCounts(BaseModel):
    model_config = OPEN_WIRE_CONFIG

    total: int | None = None
    train: int | None = None
    val: int | None = None
    test: int | None = None


class ColumnSummary(BaseModel):
    model_config = OPEN_WIRE_CONFIG

    name: str
    kind: str
    missing: int | None = None
    role: str | None = None
    distinct: int | None = None


class DatasetSummary(BaseModel):
    """What processing found (engine.data.summary): task, shapes, rows, classes, columns, problems."""

    model_config = OPEN_WIRE_CONFIG

    task: Literal["classification", "regression"] | None = None
    feature_shape: list[int] | None = None
    rows: RowCounts | None = None
    num_classes: int | None = None
    classes: list[str] | None = None
    feature_names: list[str] | None = None
    target_name: str | None = None
    columns: list[ColumnSummary] | None = None
    class_counts: dict[str, int] | None = None
    problems: list[DataErrorJson] | None = None


class BuiltinDataset(BaseModel):
    """One built-in dataset (engine.data.BUILTIN_DATASETS)."""

    model_config = WIRE_CONFIG

    name: str
    title: str
    task: str
    feature_shape: list[int]
    num_classes: int | None
    rows: int
    description: str


class BuiltinList(BaseModel):
    """GET /api/datasets/builtins/."""

    model_config = WIRE_CONFIG

    results: list[BuiltinDataset]


class TablePreview(BaseModel):
    model_config = WIRE_CONFIG

    kind: Literal["table"]
    columns: list[str]
    rows: list[list[Any]]


class ImageSample(BaseModel):
    model_config = WIRE_CONFIG

    label: str
    png: str = Field(description="Base64 PNG.")


class ImagesPreview(BaseModel):
    model_config = WIRE_CONFIG

    kind: Literal["images"]
    samples: list[ImageSample]


class DatasetPreview(
    RootModel[Annotated[TablePreview | ImagesPreview, Field(discriminator="kind")]]
):
    """GET /api/datasets/<id>/preview/: a table's first rows or a few images per class."""


class VersionRef(BaseModel):
    model_config = WIRE_CONFIG

    number: int
    digest: str


class DiffCounts(BaseModel):
    """Rows (a table) or files (an archive) before and after, and how many were added, removed, changed."""

    model_config = OPEN_WIRE_CONFIG

    before: int
    after: int
    added: int
    removed: int
    changed: int | None = Field(None, description="Rows: only when matched by a key column.")
    unchanged: int


class DiffColumns(BaseModel):
    model_config = OPEN_WIRE_CONFIG

    added: list[str]
    removed: list[str]
    retyped: list[dict[str, str]] = Field(description="{column, before, after}: numeric | text | empty.")


class ClassBalance(BaseModel):
    model_config = OPEN_WIRE_CONFIG

    column: str | None = None
    before: dict[str, int] | None = None
    after: dict[str, int] | None = None


class VersionDiff(BaseModel):
    """GET /api/datasets/<id>/versions/diff/: what changed from one version to another
    (engine/data/diff.py). Examples are capped at 20 per kind; the counts are exact."""

    model_config = OPEN_WIRE_CONFIG

    from_: VersionRef = Field(alias="from")
    to: VersionRef
    same_bytes: bool
    kind: str = Field(description="table | archive | tensors")
    key: str | None = None
    rows: DiffCounts | None = None
    files: DiffCounts | None = None
    examples: dict[str, list[Any]] | None = Field(None, description="added, removed, changed: the first rows or file names.")
    columns: DiffColumns | None = None
    statistics: dict[str, dict[str, Any]] | None = Field(
        None, description="Per column {before, after}: {type, count, missing, distinct, mean?, std?} or null.")
    class_balance: ClassBalance | None = None


DATASET_SUMMARY_SCHEMA: dict[str, Any] = {"$ref": "#/components/schemas/DatasetSummary"}
DATA_ERROR_SCHEMA: dict[str, Any] = {"$ref": "#/components/schemas/DataErrorJson"}


def components_hook(
    result: dict[str, Any], generator: Any, request: Any, public: bool
) -> dict[str, Any]:
    """drf-spectacular postprocessing hook: the models the dataset serializer's fields refer to."""
    return components_add(result, pydantic_components(DatasetSummary, DataErrorJson))


@extend_schema_field({"allOf": [DATA_ERROR_SCHEMA], "nullable": True})
class DataErrorField(serializers.JSONField):
    """A failed dataset's engine error (DataErrorJson), null otherwise."""
