"""A sweep's search space: parsed into Optuna distributions, checked against the config and the graph.

    dims = space_parse(space, strategy="tpe", spec=revision.spec, base_config=config_json)
    config = trial_config(base_config, dims, params)    # the base config with the trial's values
    spec = trial_spec(revision.spec, dims, params)      # the base graph with its node overrides

A key is a dotted TrainConfig path (`optimizer.lr`, `batch_size`, `early_stopping.patience`) or
`nodes.<node id>.<param>` (a parameter of a node of the graph). Each entry is
{"type": "float", "low", "high", "log"?, "step"?} | {"type": "int", "low", "high", "step"?, "log"?}
| {"type": "categorical", "choices": [...]}. Every problem is a DomainError naming `space.<key>`.
Checked here: the key exists, the values fit the field's kind and range (a config key by parsing
the base config with the bounds and choices in it; a node parameter against the op catalog).
Whether a whole combination trains is checked per trial, before its run is queued (services).
"""

from __future__ import annotations

import copy
import math
import re
from dataclasses import dataclass
from typing import Any

from webapp.errors import DomainError

MAX_DIMENSIONS = 32
MAX_CHOICES = 1000
MAX_GRID = 100_000  # points of a grid (Optuna's GridSampler lists them all)
_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_ENTRY_FIELDS = {
    "float": {"type", "low", "high", "log", "step"},
    "int": {"type", "low", "high", "log", "step"},
    "categorical": {"type", "choices"},
}


@dataclass(frozen=True)
class Dimension:
    """One key of the space: its Optuna distribution and where its value goes."""

    key: str
    kind: str  # float | int | categorical
    distribution: Any  # optuna.distributions.BaseDistribution
    values: tuple[Any, ...] | None  # every value (int and categorical dimensions), for a grid
    node: str | None = None  # nodes.<node>.<param>
    param: str | None = None
    path: tuple[str, ...] = ()  # a config path

    @property
    def on_graph(self) -> bool:
        """True for a node parameter (the trial's graph differs from the base)."""
        return self.node is not None


def _error(key: str, message: str) -> DomainError:
    return DomainError("invalid_space", f"space.{key}: {message}", field=f"space.{key}")


def _number(value: Any, *, integer: bool) -> bool:
    if isinstance(value, bool):
        return False
    if integer:
        return isinstance(value, int)
    return isinstance(value, int | float) and math.isfinite(value)


def _distribution(key: str, entry: Any) -> tuple[str, Any, tuple[Any, ...] | None]:
    """(kind, Optuna distribution, discrete values or None) of one space entry."""
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

    if not isinstance(entry, dict):
        raise _error(key, 'must be an object such as {"type": "float", "low": 0.0001, "high": 0.1, "log": true}.')
    kind = entry.get("type")
    if kind not in _ENTRY_FIELDS:
        raise _error(key, f"type must be float, int or categorical, not {kind!r}.")
    unknown = sorted(set(entry) - _ENTRY_FIELDS[kind])
    if unknown:
        raise _error(key, f"unknown field {unknown[0]!r} for type {kind} (it takes {', '.join(sorted(_ENTRY_FIELDS[kind]))}).")
    if kind == "categorical":
        choices = entry.get("choices")
        if not isinstance(choices, list) or not choices:
            raise _error(key, "choices must be a non-empty list.")
        if len(choices) > MAX_CHOICES:
            raise _error(key, f"at most {MAX_CHOICES} choices.")
        for choice in choices:
            if choice is not None and not isinstance(choice, bool | int | float | str):
                raise _error(key, f"choice {choice!r} is not a number, a string, true/false or null.")
            if isinstance(choice, float) and not math.isfinite(choice):
                raise _error(key, "choices must be finite numbers.")
        if len({(type(c).__name__, c) for c in choices}) != len(choices):
            raise _error(key, "choices must differ from each other.")
        return kind, CategoricalDistribution(choices), tuple(choices)
    integer = kind == "int"
    low, high = entry.get("low"), entry.get("high")
    what = "whole numbers" if integer else "numbers"
    if not _number(low, integer=integer) or not _number(high, integer=integer):
        raise _error(key, f"low and high must be {what}.")
    log = entry.get("log", False)
    if not isinstance(log, bool):
        raise _error(key, "log must be true or false.")
    step = entry.get("step")
    if step is not None and (not _number(step, integer=integer) or step <= 0):
        raise _error(key, f"step must be a {'whole ' if integer else ''}number above 0.")
    if low > high:
        raise _error(key, f"low ({low}) must not be above high ({high}).")
    if log and low <= 0:
        raise _error(key, f"a log scale needs low above 0 (it is {low}).")
    if log and step not in (None, 1):
        raise _error(key, "step cannot be combined with a log scale.")
    try:
        if integer:
            distribution = IntDistribution(low, high, log=log, step=step or 1)
            count = (high - low) // (step or 1) + 1
            # Listed only when a grid could take them all (space_dimensions refuses more).
            values: tuple[Any, ...] | None = tuple(range(low, high + 1, step or 1)) if count <= MAX_GRID else None
        else:
            distribution = FloatDistribution(low, high, log=log, step=step)
            values = None
    except ValueError as exc:
        raise _error(key, str(exc)) from None
    return kind, distribution, values


