"""OpenAPI shapes of the graphs API's engine answers: the op catalog and the validation report.

Both are served unchanged from the engine (`catalog_json()`, `ValidationReport.to_json()`). The
catalog's parameter entry is the engine's own `Param` dataclass and its kinds are the engine's
`ParamType`, so a kind or a field added there appears in the browser's types by regenerating
(`make gen-types`); tests/webapp/test_wire_schema.py checks every served op against these models.
"""

from __future__ import annotations

from typing import Any, get_args

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
    path: list[str] | None = Field(
        default=None,
        description="For a problem inside a block instance: the instance ids and the inner node, "
        "outermost first (['stage1', 'res2', 'conv1']); absent otherwise.",
    )


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


# --- GET /api/graphs/<id>/diff/ (webapp.graphs.selectors.spec_diff) -----------------------------


class ValueChange(_Answer):
    """One value that differs: a parameter of a node, or an input's shape or dtype (null: not set)."""

    name: str
    from_: Any = Field(alias="from")
    to: Any


class OpChange(_Answer):
    """The op of a node that kept its id."""

    from_: str | None = Field(alias="from")
    to: str | None


class RefsChange(_Answer):
    """A node's ordered inputs (or the graph's outputs) before and after."""

    from_: list[str] = Field(alias="from")
    to: list[str]


class DiffNode(_Answer):
    """A node added or removed, as it is in the revision that has it."""

    id: str
    op: str | None
    params: dict[str, Any]


class DiffNodeChange(_Answer):
    """A node in both revisions whose op, parameters or order of inputs differ."""

    id: str
    op: OpChange | None
    params: list[ValueChange]
    inputs: RefsChange | None = Field(
        default=None, description="Set when the inputs it keeps are read in another order."
    )


class DiffNodes(_Answer):
    added: list[DiffNode]
    removed: list[DiffNode]
    changed: list[DiffNodeChange]


class DiffEdge(_Answer):
    """One wire: `source` is a node or input id, or port "node:k"; `target` the node reading it."""

    source: str
    target: str


class DiffEdges(_Answer):
    added: list[DiffEdge]
    removed: list[DiffEdge]


class DiffInput(_Answer):
    id: str
    shape: list[int] | None
    dtype: str | None


class DiffInputChange(_Answer):
    id: str
    params: list[ValueChange] = Field(description="The fields (shape, dtype) that differ.")


class DiffInputs(_Answer):
    added: list[DiffInput]
    removed: list[DiffInput]
    changed: list[DiffInputChange]


class DiffBlockChange(_Answer):
    """A block definition both revisions carry under one `Name@version`, with what differs inside it."""

    ref: str = Field(description='"Name@version"')
    lines: list[str] = Field(description='"conv1.kernel_size: 3 -> 5", "param channels default: 16 -> 32".')


class DiffBlocks(_Answer):
    """The block definitions (spec version 2) one revision carries and the other does not."""

    added: list[str]
    removed: list[str]
    changed: list[DiffBlockChange]


class RevisionDiff(_Answer):
    """What changed from revision `from` to `to` (layout and UI never count), and the same as lines."""

    graph: int
    from_: int = Field(alias="from")
    to: int
    nodes: DiffNodes
    edges: DiffEdges
    inputs: DiffInputs
    outputs: RefsChange | None = Field(description="null when the outputs are the same.")
    blocks: DiffBlocks = Field(description="Block definitions added, removed and changed (instances are nodes).")
    lines: list[str] = Field(description='The changes as a person reads them: "fc1.out_features: 64 -> 128".')


# --- 409 stale_base of POST /api/graphs/<id>/revisions/ ------------------------------------------


class SavedBy(_Answer):
    """The user who saved a revision (the same as UserRef elsewhere)."""

    id: int
    username: str


class RevisionRef(_Answer):
    """Who saved a revision, and when."""

    number: int
    created_by: SavedBy | None
    created_at: str


class StaleBaseDetail(_Answer):
    code: str = Field(description='"stale_base"')
    message: str
    fields: dict[str, list[str]]
    latest: RevisionRef = Field(description="The newer revision someone saved after `base`.")
    base: int = Field(description="The revision the refused save started from.")


class StaleBaseError(_Answer):
    """409: the save started from a revision that is no longer the latest (send force: true to save anyway)."""

    error: StaleBaseDetail
