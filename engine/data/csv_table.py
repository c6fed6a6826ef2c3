"""CSV sources: text columns (from the stored Arrow table or a fresh parse) typed on whole
columns, missing values handled per column, then target and feature encoding."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine.data.csv_read import (
    CsvFormat,
    Progress,
    read_csv_text,
    read_table,
    table_format,
    table_matches,
)
from engine.data.errors import DataError
from engine.data.limits import DataLimits
from engine.data.raw import EncodedTable, RawData
from engine.data.recipe import (
    CATEGORICAL_STRATEGIES,
    NUMERIC_STRATEGIES,
    TARGET_STRATEGIES,
    CsvSource,
    MissingRule,
)

MISSING_TOKENS = frozenset({"", "na", "n/a", "nan", "null", "?"})
MISSING_LABEL = "(missing)"
FIRST_CELLS = 10  # how many bad cells an error message lists
AUTO_CLASSES = 20  # a numeric target with at most this many integer values is taken as classes
# A number as Python's float() reads it (finite ones; "inf" and "nan" are not numbers here).
NUMBER = r"^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$"
FIRST_ROW = 2  # data row i is spreadsheet row i + 2 (the header is row 1)


def default_strategy(kind: str, *, target: bool = False) -> str:
    """The missing-value strategy a column gets when none is chosen."""
    if target:
        return "fail"
    return "median" if kind == "numeric" else "category"


@dataclass
class Column:
    """One CSV column, typed as a whole: floats, category codes and where the gaps are."""

    name: str
    kind: str  # "numeric" when most filled cells are numbers, else "categorical"
    values: np.ndarray  # (N,) float64, NaN where missing or not a number
    missing: np.ndarray  # (N,) bool
    n_numeric: int
    n_text: int
    n_missing: int
    distinct: int | None  # distinct filled values; None above the category limit
    labels: list[str] | None  # sorted distinct filled strings; None above the category limit
    codes: np.ndarray | None  # (N,) int32 index into labels, -1 where missing
    id_like: bool  # a different value in every row: an identifier rather than a feature
    text_cells: list[tuple[int, str]] = field(default_factory=list)  # first (row, value)
    missing_rows: list[int] = field(default_factory=list)  # first rows (header = row 1)

    def describe(self) -> dict[str, Any]:
        """Name, kind, missing count, distinct count (None above the category limit), id-likeness."""
        return {
            "name": self.name,
            "kind": self.kind,
            "missing": self.n_missing,
            "distinct": self.distinct,
            "id_like": self.id_like,
            "missing_strategy": default_strategy(self.kind),
        }

    def take(self, rows: np.ndarray) -> Column:
        """The column restricted to `rows` (rows dropped for missing values)."""
        return Column(
            self.name,
            self.kind,
            self.values[rows],
            self.missing[rows],
            self.n_numeric,
            self.n_text,
            int(self.missing[rows].sum()),
            self.distinct,
            self.labels,
            self.codes[rows] if self.codes is not None else None,
            self.id_like,
            self.text_cells,
            self.missing_rows,
        )


@dataclass
class Table:
    """A CSV file's columns, typed."""

    header: list[str]
    columns: list[Column]
    n_rows: int
    first_rows: list[list[str]]
    format: CsvFormat | None = None

    def column(self, name: str) -> Column:
        return self.columns[self.header.index(name)]


def _case_variants(token: str) -> list[str]:
    variants = [""]
    for ch in token:
        variants = [v + c for v in variants for c in {ch.lower(), ch.upper()}]
    return variants


# Every spelling of the tokens in upper and lower case: one hash lookup per cell, no lowering.
MISSING_SPELLINGS = pa.array(sorted({v for t in MISSING_TOKENS for v in _case_variants(t)}))
DISTINCT_SAMPLE = 4096  # a column this many rows into it with more distinct values is no category


def _to_numpy_bool(mask: pa.ChunkedArray | pa.Array) -> np.ndarray:
    return np.array(pc.fill_null(mask, False).to_numpy(zero_copy_only=False), dtype=bool)


def _floats(numbers: pa.ChunkedArray | pa.Array) -> np.ndarray:
    return np.array(
        pc.fill_null(numbers, math.nan).to_numpy(zero_copy_only=False), dtype=np.float64
    )