def _probe_values(dim_kind: str, distribution: Any, values: tuple[Any, ...] | None) -> list[Any]:
    """Values that stand for a dimension when checking where it goes: bounds, an inner value, choices."""
    if dim_kind == "categorical":
        return list(values or ())
    low, high = distribution.low, distribution.high
    if dim_kind == "int":
        return sorted({low, high})
    # An inner value with a fraction, so an integer config field refuses a float dimension.
    return sorted({float(low), float(high), float(low + (high - low) * 0.37)})


def _set_path(config: dict[str, Any], path: tuple[str, ...], value: Any, key: str) -> dict[str, Any]:
    out = copy.deepcopy(config)
    here = out
    for i, name in enumerate(path[:-1]):
        inner = here.get(name)
        if inner is None:
            inner = here[name] = {}
        if not isinstance(inner, dict):
            raise _error(key, f"{'.'.join(path[: i + 1])} is not an object of the training config.")
        here = inner
    here[path[-1]] = value
    return out


def _check_config_key(key: str, path: tuple[str, ...], probes: list[Any], base_config: dict[str, Any]) -> None:
    from webapp.runs.services import run_config_parse

    top = path[0]
    if top not in base_config:
        raise _error(key, f"{top!r} is not a training config field (e.g. optimizer.lr, batch_size, epochs).")
    for value in probes:
        try:
            run_config_parse(_set_path(base_config, path, value, key))
        except DomainError as exc:
            messages = [m for field, ms in exc.fields.items() for m in ms]
            text = messages[0] if messages else exc.message
            if "Extra inputs are not permitted" in text:
                raise _error(key, f"{key!r} is not a training config field.") from None
            raise _error(key, f"value {value!r} does not fit the training config: {text}") from None


def _op_params(op: str) -> dict[str, dict[str, Any]] | None:
    from engine.ops import catalog_json

    for entry in catalog_json()["ops"]:
        if entry["name"] == op:
            return {p["name"]: p for p in entry["params"]}
    return None


def _check_param_value(key: str, info: dict[str, Any], value: Any) -> None:
    """A node parameter's value against its catalog entry (kind, range, choices)."""
    kind = info["type"]
    if value is None:
        if not info.get("nullable"):
            raise _error(key, f"{info['name']} cannot be null.")
        return
    choices = info.get("choices") or []
    if kind == "bool":
        ok = isinstance(value, bool)
    elif kind == "choice":
        ok = value in choices
    elif kind in ("int", "int_or_tuple"):
        ok = _number(value, integer=True) or (kind == "int_or_tuple" and isinstance(value, str) and value in choices)
    elif kind == "float":
        ok = _number(value, integer=False)
    else:  # lists (int_list, a tuple): not a value Optuna can sample
        raise _error(key, f"{info['name']} takes a list ({kind}); it cannot be searched.")
    if not ok:
        expected = {"bool": "true or false", "choice": f"one of {choices}", "int": "a whole number",
                    "int_or_tuple": "a whole number" + (f" or one of {choices}" if choices else ""),
                    "float": "a number"}[kind]
        raise _error(key, f"{info['name']} takes {expected}, not {value!r}.")
    if isinstance(value, int | float) and not isinstance(value, bool):
        if info.get("min") is not None and value < info["min"]:
            raise _error(key, f"{info['name']} must be at least {info['min']:g} (got {value}).")
        if info.get("max") is not None and value > info["max"]:
            raise _error(key, f"{info['name']} must be at most {info['max']:g} (got {value}).")


