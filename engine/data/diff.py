"""What changed between two versions of a dataset's file: rows, columns, statistics, class balance.

Tables (CSV) are streamed row by row, several passes, never held: what is kept per row is a
64-bit hash (and, with a key column, the key), so memory grows by about 100 bytes per row
whatever the rows hold. Examples are capped (`EXAMPLES` per kind); the counts are exact. Image
archives are compared entry by entry (name and sha256 of the bytes, read in chunks); tensors
files by their digest only.
"""

from __future__ import annotations

import csv
import hashlib
import math
import zipfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from engine.data.errors import DataError
from engine.data.limits import DataLimits

EXAMPLES = 20  # rows (or entries) listed per kind; the counts are exact
DISTINCT_CAP = 10_000  # a text column's distinct values counted exactly up to this many
CLASSES_CAP = 100  # class balance lists at most this many classes (the rest summed as "(other)")
GAPS = {"", "na", "n/a", "nan", "null", "?"}


@dataclass
class TableFile:
    """A CSV as stored: its path and how to read it (the version's options and detected encoding)."""

    path: str
    delimiter: str | None = None
    encoding: str = "auto"
    target: str | None = None


def _rows(table: TableFile) -> tuple[list[str], Iterator[list[str]]]:
    """The header and an iterator over the data rows (blank lines skipped), read as text."""
    from engine.data.csv_read import sniff_format

    fmt = sniff_format(table.path, DataLimits(), delimiter=table.delimiter, encoding=table.encoding,
                       guess_encoding=True)
    codec = "utf-8-sig" if fmt.encoding == "utf-8" else fmt.encoding
    handle = open(table.path, encoding=codec, errors="replace", newline="")  # noqa: SIM115 (closed by the generator)
    reader = csv.reader(handle, delimiter=fmt.delimiter, quotechar=fmt.quotechar)
    header = [cell.strip() for cell in next(reader, [])]

    def body() -> Iterator[list[str]]:
        try:
            for record in reader:
                if not record or all(not cell.strip() for cell in record):
                    continue
                yield [cell.strip() for cell in record]
        finally:
            handle.close()

    return header, body()


def _hash(cells: list[str]) -> int:
    """A row's 64-bit content hash (a collision among a million rows: about one chance in 10^7)."""
    digest = hashlib.blake2b("\x1f".join(cells).encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "little")


@dataclass
class _ColumnStats:
    count: int = 0
    missing: int = 0
    numeric: bool = True
    n: int = 0
    mean: float = 0.0
    m2: float = 0.0
    distinct: set[str] = field(default_factory=set)
    distinct_over: bool = False

    def add(self, value: str) -> None:
        if value.lower() in GAPS:
            self.missing += 1
            return
        self.count += 1
        if not self.distinct_over:
            self.distinct.add(value)
            if len(self.distinct) > DISTINCT_CAP:
                self.distinct_over = True
                self.distinct = set()
        if self.numeric:
            try:
                number = float(value)
            except ValueError:
                self.numeric = False
                return
            if not math.isfinite(number):
                return
            self.n += 1
            delta = number - self.mean
            self.mean += delta / self.n
            self.m2 += delta * (number - self.mean)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type, "count": self.count, "missing": self.missing,
                               "distinct": None if self.distinct_over else len(self.distinct)}
        if self.type == "numeric":
            out["mean"] = self.mean
            out["std"] = math.sqrt(self.m2 / (self.n - 1)) if self.n > 1 else 0.0
        return out

    @property
    def type(self) -> str:
        return "numeric" if self.numeric and self.count > 0 else "text" if self.count > 0 else "empty"


def _header(table: TableFile) -> list[str]:
    header, rows = _rows(table)
    rows.close()  # type: ignore[attr-defined]
    return header