def _count_distinct(filled: pa.ChunkedArray, limit: int, *, need_all_unique: bool) -> int:
    """Distinct values, exact up to `limit`; above it, a count above `limit` (exact only when
    `need_all_unique` and the first rows are all different, to tell an identifier)."""
    head = int(pc.count_distinct(filled.slice(0, DISTINCT_SAMPLE)).as_py())
    sample = min(len(filled), DISTINCT_SAMPLE)
    if head > limit and (head < sample or not need_all_unique):
        return head  # already too many for categories: no need to hash every row
    return int(pc.count_distinct(filled).as_py())


def _column(name: str, text: pa.ChunkedArray, max_categories: int) -> Column:
    """Type one text column with Arrow kernels (no Python per cell)."""
    n = len(text)
    missing = _to_numpy_bool(pc.is_in(text, value_set=MISSING_SPELLINGS))
    gaps_as_null = pc.if_else(pa.array(missing), None, text) if missing.any() else text
    try:
        # Most columns are all numbers: one cast, no pattern matching.
        values = _floats(pc.cast(gaps_as_null, pa.float64()))
    except pa.ArrowInvalid:
        looks_numeric = _to_numpy_bool(pc.match_substring_regex(text, NUMBER)) & ~missing
        values = np.full(n, np.nan)
        if looks_numeric.any():
            values = _floats(pc.cast(pc.if_else(pa.array(looks_numeric), text, None), pa.float64()))
    finite = np.isfinite(values)
    values[~finite] = np.nan
    n_numeric = int(finite.sum())
    n_missing = int(missing.sum())
    n_text = n - n_missing - n_numeric
    kind = "numeric" if n_numeric > 0 and n_numeric > n_text else "categorical"
    text_rows = np.flatnonzero(~missing & ~finite)[:FIRST_CELLS]
    text_cells = [(int(i) + FIRST_ROW, str(text[int(i)])) for i in text_rows]
    missing_rows = [int(i) + FIRST_ROW for i in np.flatnonzero(missing)[:FIRST_CELLS]]

    filled = text.filter(pa.array(~missing)) if n_missing else text
    n_distinct = _count_distinct(filled, max_categories, need_all_unique=kind == "categorical")
    labels: list[str] | None = None
    codes: np.ndarray | None = None
    if n_distinct <= max_categories:
        labels = sorted(pc.unique(filled).to_pylist())
        index = pc.index_in(text, value_set=pa.array(labels, pa.string()))
        codes = np.array(pc.fill_null(index, -1).to_numpy(zero_copy_only=False), dtype=np.int32)
        codes[missing] = -1
    if kind == "categorical":
        id_like = n_missing == 0 and n_distinct == n > 1 and n_text == n
    else:
        # Integer values, one per row, in a run (1, 2, 3 ...): a row number, not a measurement.
        id_like = (
            n_numeric == n > 1
            and bool(np.all(values == np.round(values)))
            and float(values.max() - values.min()) == n - 1
            and len(np.unique(values)) == n
        )
    return Column(
        name=name,
        kind=kind,
        values=values,
        missing=missing,
        n_numeric=n_numeric,
        n_text=n_text,
        n_missing=n_missing,
        distinct=n_distinct if n_distinct <= max_categories else None,
        labels=labels,
        codes=codes,
        id_like=id_like,
        text_cells=text_cells,
        missing_rows=missing_rows,
    )


def typed_table(text: pa.Table, limits: DataLimits, fmt: CsvFormat | None = None) -> Table:
    """Columns typed from a table of text columns."""
    if text.num_rows == 0:
        raise DataError("the file has a header row but no data rows")
    header = list(text.column_names)
    columns = [_column(name, text.column(name), limits.max_categories) for name in header]
    first = text.slice(0, 5).to_pylist()
    first_rows = [[record[h] for h in header] for record in first]
    return Table(header, columns, text.num_rows, first_rows, fmt)


def parse_csv(
    path: str,
    limits: DataLimits,
    delimiter: str | None = None,
    *,
    encoding: str = "auto",
    guess_encoding: bool = False,
    progress: Progress | None = None,
) -> Table:
    """Read a CSV file (streamed through pyarrow); structural problems raise DataError naming the row."""
    text, fmt = read_csv_text(
        path,
        limits,
        delimiter=delimiter,
        encoding=encoding,
        guess_encoding=guess_encoding,
        progress=progress,
    )
    return typed_table(text, limits, fmt)


