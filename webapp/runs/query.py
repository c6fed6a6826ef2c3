"""What `GET /api/runs/?filter=` and `?ordering=` accept beyond fixed fields: a run's results,
config and graph parameters, as Django expressions (so both databases run them).

The filter language (docs/subsystems/runs.md has the reference):

    metrics.val/accuracy > 0.9 and config.optimizer.lr < 0.01 and tags = "baseline"
    not (status = "failed" or best.val/loss >= 0.5) and nodes.fc1.out_features = 64

A comparison is `<field> <op> <value>`; ops `=`, `!=`, `<`, `<=`, `>`, `>=` and `~` (contains, for
text); values are numbers, "strings", true, false or null; `and` binds tighter than `or`, `not`
and parentheses as usual. Fields:

- `metrics.<name>`: the run's final metrics; `best.<name>`: its `best` checkpoint's metrics;
- `config.<dotted.path>`: its TrainConfig; `nodes.<node id>.<param>`: its graph revision's node
  parameters (GraphRevision.node_params);
- `tags` (= / != a tag), `status`, `name`, `created_at`, `finished_at`, `sweep`, `graph`,
  `dataset`, `id`.

It is parsed with lark (LALR); an error names the column of the expression. Values inside JSON
are compared as JSON (a number with a number, a string with a string): Django's key transforms,
on PostgreSQL jsonb and on SQLite's JSON functions, never a cast that could fail on a bad row.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection
from django.db.models import BooleanField, JSONField, OuterRef, Q, QuerySet, Subquery, Value
from django.db.models.expressions import RawSQL
from django.db.models.fields.json import (
    KeyTransformGt,
    KeyTransformGte,
    KeyTransformLt,
    KeyTransformLte,
)
from django.db.models.lookups import Exact
from django.utils.dateparse import parse_date, parse_datetime
from lark import (
    Lark,
    Token,
    Transformer,
    UnexpectedCharacters,
    UnexpectedEOF,
    UnexpectedInput,
    UnexpectedToken,
)

from webapp.errors import DomainError

from .expressions import INDEXED_METRICS, Missing, json_order, json_value
from .models import Checkpoint, Run

FILTER_MAX_CHARS = 2000

GRAMMAR = r"""
?start: or_expr
?or_expr: and_expr (_OR and_expr)*
?and_expr: not_expr (_AND not_expr)*
?not_expr: _NOT not_expr -> negate
         | atom
?atom: comparison
     | "(" or_expr ")"
comparison: FIELD OP value
?value: SIGNED_NUMBER -> number
      | ESCAPED_STRING -> string
      | _TRUE -> true
      | _FALSE -> false
      | _NULL -> null

_OR.2: /or\b/i
_AND.2: /and\b/i
_NOT.2: /not\b/i
_TRUE.2: /true\b/i
_FALSE.2: /false\b/i
_NULL.2: /null\b/i
OP: "<=" | ">=" | "!=" | "=" | "<" | ">" | "~"
FIELD: /[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z0-9_\/\-:@]+)*/

%import common.SIGNED_NUMBER
%import common.ESCAPED_STRING
%import common.WS
%ignore WS
"""

_parser = Lark(GRAMMAR, parser="lalr", propagate_positions=True)

# Plain fields: the API's name -> the ORM's, and the kind of value each takes.
PLAIN_FIELDS: dict[str, tuple[str, str]] = {
    "id": ("pk", "number"), "status": ("status", "text"), "name": ("name", "text"),
    "created_at": ("created_at", "time"), "finished_at": ("finished_at", "time"),
    "sweep": ("origin__sweep", "number"), "graph": ("graph_revision__graph_id", "number"),
    "dataset": ("dataset_id", "number"),
}
JSON_PREFIXES = ("metrics", "best", "config", "nodes")
_LOOKUPS = {"=": "exact", "<": "lt", "<=": "lte", ">": "gt", ">=": "gte", "~": "icontains"}
_JSON_RANGES = {"<": KeyTransformLt, "<=": KeyTransformLte, ">": KeyTransformGt, ">=": KeyTransformGte}
_KEY = re.compile(r"^[A-Za-z0-9_/\-:@]+$")


def _invalid(param: str, message: str, column: int | None = None) -> DomainError:
    where = f"column {column}: " if column else ""
    extra = {"column": column} if column else {}
    return DomainError("invalid_filter" if param == "filter" else "invalid", f"{param}: {where}{message}",
                       fields={param: [f"{where}{message}"]}, extra=extra)


@dataclass(frozen=True)
class Comparison:
    field: str
    op: str
    value: Any
    column: int


class _Tree(Transformer):
    def number(self, items: list[Token]) -> Any:
        text = str(items[0])
        return float(text) if any(c in text for c in ".eE") else int(text)

    def string(self, items: list[Token]) -> str:
        import json

        return json.loads(str(items[0]))

    def true(self, _: list[Token]) -> bool:
        return True

    def false(self, _: list[Token]) -> bool:
        return False

    def null(self, _: list[Token]) -> None:
        return None

    def comparison(self, items: list[Any]) -> Comparison:
        field, op, value = items
        return Comparison(str(field), str(op), value, field.column)

    def negate(self, items: list[Any]) -> tuple[str, Any]:
        return ("not", items[0])

    def and_expr(self, items: list[Any]) -> tuple[str, list[Any]]:
        return ("and", items)

    def or_expr(self, items: list[Any]) -> tuple[str, list[Any]]:
        return ("or", items)


def parse_filter(text: str) -> Any:
    """The expression's tree: Comparison leaves under ("and"|"or", [...]) and ("not", x)."""
    if len(text) > FILTER_MAX_CHARS:
        raise _invalid("filter", f"the expression is {len(text)} characters; at most {FILTER_MAX_CHARS}.")
    try:
        return _Tree().transform(_parser.parse(text))
    except UnexpectedEOF:
        raise _invalid("filter", "the expression ends too early (a value or ')' is missing).",
                       len(text) + 1) from None
    except UnexpectedToken as exc:
        if exc.token.type == "$END":
            raise _invalid("filter", "the expression ends too early (a value or ')' is missing).",
                           len(text) + 1) from None
        raise _invalid("filter", f"unexpected {str(exc.token)!r}; expected {_expected(exc.expected)}.",
                       exc.column) from None
    except UnexpectedCharacters as exc:
        raise _invalid("filter", f"unexpected character {text[exc.pos_in_stream]!r}.", exc.column) from None
    except UnexpectedInput as exc:  # any other parse error
        raise _invalid("filter", "this is not a filter expression.", getattr(exc, "column", None)) from None