def _first_pass(table: TableFile, key: str | None, shared: list[str] | None = None,
                consume: Counter[int] | None = None) -> dict[str, Any]:
    """Row hashes (or key -> hash of the `shared` columns' cells), column statistics and class
    balance of one file. With `consume` (the older file's row hashes, content mode) each row
    takes one match out of it or counts as added (the first EXAMPLES kept), and nothing is stored."""
    header, rows = _rows(table)
    if key is not None and key not in header:
        raise DataError(f"column {key!r} is not in the file (its columns: {', '.join(header)})", column=key,
                        field="key")
    index = header.index(key) if key is not None else None
    picked = [header.index(name) for name in shared] if shared is not None else None
    stats = [_ColumnStats() for _ in header]
    target = header.index(table.target) if table.target in header else None
    balance: Counter[str] = Counter()
    hashes: Counter[int] = Counter()
    keyed: dict[str, int] = {}
    duplicate_keys = added = 0
    added_examples: list[dict[str, str]] = []
    total = 0
    for cells in rows:
        total += 1
        for stat, value in zip(stats, cells, strict=False):
            stat.add(value)
        if target is not None and target < len(cells):
            balance[cells[target]] += 1
        if picked is not None:
            digest = _hash([cells[i] if i < len(cells) else "" for i in picked])
        else:
            digest = _hash(cells)
        if consume is not None:
            if consume[digest] > 0:
                consume[digest] -= 1
            else:
                added += 1
                if len(added_examples) < EXAMPLES:
                    added_examples.append(_example(header, cells))
        elif index is None:
            hashes[digest] += 1
        else:
            value = cells[index] if index < len(cells) else ""
            if value in keyed:
                duplicate_keys += 1
            else:
                keyed[value] = digest
    return {"header": header, "rows": total, "stats": stats, "balance": balance, "hashes": hashes,
            "keyed": keyed, "duplicate_keys": duplicate_keys, "added": added, "added_examples": added_examples}


def _balance_json(balance: Counter[str]) -> dict[str, int] | None:
    if not balance:
        return None
    top = dict(balance.most_common(CLASSES_CAP))
    rest = sum(balance.values()) - sum(top.values())
    if rest:
        top["(other)"] = rest
    return top


def _example(header: list[str], cells: list[str]) -> dict[str, str]:
    return dict(zip(header, cells, strict=False))