def source_table(source: CsvSource, limits: DataLimits) -> Table:
    """The source's columns: from its stored Arrow table when that matches the file, else parsed."""
    if source.table:
        fmt = table_format(source.table)
        if table_matches(fmt, source.path, delimiter=source.delimiter, encoding=source.encoding):
            text = read_table(source.table)
            if text.num_rows > limits.max_rows:
                raise DataError(
                    f"the file has more than {limits.max_rows} data rows (the limit)",
                    row=limits.max_rows + 2,
                )
            return typed_table(text, limits, fmt)
    return parse_csv(source.path, limits, source.delimiter, encoding=source.encoding)


def _not_numbers(col: Column) -> DataError:
    row, value = col.text_cells[0]
    others = ", ".join(f"row {r} {v!r}" for r, v in col.text_cells[1:])
    msg = f"{value!r} is not a number"
    if col.n_text > 1:
        msg += f" ({col.n_text} cells of this numeric column are not numbers"
        msg += f"; also {others})" if others else ")"
    return DataError(msg, row=row, column=col.name)


def _missing(cols: list[Column]) -> DataError:
    cells = sorted((r, c.name) for c in cols for r in c.missing_rows)[:FIRST_CELLS]
    counts = ", ".join(f"'{c.name}' {c.n_missing}" for c in cols)
    total = sum(c.n_missing for c in cols)
    listed = "; ".join(f"row {r} column '{name}'" for r, name in cells)
    first_row, first_col = cells[0]
    return DataError(
        f"{total} missing value{'s' if total > 1 else ''} ({counts}); first: {listed}",
        row=first_row,
        column=first_col,
    )


def _available(header: list[str]) -> str:
    shown = ", ".join(repr(h) for h in header[:50])
    return shown + (f" and {len(header) - 50} more" if len(header) > 50 else "")