def _expected(names: set[str]) -> str:
    words = {"FIELD": "a field", "OP": "an operator (= != < <= > >= ~)", "SIGNED_NUMBER": "a value",
             "ESCAPED_STRING": "a value", "LPAR": "'('", "RPAR": "')'", "_AND": "and", "_OR": "or",
             "_NOT": "not", "_TRUE": "a value", "_FALSE": "a value", "_NULL": "a value"}
    return " or ".join(sorted({words.get(n, n.lower()) for n in names}))


# --- fields to expressions ------------------------------------------------------------------


def _json_path(field: str, param: str, column: int | None = None) -> tuple[str, str]:
    """("metrics", "final_metrics__val/accuracy") for a JSON field name; a bad name is an error."""
    prefix, base, keys = _json_keys(field, param, column)
    return prefix, "__".join([base, *keys])


def _json_keys(field: str, param: str, column: int | None = None) -> tuple[str, str, list[str]]:
    """("metrics", "final_metrics", ["val/accuracy"]) for a JSON field name; a bad name is an error."""
    prefix, _, rest = field.partition(".")
    keys = rest.split(".") if rest else []
    if prefix in ("metrics", "best"):
        keys = [rest] if rest else []  # a metric's whole name is one key ("val/accuracy")
    if not keys or any(not _KEY.match(k) or "__" in k for k in keys):
        raise _invalid(param, f"{field!r} needs a name after {prefix!r} (letters, digits, _ / - : @).", column)
    if prefix == "nodes" and len(keys) < 2:
        raise _invalid(param, f"{field!r}: write nodes.<node id>.<parameter>.", column)
    base = {"metrics": "final_metrics", "best": "_best_metrics", "config": "config",
            "nodes": "graph_revision__node_params"}[prefix]
    return prefix, base, keys


def _with_best(runs: QuerySet[Run]) -> QuerySet[Run]:
    """The runs with `_best_metrics`: their `best` checkpoint's metrics (null without one)."""
    if "_best_metrics" in runs.query.annotations:
        return runs
    best = Checkpoint.objects.filter(run=OuterRef("pk"), name="best").values("metrics")[:1]
    return runs.annotate(_best_metrics=Subquery(best, output_field=JSONField()))


def _time(value: Any, field: str, column: int) -> datetime:
    from django.utils import timezone

    parsed = parse_datetime(value) if isinstance(value, str) else None
    if parsed is None and isinstance(value, str) and parse_date(value) is not None:
        parsed = datetime.combine(parse_date(value), datetime.min.time())  # type: ignore[arg-type]
    if parsed is None:
        raise _invalid("filter", f'{field} takes a date or time in quotes ("2026-01-31" or ISO 8601).', column)
    return parsed if timezone.is_aware(parsed) else timezone.make_aware(parsed)


def tag_q(tag: Any, column: int | None = None) -> Q:
    """Runs carrying `tag` (a Q for filter())."""
    if not isinstance(tag, str):
        raise _invalid("filter", 'tags takes a tag in quotes (tags = "baseline").', column)
    if connection.features.supports_json_field_contains:
        return Q(tags__contains=[tag])
    # SQLite has no JSON containment: look the tag up in the row's own array (json_each).
    table = connection.ops.quote_name(Run._meta.db_table)
    return Q(RawSQL(f"EXISTS (SELECT 1 FROM json_each({table}.tags) WHERE json_each.value = %s)", [tag],
                    output_field=BooleanField()))


