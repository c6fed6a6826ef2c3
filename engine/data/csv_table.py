"""CSV sources: a streaming parse into per-column arrays, then target and feature encoding."""

from __future__ import annotations

import csv
import math
from array import array
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from engine.data.errors import DataError
from engine.data.limits import DataLimits, checked_file_size
from engine.data.raw import EncodedTable, RawData
from engine.data.recipe import CsvSource

MISSING_TOKENS = frozenset({"", "na", "n/a", "nan", "null", "?"})
MISSING_LABEL = "(missing)"
FIRST_CELLS = 10  # how many bad cells an error message lists
AUTO_CLASSES = 20  # a numeric target with at most this many integer values is taken as classes


@dataclass
class Column:
    """One CSV column, parsed: a float per cell and, while few enough, a code per distinct string."""

    name: str
    values: array = field(default_factory=lambda: array("d"))  # NaN where missing or not a number
    codes: array | None = field(default_factory=lambda: array("i"))  # index into `distinct`
    distinct: dict[str, int] | None = field(default_factory=dict)
    n_numeric: int = 0
    n_text: int = 0
    n_missing: int = 0
    text_cells: list[tuple[int, str]] = field(default_factory=list)  # first (row, value)
    missing_rows: list[int] = field(default_factory=list)  # first rows (header = row 1)

    @property
    def kind(self) -> str:
        """ "numeric" when most filled cells are numbers, else "categorical"."""
        return "numeric" if self.n_numeric > 0 and self.n_numeric > self.n_text else "categorical"

    def add(self, cell: str, row: int, max_distinct: int) -> None:
        text = cell.strip()
        if text == "" or text.lower() in MISSING_TOKENS:
            self.n_missing += 1
            if len(self.missing_rows) < FIRST_CELLS:
                self.missing_rows.append(row)
            self.values.append(math.nan)
            text = MISSING_LABEL
        else:
            try:
                value = float(text)
            except ValueError:
                value = math.nan
            if math.isfinite(value):
                self.n_numeric += 1
            else:
                value = math.nan
                self.n_text += 1
                if len(self.text_cells) < FIRST_CELLS:
                    self.text_cells.append((row, text))
            self.values.append(value)
        if self.distinct is not None:
            code = self.distinct.setdefault(text, len(self.distinct))
            if len(self.distinct) > max_distinct:
                # Too many values to be categories; only the numbers are kept from here on.
                self.distinct, self.codes = None, None
            else:
                self.codes.append(code)  # type: ignore[union-attr]

    def describe(self) -> dict[str, Any]:
        """Name, kind, missing count and distinct count (None when above the category limit)."""
        return {
            "name": self.name,
            "kind": self.kind,
            "missing": self.n_missing,
            "distinct": len(self.distinct) if self.distinct is not None else None,
        }


@dataclass
class Table:
    """A parsed CSV file."""

    header: list[str]
    columns: list[Column]
    n_rows: int
    first_rows: list[list[str]]

    def column(self, name: str) -> Column:
        return self.columns[self.header.index(name)]


def _guess_delimiter(path: str) -> str:
    with open(path, encoding="utf-8-sig", errors="replace", newline="") as f:
        head = f.readline(65536)
    counts = {d: head.count(d) for d in [",", ";", "\t", "|"]}
    best = max(counts, key=lambda d: counts[d])
    return best if counts[best] > 0 else ","


def parse_csv(path: str, limits: DataLimits, delimiter: str | None = None) -> Table:
    """Read a CSV file row by row; structural problems raise DataError naming the row."""
    if checked_file_size(path, limits) == 0:
        raise DataError("the file is empty")
    delimiter = delimiter or _guess_delimiter(path)
    header: list[str] = []
    columns: list[Column] = []
    first_rows: list[list[str]] = []
    n = 0
    row = 0  # spreadsheet row of the record being read
    try:
        with open(path, encoding="utf-8-sig", newline="") as f:
            reader = csv.reader(f, delimiter=delimiter)
            for record in reader:
                row += 1
                if row == 1:
                    header = _check_header(record, limits)
                    columns = [Column(name) for name in header]
                    continue
                if not record or (len(record) == 1 and not record[0].strip() and len(header) > 1):
                    continue  # blank line
                if len(record) != len(header):
                    raise DataError(
                        f"has {len(record)} fields, expected {len(header)} (as in the header)",
                        row=row,
                    )
                if n >= limits.max_rows:
                    raise DataError(
                        f"the file has more than {limits.max_rows} data rows (the limit)", row=row
                    )
                for col, cell in zip(columns, record, strict=True):
                    col.add(cell, row, limits.max_categories)
                if len(first_rows) < 5:
                    first_rows.append(record)
                n += 1
    except UnicodeDecodeError:
        raise DataError("the file is not UTF-8 text", row=row + 1) from None
    except csv.Error as exc:
        raise DataError(f"not valid CSV: {exc}", row=row + 1) from None
    if not header:
        raise DataError("the file is empty")
    if n == 0:
        raise DataError("the file has a header row but no data rows")
    return Table(header, columns, n, first_rows)


