"""The expressions the runs list orders JSON values by, shared with Run's expression indexes
(models.py): an index serves a query only where both hold the same expression, so both are built
here (docs/decisions/0023-runs-expression-indexes.md).
"""

from __future__ import annotations

import json
from typing import Any

from django.db.models import F
from django.db.models.expressions import OrderBy
from django.db.models.fields.json import KeyTransform, compile_json_path
from django.db.models.lookups import IsNull

# The final metrics with an index per team in their best-first direction (descending: larger is
# better): val/loss is written by every run (the default best-checkpoint monitor), val/accuracy by
# every classification run (the runs page's first sort). Other names are sorted per request.
INDEXED_METRICS: dict[str, bool] = {"val/accuracy": True, "val/loss": False}


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


class JSONValue(KeyTransform):
    """A JSON field's value at a key path, its path written into the SQL as a literal.

    Django binds a key transform's path as a parameter; SQLite never matches a bound `?` with an
    index's expression, nor does a PostgreSQL generic plan under server-side binding. SQLite:
    JSON_EXTRACT (JSON null reads as NULL, true/false as 1/0); PostgreSQL: jsonb `->` / `#>`.
    """

    def as_sqlite(self, compiler: Any, connection: Any) -> tuple[str, tuple[Any, ...]]:
        lhs, params, keys = self.preprocess_lhs(compiler, connection)
        return f"JSON_EXTRACT({lhs}, {_literal(compile_json_path(keys))})", tuple(params)

    def as_postgresql(self, compiler: Any, connection: Any) -> tuple[str, tuple[Any, ...]]:
        lhs, params, keys = self.preprocess_lhs(compiler, connection)
        if len(keys) > 1:
            path = "{" + ",".join(json.dumps(key) for key in keys) + "}"
            return f"({lhs} #> {_literal(path)})", tuple(params)
        key = keys[0] if not keys[0].isdigit() else None  # a number is an array index, as Django's
        return f"({lhs} -> {_literal(key) if key is not None else int(keys[0])})", tuple(params)


class Missing(IsNull):
    """`value IS NULL` in parentheses (so `= false` can follow it on PostgreSQL): the key that puts
    runs without a value last, and that a range filter on an indexed metric fixes to false."""

    def __init__(self, value: Any) -> None:
        super().__init__(value, True)

    def as_sql(self, compiler: Any, connection: Any) -> tuple[str, Any]:
        sql, params = super().as_sql(compiler, connection)
        return f"({sql})", params


def json_value(base: str, keys: list[str]) -> JSONValue:
    """The value of `base` (a JSON field or annotation) at `keys`."""
    inner: Any = base
    for key in keys[:-1]:
        inner = KeyTransform(key, inner)
    return JSONValue(keys[-1], inner)


def json_order(value: JSONValue, *, descending: bool, present: bool = False) -> list[OrderBy]:
    """Runs without the value last, then by the value, then newest first.

    "Missing last" is its own leading key rather than NULLS LAST: SQLite allows no NULLS LAST in an
    index, and a PostgreSQL index of one direction cannot serve the other's nulls; so the same
    index definition serves the same query on both databases. `present` (SQLite): the filter
    already fixes `Missing(value) = false`; the key is then left out, as SQLite (3.40) cannot tell
    that an ORDER BY expression fixed by `=` is ordered and would sort the whole range.
    """
    by = [value.desc() if descending else value.asc(), F("id").desc()]
    return by if present else [Missing(value).asc(), *by]


def metric_index_expressions(name: str) -> list[Any]:
    """Run's index for ordering a team's runs by final metric `name` (INDEXED_METRICS)."""
    return [F("team"), *json_order(json_value("final_metrics", [name]), descending=INDEXED_METRICS[name])]
