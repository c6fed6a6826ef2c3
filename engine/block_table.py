"""The blocks a spec carries, as validate() and engine.blocks read them.

Block keys ("ResBlock@2"), the table of a spec's definitions with its cycles and nesting depth,
an instance's parameter values, `{"$param": p}` substitution, and a block's body as a graph.
engine.blocks is the public face (it re-exports these); this module is apart so that
engine.validate can use them and engine.blocks can use engine.validate without a cycle.
"""

from __future__ import annotations

import keyword
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.spec import BLOCK_SEPARATOR, BlockSpec, GraphSpec, InputSpec

MAX_BLOCK_DEPTH = 8
PARAM_REF = "$param"
# Block parameter names become keyword arguments of the generated class's constructor.
_RESERVED_PARAM_NAMES = frozenset({"self", "torch", "nn", "super"})


def is_block_op(op: str) -> bool:
    """True when a node's op names a block ("ResBlock@2") rather than a catalog op."""
    return BLOCK_SEPARATOR in op


def block_key(name: str, version: int) -> str:
    """The op an instance of block `name` version `version` has: 'ResBlock@2'."""
    return f"{name}{BLOCK_SEPARATOR}{version}"


def param_ref(value: Any) -> str | None:
    """The block parameter a value refers to ({"$param": "channels"} -> 'channels'), or None."""
    if isinstance(value, dict) and len(value) == 1 and isinstance(value.get(PARAM_REF), str):
        return str(value[PARAM_REF])
    return None


def substitute(
    params: Mapping[str, Any], values: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, str], list[tuple[str, str]]]:
    """Replace every {"$param": p} in a node's params (also inside lists) by values[p].

    Returns:
        (params, bound, undeclared): `bound` maps a parameter whose whole value is a reference
        to the block parameter it names; `undeclared` lists (parameter, name) for references to
        a block parameter that `values` does not have (those keep their reference).
    """
    bound: dict[str, str] = {}
    undeclared: list[tuple[str, str]] = []

    def replace(key: str, value: Any) -> Any:
        name = param_ref(value)
        if name is not None:
            if name in values:
                return values[name]
            undeclared.append((key, name))
            return value
        if isinstance(value, list):
            return [replace(key, v) for v in value]
        return value

    result = {}
    for key, value in params.items():
        name = param_ref(value)
        if name is not None and name in values:
            bound[key] = name
        result[key] = replace(key, value)
    return result, bound, undeclared


def resolve_instance_params(
    block: BlockSpec, raw: Mapping[str, Any]
) -> tuple[dict[str, Any], list[tuple[str, str, str]]]:
    """An instance's block-parameter values with defaults filled in, and [(code, field, message)]
    for each parameter the block does not have."""
    problems = []
    declared = {p.name: p for p in block.params}
    for key in raw:
        if key not in declared:
            known = ", ".join(declared) or "none"
            problems.append(
                (
                    "bad_param",
                    str(key),
                    f"{block.key} has no parameter '{str(key)[:64]}' (known: {known})",
                )
            )
    resolved = {name: raw.get(name, p.default) for name, p in declared.items()}
    return resolved, problems


def body_spec(block: BlockSpec, inputs: Sequence[tuple[Sequence[int], str]] | None) -> GraphSpec:
    """The block's body as a graph whose inputs are the block's inputs with the given
    (shape, dtype); None: structure only (a placeholder shape, never inferred through)."""
    specs = [
        InputSpec.model_construct(
            id=port.id,
            shape=list(inputs[i][0]) if inputs is not None else [1],
            dtype=inputs[i][1] if inputs is not None else "float32",
        )
        for i, port in enumerate(block.inputs)
    ]
    return GraphSpec.model_construct(
        version=2,
        inputs=specs,
        nodes=list(block.nodes),
        outputs=list(block.outputs),
        blocks=[],
        layout={},
        ui={},
    )


def used_blocks(block: BlockSpec) -> list[str]:
    """The block keys a block's nodes place, in the order they first appear."""
    return list(dict.fromkeys(n.op for n in block.nodes if is_block_op(n.op)))


