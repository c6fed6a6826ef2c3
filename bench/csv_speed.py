"""CSV processing throughput: the old per-cell Python reader against the pyarrow reader.

Measured on one generated file (default 100 MB: ids, four numeric columns, two categorical, a
label), in the same process, one after the other:

- old parse: the reader this project used before (one Python call per cell; kept here, and only
  here, as it was, so the comparison can be run again),
- new parse: `engine.data.csv_table.parse_csv` (pyarrow's streaming reader, columns typed
  with Arrow kernels),
- processing: `build_csv_table` (parse once into the stored Arrow IPC file) + typing it,
- training-time read: the stored table read back and typed (what a run does instead of
  parsing the CSV again), against the old parse it replaces,
- the whole upload check (`inspect_upload` with a target: parse, encode, split, summary).

Run: .venv/bin/python bench/csv_speed.py [--mb 100] [--repeats 1]
"""

from __future__ import annotations

import argparse
import csv
import math
import platform
import random
import statistics
import sys
import tempfile
import time
from array import array
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.data import DataLimits, inspect_upload  # noqa: E402
from engine.data.csv_read import build_csv_table, read_table  # noqa: E402
from engine.data.csv_table import parse_csv, typed_table  # noqa: E402
from engine.data.errors import DataError  # noqa: E402
from engine.data.limits import checked_file_size  # noqa: E402

MISSING_TOKENS = frozenset({"", "na", "n/a", "nan", "null", "?"})
MISSING_LABEL = "(missing)"
FIRST_CELLS = 10

# --- the old reader, as it was (engine/data/csv_table.py before pyarrow) ------------------------


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


def legacy_parse_csv(path: str, limits: DataLimits, delimiter: str | None = None) -> Table:
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


# --- the measurement ----------------------------------------------------------------------------


def generate(path: Path, megabytes: float, seed: int = 0) -> int:
    """Write a CSV of about `megabytes` MB; returns its data rows."""
    rng = random.Random(seed)
    cities = ["oslo", "rome", "lima", "kyiv", "nara", "bern", "doha", "riga"]
    target = int(megabytes * 2**20)
    rows = 0
    size = 0
    with open(path, "w") as f:
        header = "id,age,income,score,ratio,city,grade,label\n"
        f.write(header)
        size += len(header)
        while size < target:
            age = "" if rng.random() < 0.02 else str(rng.randint(18, 90))
            line = (
                f"{rows},{age},{rng.uniform(1e3, 1e5):.2f},{rng.gauss(0, 1):.6f},"
                f"{rng.random():.4f},{rng.choice(cities)},{rng.choice('ABCDE')},"
                f"{rng.choice(['yes', 'no'])}\n"
            )
            f.write(line)
            size += len(line)
            rows += 1
    return rows


def timed(fn: Callable[[], Any], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=100.0, help="size of the generated CSV")
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    limits = DataLimits(max_bytes=2**31, max_rows=10**8)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.csv"
        rows = generate(path, args.mb)
        mb = path.stat().st_size / 2**20
        table = Path(tmp) / "table.arrow"
        options = {
            "target": "label",
            "features": ["age", "income", "score", "ratio", "city", "grade"],
        }
        runs: dict[str, float] = {}
        runs["old parse (per-cell Python)"] = timed(
            lambda: legacy_parse_csv(str(path), limits), args.repeats
        )
        runs["new parse (pyarrow)"] = timed(lambda: parse_csv(str(path), limits), args.repeats)
        runs["processing: parse + store Arrow IPC"] = timed(
            lambda: typed_table(
                read_table(table) if build_csv_table(str(path), table, limits) else None, limits
            ),
            args.repeats,
        )
        runs["training-time read of the stored table"] = timed(
            lambda: typed_table(read_table(table), limits), args.repeats
        )
        runs["whole upload check, new (inspect_upload)"] = timed(
            lambda: inspect_upload(str(path), "csv", dict(options), limits, table_path=table),
            args.repeats,
        )
        stored = table.stat().st_size / 2**20
    base = runs["old parse (per-cell Python)"]
    print(f"{platform.processor() or platform.machine()}, Python {platform.python_version()}")
    print(f"file: {mb:.1f} MB, {rows} data rows, 8 columns; stored table {stored:.1f} MB")
    print(f"{'step':44s} {'seconds':>8s} {'MB/s':>8s} {'rows/s':>11s} {'vs old':>7s}")
    for name, seconds in runs.items():
        print(
            f"{name:44s} {seconds:8.2f} {mb / seconds:8.1f} {rows / seconds:11.0f} "
            f"{base / seconds:6.1f}x"
        )


if __name__ == "__main__":
    main()