def diff_tables(before: TableFile, after: TableFile, *, key: str | None = None) -> dict[str, Any]:
    """Rows added/removed/changed (by `key` when given, else by each row's content), columns
    added/removed/retyped, per-column statistics and class balance of both files.

    Without a key a row that changed is one removed and one added (content has no identity).
    With one, rows are matched by the key's value and a row changed when a column both files
    have holds another value (a column added or removed is reported as such, not as every row
    changed); a key that repeats counts its first row (`duplicate_keys` says how many others).
    """
    shared = None
    if key is not None:
        header_after = set(_header(after))
        shared = [name for name in _header(before) if name in header_after]
    a = _first_pass(before, key, shared)
    remaining: Counter[int] = a.pop("hashes")
    b = _first_pass(after, key, shared, consume=remaining if key is None else None)
    added = removed = changed = 0
    examples: dict[str, list[Any]] = {"added": [], "removed": [], "changed": []}
    if key is None:
        added, examples["added"] = b["added"], b["added_examples"]
        removed = sum(remaining.values())
        if removed:
            header_a, rows_a = _rows(before)
            for cells in rows_a:
                digest = _hash(cells)
                if remaining[digest] > 0:
                    remaining[digest] -= 1
                    examples["removed"].append(_example(header_a, cells))
                    if len(examples["removed"]) >= EXAMPLES:
                        break
    else:
        keyed_a, keyed_b = a["keyed"], b["keyed"]
        changed_keys = [k for k, digest in keyed_b.items() if k in keyed_a and keyed_a[k] != digest]
        added_keys = [k for k in keyed_b if k not in keyed_a]
        removed_keys = [k for k in keyed_a if k not in keyed_b]
        added, removed, changed = len(added_keys), len(removed_keys), len(changed_keys)
        wanted_changed = set(changed_keys[:EXAMPLES])
        wanted_added, wanted_removed = set(added_keys[:EXAMPLES]), set(removed_keys[:EXAMPLES])
        found_before: dict[str, dict[str, str]] = {}
        header_a, rows_a = _rows(before)
        index_a = header_a.index(key)
        for cells in rows_a:
            value = cells[index_a] if index_a < len(cells) else ""
            if value in wanted_removed and len(examples["removed"]) < EXAMPLES:
                examples["removed"].append(_example(header_a, cells))
                wanted_removed.discard(value)
            if value in wanted_changed and value not in found_before:
                found_before[value] = _example(header_a, cells)
        header_b, rows_b = _rows(after)
        index_b = header_b.index(key)
        seen_changed: set[str] = set()
        for cells in rows_b:
            value = cells[index_b] if index_b < len(cells) else ""
            if value in wanted_added:
                examples["added"].append(_example(header_b, cells))
                wanted_added.discard(value)
            if value in wanted_changed and value not in seen_changed:
                seen_changed.add(value)
                now = _example(header_b, cells)
                was = found_before.get(value, {})
                columns = [c for c in shared or [] if was.get(c) != now.get(c)]
                examples["changed"].append({"key": value, "columns": columns, "before": was, "after": now})
    stats_a = {name: stat for name, stat in zip(a["header"], a["stats"], strict=False)}
    stats_b = {name: stat for name, stat in zip(b["header"], b["stats"], strict=False)}
    retyped = [{"column": name, "before": stats_a[name].type, "after": stats_b[name].type}
               for name in a["header"] if name in stats_b and stats_a[name].type != stats_b[name].type]
    out: dict[str, Any] = {
        "kind": "table",
        "key": key,
        "rows": {"before": a["rows"], "after": b["rows"], "added": added, "removed": removed,
                 "changed": changed if key is not None else None,
                 "unchanged": (b["rows"] - added - changed) if key is not None else b["rows"] - added},
        "examples": examples,
        "columns": {
            "added": [name for name in b["header"] if name not in stats_a],
            "removed": [name for name in a["header"] if name not in stats_b],
            "retyped": retyped,
        },
        "statistics": {
            name: {"before": stats_a[name].to_json() if name in stats_a else None,
                   "after": stats_b[name].to_json() if name in stats_b else None}
            for name in dict.fromkeys([*a["header"], *b["header"]])
        },
        "class_balance": {"column": after.target or before.target, "before": _balance_json(a["balance"]),
                          "after": _balance_json(b["balance"])},
    }
    if key is not None:
        out["rows"]["duplicate_keys"] = {"before": a["duplicate_keys"], "after": b["duplicate_keys"]}
    return out


def _entries(path: str) -> dict[str, bytes]:
    """{entry name: sha256} of a zip's files, each read in 1 MiB chunks."""
    out: dict[str, bytes] = {}
    with zipfile.ZipFile(path) as archive:
        for info in archive.infolist():
            if info.is_dir():
                continue
            digest = hashlib.sha256()
            with archive.open(info) as handle:
                while chunk := handle.read(1 << 20):
                    digest.update(chunk)
            out[info.filename] = digest.digest()
    return out


def _class_of(name: str) -> str:
    parts = [p for p in name.split("/") if p]
    return parts[-2] if len(parts) >= 2 else "(root)"


def diff_archives(before: str, after: str) -> dict[str, Any]:
    """Files added, removed and changed (same name, other bytes) between two image archives, and
    the number of images per class (folder) in each."""
    a, b = _entries(before), _entries(after)
    added = sorted(n for n in b if n not in a)
    removed = sorted(n for n in a if n not in b)
    changed = sorted(n for n in b if n in a and a[n] != b[n])
    return {
        "kind": "archive",
        "files": {"before": len(a), "after": len(b), "added": len(added), "removed": len(removed),
                  "changed": len(changed), "unchanged": len(b) - len(added) - len(changed)},
        "examples": {"added": added[:EXAMPLES], "removed": removed[:EXAMPLES], "changed": changed[:EXAMPLES]},
        "class_balance": {"column": None, "before": _balance_json(Counter(_class_of(n) for n in a)),
                          "after": _balance_json(Counter(_class_of(n) for n in b))},
    }
