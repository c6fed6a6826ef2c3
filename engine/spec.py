"""The graph spec (versions 1 and 2): pydantic models, parsing, hashing and JSON Schema.

Version 2 adds `blocks`: reusable subgraph definitions placed as nodes whose op is
"<name>@<version>" (see engine/blocks.py). A version-1 spec parses and hashes as it always did.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    StrictStr,
    ValidationError,
    ValidationInfo,
    field_validator,
)
from pydantic_core import PydanticCustomError

# Ids become Python attribute and variable names in the built module and the generated source.
ID_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,63}$"
DEFAULT_MAX_SPEC_BYTES = 5 * 1024 * 1024
# A node with several outputs (Split, Chunk) is read port by port: "split1:0", "split1:1".
PORT_SEPARATOR = ":"
# A block instance's op is "<block name>@<block version>"; no catalog op name contains "@".
BLOCK_SEPARATOR = "@"


def split_ref(ref: str) -> tuple[str, int | None]:
    """An input or output reference as (node id, port): 'split1:1' -> ('split1', 1), 'fc1' ->
    ('fc1', None). Ids cannot contain ':', so the split is unambiguous."""
    node, sep, port = ref.rpartition(PORT_SEPARATOR)
    if sep and node and port.isascii() and port.isdigit() and str(int(port)) == port:
        return node, int(port)
    return ref, None


def port_ref(node: str, port: int | None) -> str:
    """The reference to output `port` of `node` (None: its only output)."""
    return node if port is None else f"{node}{PORT_SEPARATOR}{port}"


class SpecError(ValueError):
    """The input is not a graph spec (not JSON, wrong structure, too large)."""

    def __init__(self, message: str, problems: list[dict[str, str]] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.problems: list[dict[str, str]] = problems or []

    def __str__(self) -> str:
        located = [p for p in self.problems if p["path"] != "(document)"]
        if not located:
            return self.message
        details = "; ".join(f"{p['path']}: {p['message']}" for p in located[:5])
        more = f" (and {len(located) - 5} more)" if len(located) > 5 else ""
        return f"{self.message}: {details}{more}"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class InputSpec(_Strict):
    """One model input: its id, per-sample shape (batch implicit) and dtype."""

    # The id pattern is advertised in the schema but checked by validate(), which reports it
    # against the node instead of refusing the whole document.
    id: StrictStr = Field(json_schema_extra={"pattern": ID_PATTERN})
    shape: list[StrictInt]
    dtype: Literal["float32", "int64"] = "float32"


class NodeSpec(_Strict):
    """One operation: id, op name from the catalog, parameters and ordered input ids."""

    id: StrictStr = Field(json_schema_extra={"pattern": ID_PATTERN})
    op: StrictStr
    params: dict[str, Any] = Field(default_factory=dict)
    inputs: list[StrictStr] = Field(
        default_factory=list,
        description="Ordered references to node or input ids; output k of a node with several "
        "outputs (Split, Chunk) is 'id:k'.",
    )


class BlockParam(_Strict):
    """One parameter a block exposes; inner values written {"$param": name} take its value."""

    name: StrictStr = Field(pattern=ID_PATTERN)
    # Any JSON value; "tsType" keeps the generated TypeScript type `unknown` (not an object type).
    default: Any = Field(
        description="The value an instance that does not set it gets (any JSON).",
        json_schema_extra={"tsType": "unknown"},
    )
    description: StrictStr = ""


class BlockInput(_Strict):
    """One input port of a block; its shape comes from each instance's incoming edge."""

    id: StrictStr = Field(json_schema_extra={"pattern": ID_PATTERN})


class BlockSpec(_Strict):
    """A reusable subgraph, placed in a spec as nodes whose op is "<name>@<version>"."""

    name: StrictStr = Field(
        pattern=ID_PATTERN, description="A Python identifier: the class name in generated code."
    )
    version: StrictInt = Field(ge=1)
    params: list[BlockParam] = Field(default_factory=list)
    inputs: list[BlockInput] = Field(default_factory=list)
    nodes: list[NodeSpec] = Field(default_factory=list)
    outputs: list[StrictStr] = Field(
        default_factory=list,
        description="References the block returns, in order; an instance with several outputs "
        "is read port by port ('inst:0', 'inst:1').",
    )
    description: StrictStr = ""
    layout: dict[str, Any] = Field(default_factory=dict)
    ui: dict[str, Any] = Field(default_factory=dict)

    @property
    def key(self) -> str:
        """How an instance's op names this block: 'ResBlock@2'."""
        return f"{self.name}{BLOCK_SEPARATOR}{self.version}"