@dataclass
class BlockTable:
    """The blocks a spec carries, by key, with what is wrong with the set as a whole."""

    by_key: dict[str, BlockSpec] = field(default_factory=dict)
    # (field, code, message): problems of the definitions themselves (graph-level).
    problems: list[tuple[str, str, str]] = field(default_factory=list)
    # Each block on a cycle -> the cycle from it, 'A@1 -> B@1 -> A@1'; each cycle once.
    cycles: dict[str, str] = field(default_factory=dict)
    loops: list[str] = field(default_factory=list)
    _heights: dict[str, int] = field(default_factory=dict, repr=False)

    @classmethod
    def from_blocks(
        cls, blocks: Iterable[BlockSpec], paths: Sequence[str] | None = None
    ) -> BlockTable:
        """Index `blocks`; duplicate keys, reserved names and cycles become `problems`, each at
        the block's path (`paths`, default `blocks[i]`)."""
        table = cls()
        for i, block in enumerate(blocks):
            path = paths[i] if paths is not None else f"blocks[{i}]"
            if block.key in table.by_key:
                table.problems.append(
                    (path, "duplicate_id", f"block {block.key} is defined more than once")
                )
                continue
            table.by_key[block.key] = block
            if keyword.iskeyword(block.name):
                table.problems.append(
                    (f"{path}.name", "bad_id", f"block name '{block.name}' is a Python keyword")
                )
            seen: set[str] = set()
            for j, param in enumerate(block.params):
                if param.name in seen:
                    table.problems.append(
                        (
                            f"{path}.params[{j}]",
                            "duplicate_id",
                            f"block {block.key} declares parameter '{param.name}' twice",
                        )
                    )
                if keyword.iskeyword(param.name) or param.name in _RESERVED_PARAM_NAMES:
                    table.problems.append(
                        (
                            f"{path}.params[{j}]",
                            "bad_id",
                            f"block {block.key} parameter '{param.name}' is reserved; choose another",
                        )
                    )
                seen.add(param.name)
        table._find_cycles()
        where = "blocks" if paths is None else "dependencies"
        for text in table.loops:
            table.problems.append((where, "block_cycle", f"a block contains itself: {text}"))
        return table

    def _find_cycles(self) -> None:
        # Depth-first with an explicit stack; a back edge closes a cycle through the stack.
        state: dict[str, int] = {}  # 1: on the stack, 2: done
        for root in self.by_key:
            if root in state:
                continue
            stack: list[tuple[str, list[str]]] = [(root, self._deps(root))]
            state[root] = 1
            while stack:
                key, pending = stack[-1]
                if not pending:
                    state[key] = 2
                    stack.pop()
                    continue
                nxt = pending.pop(0)
                if state.get(nxt) == 1:
                    path = [k for k, _ in stack]
                    loop = path[path.index(nxt) :]
                    self.loops.append(" -> ".join([*loop, loop[0]]))
                    for i, member in enumerate(loop):  # each member's cycle starts at itself
                        turned = loop[i:] + loop[:i]
                        self.cycles.setdefault(member, " -> ".join([*turned, member]))
                elif nxt not in state:
                    state[nxt] = 1
                    stack.append((nxt, self._deps(nxt)))

    def _deps(self, key: str) -> list[str]:
        return [k for k in used_blocks(self.by_key[key]) if k in self.by_key]

    def on_cycle(self, key: str) -> str | None:
        """The cycle a block is on or leads to, or None."""
        todo, seen = [key], set()
        while todo:
            k = todo.pop()
            if k in self.cycles:
                return self.cycles[k]
            if k in seen or k not in self.by_key:
                continue
            seen.add(k)
            todo.extend(self._deps(k))
        return None

    def cycle_problem(self, key: str) -> str | None:
        """Why an instance of `key` cannot be built because of a cycle, or None."""
        cycle = self.on_cycle(key)
        if cycle is None:
            return None
        if key in self.cycles:
            return f"block {key} contains itself: {cycle}"
        return f"block {key} places a block that contains itself: {cycle}"

    def height(self, key: str) -> int:
        """How deep blocks nest from this one down (a block of catalog ops only: 1); call only
        for blocks on no cycle."""
        if key in self._heights:
            return self._heights[key]
        # Iterative post-order: nesting is bounded by the number of blocks, not the stack.
        stack = [key]
        while stack:
            k = stack[-1]
            todo = [d for d in self._deps(k) if d not in self._heights]
            if todo:
                stack.extend(todo)
                continue
            stack.pop()
            self._heights[k] = 1 + max((self._heights[d] for d in self._deps(k)), default=0)
        return self._heights[key]

    def deepest_chain(self, key: str) -> list[str]:
        """The longest chain of nested blocks from `key` down, for the depth message."""
        chain = [key]
        while deps := self._deps(chain[-1]):
            chain.append(max(deps, key=self.height))
        return chain

    def reachable(self, keys: Iterable[str]) -> set[str]:
        """`keys` and every block they place, directly or through others."""
        todo, seen = list(keys), set()
        while todo:
            k = todo.pop()
            if k in seen or k not in self.by_key:
                continue
            seen.add(k)
            todo.extend(self._deps(k))
        return seen

    def unknown_block_hint(self, op: str) -> str:
        """What to say about an instance of a block the table lacks."""
        name = op.rpartition(BLOCK_SEPARATOR)[0]
        others = [k for k, b in self.by_key.items() if b.name == name]
        if others:
            return f" (this spec has {', '.join(others)})"
        return " (add its definition to the spec's blocks)"