def _format_number(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else repr(float(v))


def _target(col: Column, task: str, limits: DataLimits) -> tuple[np.ndarray, str, list[str]]:
    """(y, task, classes) for the target column (rows with a missing target already dropped)."""
    if col.n_missing:
        raise _missing([col])
    values = col.values
    if col.kind == "numeric":
        if col.n_text:
            raise _not_numbers(col)
        if task == "auto":
            integral = bool(np.all(values == np.round(values)))
            task = (
                "classification"
                if integral and len(np.unique(values)) <= AUTO_CLASSES
                else "regression"
            )
        if task == "regression":
            return values.astype(np.float32).reshape(-1, 1), task, []
        uniq, y = np.unique(values, return_inverse=True)
        classes = [_format_number(v) for v in uniq]
    else:
        if task == "regression":
            row, value = col.text_cells[0]
            raise DataError(
                f"the target must be numeric for regression; {value!r} is not a number",
                row=row,
                column=col.name,
            )
        task = "classification"
        if col.labels is None or col.codes is None:
            raise DataError(
                f"the target has more than {limits.max_categories} distinct values; too many classes",
                column=col.name,
            )
        # Labels are sorted, so codes are the class ids; classes absent after dropping rows go.
        present = np.unique(col.codes)
        rank = np.full(len(col.labels), -1, dtype=np.int64)
        rank[present] = np.arange(len(present))
        y = rank[col.codes]
        classes = [col.labels[c] for c in present]
    if len(classes) > limits.max_categories:
        raise DataError(
            f"the target has {len(classes)} classes; the limit is {limits.max_categories}",
            column=col.name,
        )
    if len(classes) < 2:
        raise DataError(
            f"the target has only one class ({classes[0]!r}); classification needs at least 2",
            column=col.name,
        )
    return np.asarray(y, dtype=np.int64), task, classes


def _rules(source: CsvSource, table: Table, features: list[str]) -> dict[str, MissingRule]:
    """The missing-value rule in force for the target and each feature (defaults filled in)."""
    for name in source.missing:
        if name not in table.header:
            raise DataError(
                f"no column named {name!r}; available columns: {_available(table.header)}",
                column=name,
                field="source.missing",
            )
    rules: dict[str, MissingRule] = {}
    for name in [source.target, *features]:
        col = table.column(name)
        is_target = name == source.target
        rule = source.missing.get(name) or MissingRule(
            strategy=default_strategy(col.kind, target=is_target)  # type: ignore[arg-type]
        )
        allowed = (
            TARGET_STRATEGIES
            if is_target
            else (NUMERIC_STRATEGIES if col.kind == "numeric" else CATEGORICAL_STRATEGIES)
        )
        if rule.strategy not in allowed:
            what = "the target" if is_target else f"a {col.kind} column"
            raise DataError(
                f"{rule.strategy!r} does not apply to {what}; use one of {', '.join(allowed)}",
                column=name,
                field=f"source.missing.{name}",
            )
        if rule.strategy == "constant" and col.kind == "numeric":
            try:
                float(rule.value)  # type: ignore[arg-type]
            except (TypeError, ValueError):
                raise DataError(
                    f"the constant for a numeric column must be a number (got {rule.value!r})",
                    column=name,
                    field=f"source.missing.{name}",
                ) from None
        rules[name] = rule
    return rules


def csv_raw(source: CsvSource, limits: DataLimits) -> RawData:
    """Read a CSV source, check its target and feature columns and apply row-dropping rules."""
    table = source_table(source, limits)
    header = table.header
    if source.target not in header:
        raise DataError(
            f"no column named {source.target!r}; available columns: {_available(header)}",
            column=source.target,
            field="source.target",
        )
    if source.features is None:
        features = [h for h in header if h != source.target]
    else:
        features = list(source.features)
        for name in features:
            if name not in header:
                raise DataError(
                    f"no column named {name!r}; available columns: {_available(header)}",
                    column=name,
                    field="source.features",
                )
            if name == source.target:
                raise DataError(
                    "the target cannot also be a feature", column=name, field="source.features"
                )
        if len(set(features)) != len(features):
            dup = next(f for f in features if features.count(f) > 1)
            raise DataError("listed twice in features", column=dup, field="source.features")
    if not features:
        raise DataError("there are no feature columns besides the target", field="source.features")

    cols = [table.column(f) for f in features]
    for col in cols:
        if col.kind == "numeric" and col.n_text:
            raise _not_numbers(col)
    target_col = table.column(source.target)
    if target_col.kind == "numeric" and target_col.n_text:
        raise _not_numbers(target_col)
    rules = _rules(source, table, features)
    failing = [c for c in [*cols, target_col] if c.n_missing and rules[c.name].strategy == "fail"]
    if failing:
        raise _missing(failing)
    for col in cols:
        if col.kind == "categorical" and col.labels is None:
            raise DataError(
                f"this text column has more than {limits.max_categories} distinct values; "
                "too many to encode as categories (leave it out of the features)",
                column=col.name,
                field="source.features",
            )
    dropping = [c for c in [*cols, target_col] if rules[c.name].strategy == "drop_row"]
    dropped = 0
    if dropping:
        gone = np.zeros(table.n_rows, dtype=bool)
        for col in dropping:
            gone |= col.missing
        dropped = int(gone.sum())
        if dropped == table.n_rows:
            raise DataError(
                "every row has a missing value in a column whose strategy is drop_row",
                column=dropping[0].name,
                field=f"source.missing.{dropping[0].name}",
            )
        if dropped:
            keep = np.flatnonzero(~gone)
            table = Table(
                table.header,
                [c.take(keep) for c in table.columns],
                len(keep),
                table.first_rows,
                table.format,
            )
            target_col = table.column(source.target)
    y, task, classes = _target(target_col, source.task, limits)

    def encode(train_idx: np.ndarray) -> EncodedTable:
        return _encode(table, features, source, rules, train_idx, task, dropped)

    return RawData(
        y=y,
        task=task,
        classes=classes,
        feature_names=[],  # known after encoding
        target_name=source.target,
        feature_shape=[],
        encode=encode,
        preview=table_preview(table),
    )


def _mode(values: np.ndarray) -> float:
    uniq, counts = np.unique(values, return_counts=True)
    return float(uniq[int(np.argmax(counts))])  # the smallest of equally frequent values


def _numeric_fill(col: Column, rule: MissingRule, train_idx: np.ndarray) -> float:
    """The value that fills this column's gaps: given, constant, or fitted on the train rows."""
    if rule.fill is not None:
        return float(rule.fill)
    if rule.strategy == "constant":
        return float(rule.value)  # type: ignore[arg-type]
    seen = col.values[train_idx]
    seen = seen[~col.missing[train_idx]]
    if len(seen) == 0:
        return 0.0  # no train value to learn from
    if rule.strategy == "mean":
        return float(seen.mean())
    if rule.strategy == "most_frequent":
        return _mode(seen)
    return float(np.median(seen))


def _category_fill(col: Column, rule: MissingRule, train_idx: np.ndarray) -> str:
    assert col.labels is not None and col.codes is not None
    if rule.fill is not None:
        return str(rule.fill)
    if rule.strategy == "constant":
        return str(rule.value)
    if rule.strategy == "most_frequent":
        codes = col.codes[train_idx]
        codes = codes[codes >= 0]
        if len(codes):
            return col.labels[int(_mode(codes))]
    return MISSING_LABEL


def _rounded(v: float) -> float:
    return float(f"{v:.10g}")


def _encode(
    table: Table,
    features: list[str],
    source: CsvSource,
    rules: dict[str, MissingRule],
    train_idx: np.ndarray,
    task: str,
    dropped: int,
) -> EncodedTable:
    """Encode the feature columns; fills and categories come from the train rows only."""
    blocks: list[np.ndarray] = []
    names: list[str] = []
    numeric: list[bool] = []
    described: dict[str, dict[str, Any]] = {}
    applied: dict[str, dict[str, Any]] = {}
    for col in table.columns:
        info = col.describe()
        info["role"] = (
            "target"
            if col.name == source.target
            else ("feature" if col.name in features else "unused")
        )
        if col.name in rules:
            info["missing_strategy"] = rules[col.name].strategy
        if col.name == source.target:
            info["encoding"] = task
        described[col.name] = info
    if source.target in rules:
        applied[source.target] = rules[source.target].model_dump(mode="json")
    for name in features:
        col = table.column(name)
        info = described[name]
        rule = rules[name]
        fill: float | str | None = None
        if col.kind == "numeric":
            x = col.values.astype(np.float64, copy=True)
            if col.n_missing and rule.strategy not in ("drop_row", "fail"):
                fill = _rounded(_numeric_fill(col, rule, train_idx))
                x[col.missing] = fill
            elif rule.strategy not in ("drop_row", "fail"):
                fill = _rounded(_numeric_fill(col, rule, train_idx))
            blocks.append(x.astype(np.float32)[:, None])
            names.append(name)
            numeric.append(True)
            info["encoding"] = "numeric"
        else:
            assert col.labels is not None and col.codes is not None  # checked in csv_raw
            labels = list(col.labels)
            codes = col.codes.astype(np.int64, copy=True)
            if rule.strategy not in ("drop_row", "fail"):
                fill = _category_fill(col, rule, train_idx)
                if col.n_missing:
                    if fill not in labels:
                        labels.append(fill)
                    codes[col.missing] = labels.index(fill)
            seen = np.unique(codes[train_idx])
            seen = seen[seen >= 0]
            categories = sorted(labels[c] for c in seen)
            by_label = {label: k for k, label in enumerate(categories)}
            # Position of each code among the train categories; -1 for values unseen in train.
            lookup = np.array([by_label.get(label, -1) for label in labels] + [-1], dtype=np.int64)
            slot = lookup[codes]  # code -1 (a gap left as is) indexes the final -1
            if source.categorical == "onehot":
                onehot = np.zeros((len(codes), len(categories)), dtype=np.float32)
                rows = np.nonzero(slot >= 0)[0]
                onehot[rows, slot[rows]] = 1.0
                blocks.append(onehot)
                names.extend(f"{name}={c}" for c in categories)
                numeric.extend([False] * len(categories))
            else:
                blocks.append((slot + 1).astype(np.float32)[:, None])  # 0: unseen values
                names.append(name)
                numeric.append(False)
            info["encoding"] = source.categorical
            info["categories"] = categories
        if rule.indicator:
            blocks.append(col.missing.astype(np.float32)[:, None])
            names.append(f"{name} (missing)")
            numeric.append(False)
        info["missing_fill"] = fill
        info["missing_indicator"] = rule.indicator
        applied[name] = {**rule.model_dump(mode="json"), "fill": fill}
    x = np.concatenate(blocks, axis=1) if blocks else np.zeros((table.n_rows, 0), np.float32)
    fitted = source.model_dump(mode="json")
    fitted["missing"] = applied
    return EncodedTable(
        x=x,
        feature_names=names,
        numeric=np.array(numeric, dtype=bool),
        columns=list(described.values()),
        source=fitted,
        dropped_rows=dropped,
    )


def table_preview(table: Table) -> dict[str, Any]:
    """The first rows as written, numbers as numbers."""
    kinds = [c.kind for c in table.columns]
    rows = []
    for record in table.first_rows:
        out: list[Any] = []
        for kind, cell in zip(kinds, record, strict=True):
            text = (cell or "").strip()
            if kind == "numeric":
                try:
                    value = float(text)
                    out.append(value if math.isfinite(value) else text)
                except ValueError:
                    out.append(None if text.lower() in MISSING_TOKENS else text)
            else:
                out.append(text)
        rows.append(out)
    return {"kind": "table", "columns": list(table.header), "rows": rows}