class GraphSpec(_Strict):
    """A whole network: inputs, nodes, output ids, plus canvas-only `layout` and `ui`."""

    version: Literal[1, 2] = 1
    inputs: list[InputSpec]
    nodes: list[NodeSpec] = Field(default_factory=list)
    outputs: list[StrictStr] = Field(
        default_factory=list, description="References the model returns, in order ('id' or 'id:k')."
    )
    blocks: list[BlockSpec] = Field(
        default_factory=list,
        description="Definitions of the blocks the nodes place (version 2 only).",
    )
    layout: dict[str, Any] = Field(default_factory=dict)
    ui: dict[str, Any] = Field(default_factory=dict)

    @field_validator("blocks")
    @classmethod
    def _blocks_need_version_2(cls, blocks: list[BlockSpec], info: ValidationInfo) -> Any:
        if blocks and info.data.get("version") == 1:
            raise PydanticCustomError("blocks_version", "blocks need spec version 2")
        return blocks


def _loc_to_path(loc: tuple[Any, ...]) -> str:
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path or "(document)"


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not valid JSON")


def _load_json(text: str | bytes | bytearray, max_bytes: int) -> Any:
    # Check the size before parsing so a huge upload costs nothing but its length.
    size = len(text) if isinstance(text, bytes | bytearray) else len(text)
    if isinstance(text, str) and size <= max_bytes:
        size = len(text.encode("utf-8", errors="surrogatepass"))
    if size > max_bytes:
        raise SpecError(
            f"spec is too large: {size} bytes, the limit is {max_bytes} bytes",
            [{"path": "(document)", "message": f"larger than {max_bytes} bytes"}],
        )
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise SpecError(
            f"not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}",
            [
                {
                    "path": "(document)",
                    "message": f"{exc.msg} at line {exc.lineno} column {exc.colno}",
                }
            ],
        ) from None
    except (ValueError, RecursionError, UnicodeDecodeError) as exc:
        # ValueError: NaN/Infinity or integers longer than Python allows; RecursionError: nesting.
        reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise SpecError(
            f"not JSON: {reason}", [{"path": "(document)", "message": reason}]
        ) from None


def parse_spec(obj: Any, max_bytes: int = DEFAULT_MAX_SPEC_BYTES) -> GraphSpec:
    """Parse a dict, JSON text or bytes into a GraphSpec, or raise SpecError naming each path."""
    if isinstance(obj, GraphSpec):
        return obj
    if isinstance(obj, str | bytes | bytearray):
        obj = _load_json(obj, max_bytes)
    if not isinstance(obj, dict):
        kind = type(obj).__name__ if obj is not None else "null"
        raise SpecError(
            f"not a graph spec: expected a JSON object, got {kind}",
            [{"path": "(document)", "message": f"expected an object, got {kind}"}],
        )
    try:
        return GraphSpec.model_validate(obj)
    except ValidationError as exc:
        problems = [
            {"path": _loc_to_path(tuple(err["loc"])), "message": err["msg"]}
            for err in exc.errors(include_url=False)
        ]
        raise SpecError("not a graph spec", problems) from None
    except RecursionError:
        raise SpecError(
            "not a graph spec: nested too deeply",
            [{"path": "(document)", "message": "nested too deeply"}],
        ) from None


def canonical_json(spec: GraphSpec) -> str:
    """Canonical JSON of the executable part (no layout/ui, also none of the blocks'): sorted
    keys, no spaces. A version-1 spec leaves `blocks` out, so its hash is what it always was."""
    data = spec.model_dump(mode="json", exclude={"layout", "ui", "blocks"})
    if spec.version != 1 or spec.blocks:
        data["blocks"] = [b.model_dump(mode="json", exclude={"layout", "ui"}) for b in spec.blocks]
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def spec_hash(spec: GraphSpec | dict[str, Any] | str | bytes) -> str:
    """SHA-256 hex digest of the canonical JSON; layout and ui do not change it."""
    parsed = parse_spec(spec)
    return hashlib.sha256(canonical_json(parsed).encode("utf-8")).hexdigest()


def graph_json_schema() -> dict[str, Any]:
    """JSON Schema of the graph spec (for the API docs and the frontend's types)."""
    return GraphSpec.model_json_schema()