def _comparison_q(c: Comparison) -> Q:
    if c.op == "~" and not isinstance(c.value, str):
        raise _invalid("filter", f"~ (contains) takes text in quotes, not {c.value!r}.", c.column)
    if c.field == "tags":
        if c.op not in ("=", "!="):
            raise _invalid("filter", 'tags takes = or != and a tag (tags = "baseline").', c.column)
        q = tag_q(c.value, c.column)
        return ~q if c.op == "!=" else q
    if c.field in PLAIN_FIELDS:
        path, kind = PLAIN_FIELDS[c.field]
        value = c.value
        if kind == "time" and value is not None:
            value = _time(value, c.field, c.column)
        elif kind == "number" and value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise _invalid("filter", f"{c.field} takes a whole number.", c.column)
        elif kind == "text" and value is not None and not isinstance(value, str):
            raise _invalid("filter", f'{c.field} takes text in quotes ({c.field} = "...").', c.column)
    elif c.field.split(".", 1)[0] in JSON_PREFIXES:
        prefix, base, keys = _json_keys(c.field, "filter", c.column)
        path, value = "__".join([base, *keys]), c.value
        if c.op in _JSON_RANGES and value is not None:
            return _json_range_q(prefix, base, keys, c.op, value)
    else:
        raise _invalid("filter", f"unknown field {c.field!r}; fields are metrics.<name>, best.<name>, "
                       "config.<path>, nodes.<node>.<param>, tags, " + ", ".join(PLAIN_FIELDS) + ".", c.column)
    if value is None:
        if c.op not in ("=", "!="):
            raise _invalid("filter", f"null takes = or !=, not {c.op}.", c.column)
        q = Q(**{f"{path}__isnull": True})
        return ~q if c.op == "!=" else q
    if c.op == "!=":
        return ~Q(**{path: value}) & Q(**{f"{path}__isnull": False})
    return Q(**{f"{path}__{_LOOKUPS[c.op]}": value})


def _json_range_q(prefix: str, base: str, keys: list[str], op: str, value: Any) -> Q:
    """`<`, `<=`, `>`, `>=` on a JSON value as Django's key transforms compare it (the value taken
    as JSON), on JSONValue: one JSON_EXTRACT on SQLite where Django's key transform makes three,
    and on an indexed metric led by `Missing(value) = false` (true of every run it matches), so
    Run's (team, missing, value) index serves the range on both databases."""
    found = json_value(base, keys)
    q = Q(_JSON_RANGES[op](found, Value(value, output_field=JSONField())))
    if prefix == "metrics" and keys[0] in INDEXED_METRICS:
        q = Q(Exact(Missing(found), Value(False))) & q
    return q


def _tree_q(node: Any) -> Q:
    if isinstance(node, Comparison):
        return _comparison_q(node)
    kind, inner = node
    if kind == "not":
        return ~_tree_q(inner)
    parts = [_tree_q(part) for part in inner]
    combined = parts[0]
    for part in parts[1:]:
        combined = combined & part if kind == "and" else combined | part
    return combined


def _uses_best(node: Any) -> bool:
    if isinstance(node, Comparison):
        return node.field.startswith("best.")
    inner = node[1]
    return any(_uses_best(part) for part in (inner if isinstance(inner, list) else [inner]))


def runs_where(runs: QuerySet[Run], text: str) -> QuerySet[Run]:
    """`runs` filtered by the expression `text` (DomainError naming its column when it is wrong)."""
    if not text.strip():
        return runs
    tree = parse_filter(text)
    if _uses_best(tree):
        runs = _with_best(runs)
    return runs.filter(_tree_q(tree))


def fixed_present(text: str) -> set[str]:
    """The indexed metrics (`metrics.<name>`) every run the expression matches has: those of its
    top-level `and` compared by a range, which _json_range_q fixes as present."""
    if not text.strip():
        return set()
    tree = parse_filter(text)
    conjuncts = tree[1] if isinstance(tree, tuple) and tree[0] == "and" else [tree]
    return {c.field for c in conjuncts if isinstance(c, Comparison) and c.op in _JSON_RANGES and c.value is not None
            and c.field.startswith("metrics.") and c.field.removeprefix("metrics.") in INDEXED_METRICS}


def json_ordering(runs: QuerySet[Run], ordering: str, expression: str = "") -> QuerySet[Run] | None:
    """`runs` ordered by `metrics.<name>`, `best.<name>`, `config.<path>` or `nodes.<id>.<param>`
    (with "-" for descending), runs without it last, then newest first; None when `ordering` names
    none. The same expressions as Run's metric indexes (expressions.py), so those serve a team's page;
    `expression`, the filter, may already keep only runs that have the value (fixed_present)."""
    name = ordering.removeprefix("-")
    if name.split(".", 1)[0] not in JSON_PREFIXES or "." not in name:
        return None
    prefix, base, keys = _json_keys(name, "ordering")
    if prefix == "best":
        runs = _with_best(runs)
    # SQLite only: PostgreSQL reads the filter's `missing = false` as `value IS NOT NULL`, a
    # condition on the value's column, so there the key must stay for the index order to match.
    present = connection.vendor == "sqlite" and name in fixed_present(expression)
    return runs.order_by(*json_order(json_value(base, keys), descending=ordering.startswith("-"), present=present))