def _check_header(record: list[str], limits: DataLimits) -> list[str]:
    names = [c.strip() for c in record]
    if not names or all(not c for c in names):
        raise DataError("the first row (the header) is empty", row=1)
    if len(names) > limits.max_columns:
        raise DataError(
            f"the file has {len(names)} columns; the limit is {limits.max_columns}", row=1
        )
    names = [c or f"column_{i + 1}" for i, c in enumerate(names)]
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise DataError("this column name appears twice in the header", row=1, column=name)
        seen.add(name)
    return names


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


def _category_labels(col: Column) -> list[str]:
    """Distinct strings of a column by code."""
    assert col.distinct is not None
    labels = [""] * len(col.distinct)
    for text, code in col.distinct.items():
        labels[code] = text
    return labels


def _format_number(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else repr(float(v))


def _target(col: Column, task: str, limits: DataLimits) -> tuple[np.ndarray, str, list[str]]:
    """(y, task, classes) for the target column."""
    if col.n_missing:
        raise _missing([col])
    values = np.frombuffer(col.values, dtype=np.float64)
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
        if col.distinct is None or col.codes is None:
            raise DataError(
                f"the target has more than {limits.max_categories} distinct values; too many classes",
                column=col.name,
            )
        labels = _category_labels(col)
        order = sorted(range(len(labels)), key=lambda c: labels[c])
        rank = np.empty(len(labels), dtype=np.int64)
        rank[order] = np.arange(len(labels))
        y = rank[np.frombuffer(col.codes, dtype=np.int32)]
        classes = [labels[c] for c in order]
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


def csv_raw(source: CsvSource, limits: DataLimits) -> RawData:
    """Parse a CSV source and check its target and feature columns."""
    table = parse_csv(source.path, limits, source.delimiter)
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
    numeric_missing = [
        c for c in cols + [target_col] if c.n_missing and (c.kind == "numeric" or c is target_col)
    ]
    if numeric_missing:
        raise _missing(numeric_missing)
    for col in cols:
        if col.kind == "categorical" and col.distinct is None:
            raise DataError(
                f"this text column has more than {limits.max_categories} distinct values; "
                "too many to encode as categories (leave it out of the features)",
                column=col.name,
                field="source.features",
            )
    y, task, classes = _target(target_col, source.task, limits)

    def encode(train_idx: np.ndarray) -> EncodedTable:
        return _encode(table, features, source, train_idx, task)

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


def _encode(
    table: Table, features: list[str], source: CsvSource, train_idx: np.ndarray, task: str
) -> EncodedTable:
    """Encode the feature columns; categories come from the train rows only."""
    blocks: list[np.ndarray] = []
    names: list[str] = []
    numeric: list[bool] = []
    described: dict[str, dict[str, Any]] = {}
    for col in table.columns:
        info = col.describe()
        info["role"] = (
            "target"
            if col.name == source.target
            else ("feature" if col.name in features else "unused")
        )
        if col.name == source.target:
            info["encoding"] = task
        described[col.name] = info
    for name in features:
        col = table.column(name)
        info = described[name]
        if col.kind == "numeric":
            blocks.append(np.frombuffer(col.values, dtype=np.float64).astype(np.float32)[:, None])
            names.append(name)
            numeric.append(True)
            info["encoding"] = "numeric"
            continue
        labels = _category_labels(col)
        assert col.codes is not None  # categorical features were checked to have few values
        codes = np.frombuffer(col.codes, dtype=np.int32)
        seen = np.unique(codes[train_idx])
        categories = sorted(labels[c] for c in seen)
        by_label = {label: k for k, label in enumerate(categories)}
        # Position of each code among the train categories; -1 for values unseen in train.
        slot = np.array([by_label.get(label, -1) for label in labels], dtype=np.int64)[codes]
        if source.categorical == "onehot":
            onehot = np.zeros((len(codes), len(categories)), dtype=np.float32)
            rows = np.nonzero(slot >= 0)[0]
            onehot[rows, slot[rows]] = 1.0
            blocks.append(onehot)
            names.extend(f"{name}={c}" for c in categories)
            numeric.extend([False] * len(categories))
        else:
            blocks.append((slot + 1).astype(np.float32)[:, None])  # 0 is reserved for unseen values
            names.append(name)
            numeric.append(False)
        info["encoding"] = source.categorical
        info["categories"] = categories
    x = np.concatenate(blocks, axis=1) if blocks else np.zeros((table.n_rows, 0), np.float32)
    return EncodedTable(
        x=x,
        feature_names=names,
        numeric=np.array(numeric, dtype=bool),
        columns=list(described.values()),
    )


def table_preview(table: Table) -> dict[str, Any]:
    """The first rows as written, numbers as numbers."""
    kinds = [c.kind for c in table.columns]
    rows = []
    for record in table.first_rows:
        out: list[Any] = []
        for kind, cell in zip(kinds, record, strict=True):
            text = cell.strip()
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
