"""OpenAPI shapes of the graphs API's engine answers: the op catalog and the validation report.

Both are served unchanged from the engine (`catalog_json()`, `ValidationReport.to_json()`). The
catalog's parameter entry is the engine's own `Param` dataclass and its kinds are the engine's
`ParamType`, so a kind or a field added there appears in the browser's types by regenerating
(`make gen-types`); tests/webapp/test_wire_schema.py checks every served op against these models.
"""

from __future__ import annotations

from typing import get_args

from drf_spectacular.utils import extend_schema_field
from pydantic import BaseModel, Field
from rest_framework import serializers

from engine.ops.registry import Param, ParamType
from webapp.api.schema import WIRE_CONFIG

# The engine's parameter kinds (the OpenAPI enum ParamKindEnum: SPECTACULAR_SETTINGS' ENUM_NAME_OVERRIDES).
PARAM_KINDS: tuple[str, ...] = get_args(ParamType)


class _Answer(BaseModel):
    model_config = WIRE_CONFIG


class Arity(_Answer):
    """How many inputs an op takes (max null: any number)."""

    min: int
    max: int | None


class OpSchema(_Answer):
    """One op of the catalog: what the palette shows and the parameter form is drawn from."""

    name: str
    category: str
    help: str
    arity: Arity
    input_dtypes: list[str]
    input: str = Field(description="A hint about the input it expects.")
    inferred: list[str] = Field(
        description="Sizes taken from the incoming shape (in_features, ...)."
    )
    kind: str = Field(description='"module" (an nn.Module) or "function".')
    torch_name: str = ""
    keywords: list[str] = []
    multi_output: bool = False
    params: list[Param]


class OpCatalog(_Answer):
    """GET /api/ops/: engine.ops.catalog_json()."""

    version: int
    categories: list[str] = Field(description="Category order for the palette.")
    ops: list[OpSchema]


class ValidationProblem(_Answer):
    """One problem of a spec, with the node (and parameter) it belongs to."""

    node: str | None
    code: str
    field: str | None
    message: str


class NodeReport(_Answer):
    """What validation learned about one node (shape null: unknown because of an error)."""

    op: str
    shape: list[int] | None
    params: int | None
    # A node with several outputs (Split, Chunk): each port's shape, read as "<node>:<k>".
    ports: list[list[int]] | None = None


class ValidationReport(_Answer):
    """POST /api/graphs/validate/: engine.validate(...).to_json() (200 even when invalid)."""

    valid: bool
    errors: list[ValidationProblem]
    warnings: list[ValidationProblem]
    nodes: dict[str, NodeReport]
    outputs: dict[str, list[int] | None]
    total_params: int
    activation_bytes: int


@extend_schema_field(
    {
        "type": "object",
        "additionalProperties": {},
        "description": "A graph spec (version, inputs, nodes, outputs, layout); the engine checks it "
        "and names every problem by node (`python -m engine schema` prints its JSON Schema).",
    }
)
class SpecField(serializers.JSONField):
    """A graph spec in a request: a JSON object (anything else is a 400, never stored)."""