def _check_node_key(dim: Dimension, spec: dict[str, Any], probes: list[Any]) -> None:
    key, node_id, param = dim.key, dim.node, str(dim.param)
    node = next((n for n in (spec or {}).get("nodes") or [] if n.get("id") == node_id), None)
    if node is None:
        raise _error(key, f"the graph has no node {node_id!r}.")
    params = _op_params(str(node.get("op")))
    if params is None or param not in params:
        known = ", ".join(sorted(params or {})) or "none"
        raise _error(key, f"node {node_id} ({node.get('op')}) has no parameter {param!r}; its parameters: {known}.")
    info = params[param]
    if dim.kind == "float" and info["type"] != "float":
        raise _error(key, f"{param} of node {node_id} takes {info['type']} values; use type int or categorical.")
    if dim.kind == "int" and info["type"] not in ("int", "int_or_tuple", "float"):
        raise _error(key, f"{param} of node {node_id} takes {info['type']} values; use type categorical.")
    for value in probes:
        _check_param_value(key, info, value)


def space_dimensions(space: Any, *, strategy: str) -> list[Dimension]:
    """The space's dimensions in key order (their shape only), or a DomainError naming `space.<key>`."""
    if not isinstance(space, dict) or not space:
        raise DomainError("invalid_space", "space must be an object with at least one key.",
                          field="space")
    if len(space) > MAX_DIMENSIONS:
        raise DomainError("invalid_space", f"space has {len(space)} keys; at most {MAX_DIMENSIONS}.", field="space")
    dims: list[Dimension] = []
    for key in sorted(space):
        if not isinstance(key, str) or not _KEY.match(key):
            raise _error(str(key), "a key is a dotted config path (optimizer.lr) or nodes.<node id>.<parameter>.")
        kind, distribution, values = _distribution(key, space[key])
        if strategy == "grid" and kind == "float":
            raise _error(key, "a grid needs discrete values: use type int or categorical (or another strategy).")
        if strategy == "grid" and values is None:
            raise _error(key, f"too many values for a grid (at most {MAX_GRID}).")
        parts = key.split(".")
        if parts[0] == "nodes":
            if len(parts) != 3:
                raise _error(key, "a node parameter is named nodes.<node id>.<parameter> (e.g. nodes.fc1.out_features).")
            dims.append(Dimension(key=key, kind=kind, distribution=distribution, values=values, node=parts[1],
                                  param=parts[2]))
        else:
            dims.append(Dimension(key=key, kind=kind, distribution=distribution, values=values, path=tuple(parts)))
    if strategy == "grid":
        size = grid_size(dims)
        if size > MAX_GRID:
            raise DomainError("invalid_space", f"the grid has {size} points; at most {MAX_GRID}.", field="space")
    return dims


def space_parse(
    space: Any, *, strategy: str, spec: dict[str, Any], base_config: dict[str, Any]
) -> list[Dimension]:
    """The space's dimensions, each checked against the base config or the graph's node and op."""
    dims = space_dimensions(space, strategy=strategy)
    for dim in dims:
        probes = _probe_values(dim.kind, dim.distribution, dim.values)
        if dim.on_graph:
            _check_node_key(dim, spec, probes)
        else:
            _check_config_key(dim.key, dim.path, probes, base_config)
    return dims


def grid_size(dims: list[Dimension]) -> int:
    """How many points the grid of these (discrete) dimensions has."""
    size = 1
    for dim in dims:
        size *= len(dim.values or ())
    return size


def trial_config(base_config: dict[str, Any], dims: list[Dimension], params: dict[str, Any]) -> dict[str, Any]:
    """The base config with the trial's config values set (still to be parsed by run_config_parse)."""
    config = copy.deepcopy(base_config)
    for dim in dims:
        if not dim.on_graph and dim.key in params:
            config = _set_path(config, dim.path, params[dim.key], dim.key)
    return config


def trial_spec(spec: dict[str, Any], dims: list[Dimension], params: dict[str, Any]) -> dict[str, Any]:
    """The base graph spec with the trial's node parameters set."""
    out = copy.deepcopy(spec)
    by_id = {node.get("id"): node for node in out.get("nodes") or []}
    for dim in dims:
        if dim.on_graph and dim.key in params:
            node = by_id[dim.node]
            node["params"] = {**(node.get("params") or {}), dim.param: params[dim.key]}
    return out

