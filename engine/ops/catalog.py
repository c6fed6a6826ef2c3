"""The catalog's typed shape: what `GET /api/ops/` serves, as pydantic models with a JSON Schema.

The browser's palette and parameter forms are drawn from this; its TypeScript types can be
generated from `catalog_json_schema()`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

ParamKind = Literal["int", "float", "bool", "choice", "int_list", "int_or_tuple"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ParamInfo(_Model):
    """One op parameter: its kind, default, bounds and help text."""

    name: str
    type: ParamKind = Field(
        description=(
            "int | float | bool | choice (one of `choices`) | int_list (list of ints, "
            "`min_items`..`max_items`) | int_or_tuple (one int, or a list of `dims` ints; any "
            "length in `min_items`..`max_items` when `dims` is null; items may be null when "
            "`item_nullable`; the strings in `choices` are accepted too)"
        )
    )
    default: Any = None
    required: bool = False
    min: float | None = Field(None, description="Lower bound of the number (each item of a list).")
    max: float | None = Field(None, description="Upper bound of the number (each item of a list).")
    choices: list[str] | None = None
    nullable: bool = Field(False, description="null is a value (e.g. stride: null = kernel_size).")
    help: str = ""
    min_items: int | None = None
    max_items: int | None = None
    dims: int | None = Field(
        None, description="int_or_tuple: how many items a list has (one per spatial dimension)."
    )
    item_nullable: bool = Field(
        False, description="int_or_tuple: a list item may be null ('keep that size')."
    )


class Arity(_Model):
    """How many inputs an op takes (max null: any number)."""

    min: int
    max: int | None


class OpInfo(_Model):
    """One op as the palette and the inspector show it."""

    name: str
    category: str
    help: str
    torch_name: str = Field("", description="What a PyTorch user calls it: nn.Conv2d, torch.split.")
    keywords: list[str] = Field(default_factory=list, description="Search words: what it does.")
    arity: Arity
    input_dtypes: list[Literal["float32", "int64"]]
    input: str = Field(description="The input layout it expects, in words: [C, H, W].")
    inferred: list[str] = Field(description="Sizes taken from the incoming shape, never typed.")
    kind: Literal["module", "function"]
    multi_output: bool = Field(
        False,
        description="Several outputs (ports 0..n-1); a spec refers to port k of node n as 'n:k'.",
    )
    params: list[ParamInfo]


class OpCatalog(_Model):
    """The whole op catalog."""

    version: int
    categories: list[str]
    ops: list[OpInfo]


def catalog_json_schema() -> dict[str, Any]:
    """JSON Schema of the catalog document (for the API schema and generated TypeScript types)."""
    return OpCatalog.model_json_schema()
