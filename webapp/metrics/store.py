"""The metric store: a run's points packed in 64-step chunks, with a pyramid of block summaries.

MetricChunk is the record: per run, key and 64-step block, the points' steps, epochs, values
(NaN for a NaN or infinite value) and event sequence numbers as little-endian int64/float64
arrays, with the lowest and highest seq. MetricBlock keeps, for every metric, a summary of each
step-aligned block at ten levels (LEVELS: 64, 128, 256, ... 32768 steps): point count, first and
last point, and the points with the lowest and the highest finite value. One row per 64 steps
instead of one per point is what lets a recorder's batch of 5,000 points go in as about 90 rows
(and 90 foreign-key checks), 70,000+ points a second on PostgreSQL.

Writing (`metric_points_write`, inside `events_record`'s transaction, which holds the run row's
lock): a batch's points are sorted per key with numpy; each chunk the batch touches is read (the
series' tail chunk, usually) and merged with the batch's points, a redone step replacing the
stored point of that step (the replaced point goes back to the caller, which keeps it as the
event it was sent in, so a replay misses no seq); a level-0 summary is the stored one combined with the batch's when
the batch only appends, else made again from the merged points. A block of the levels above is
combined the same way, or made again from its child blocks when the batch rewrites a step in it.
New rows go in by binary COPY (PostgreSQL), stored ones by an upsert.

Reading (`metric_series_read`, webapp/metrics/series.py): many series in a few queries, a long
window downsampled from the block summaries.

Replay (`metric_points_since`, for the stream's `events_since`): the points with a seq in a
range come from the chunks whose min_seq..max_seq meets it (index run, max_seq).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.db import connection

from .models import MetricBlock, MetricChunk

# Steps per block at each level; each level is 2 blocks of the one below. A read covers a window
# with the coarsest blocks no wider than its buckets: with halving sizes that is 1-2 blocks a
# bucket (with 8x steps, 64/512/4096, it was up to 8: a 20-run comparison read 31,000 summaries).
LEVELS: tuple[int, ...] = tuple(64 << i for i in range(10))
# A window whose buckets are narrower than a 64-step block is bucketed from its points while it
# holds at most this many times max_points of them (else from its 64-step blocks: coarser, cheap).
NARROW_POINTS = 8

Point = tuple[int, float, float | None]  # (step, epoch, value); value None for NaN / infinite

_SUMMARY_FIELDS = (
    "n",
    "first_step",
    "first_epoch",
    "first_value",
    "last_step",
    "last_epoch",
    "last_value",
    "min_step",
    "min_epoch",
    "min_value",
    "max_step",
    "max_epoch",
    "max_value",
)


@dataclass
class Summary:
    """What a block (or a bucket of blocks) keeps of its points."""

    n: int
    first: Point
    last: Point
    low: Point | None  # lowest finite value, earliest on ties; None when no value is finite
    high: Point | None

    def combined(self, later: Summary) -> Summary:
        """This summary followed by one of points with higher steps."""
        return Summary(
            n=self.n + later.n,
            first=self.first,
            last=later.last,
            low=_lower(self.low, later.low),
            high=_higher(self.high, later.high),
        )

    def as_fields(self) -> dict[str, Any]:
        """MetricBlock's summary columns."""
        low = self.low or (None, None, None)
        high = self.high or (None, None, None)
        return {
            "n": self.n,
            "first_step": self.first[0],
            "first_epoch": self.first[1],
            "first_value": self.first[2],
            "last_step": self.last[0],
            "last_epoch": self.last[1],
            "last_value": self.last[2],
            "min_step": low[0],
            "min_epoch": low[1],
            "min_value": low[2],
            "max_step": high[0],
            "max_epoch": high[1],
            "max_value": high[2],
        }

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> Summary:
        """From the columns of _SUMMARY_FIELDS, in that order."""
        return cls(
            n=int(row[0]),
            first=(int(row[1]), float(row[2]), row[3]),
            last=(int(row[4]), float(row[5]), row[6]),
            low=None if row[9] is None else (int(row[7]), float(row[8]), float(row[9])),
            high=None if row[12] is None else (int(row[10]), float(row[11]), float(row[12])),
        )


def _lower(a: Point | None, b: Point | None) -> Point | None:
    if a is None:
        return b
    if b is None:
        return a
    return b if b[2] < a[2] else a  # type: ignore[operator]


def _higher(a: Point | None, b: Point | None) -> Point | None:
    if a is None:
        return b
    if b is None:
        return a
    return b if b[2] > a[2] else a  # type: ignore[operator]


# --- writing ------------------------------------------------------------------------------------

# _Series' arrays, and MetricChunk's columns that hold them; then the chunk's seq range.
_ARRAYS = ("steps", "epochs", "values", "seqs")
_PACKED_FIELDS = (*_ARRAYS, "min_seq", "max_seq")


class _Series:
    """One metric's points as step-sorted numpy arrays, one point per step (values NaN for None)."""

    def __init__(
        self, steps: np.ndarray, epochs: np.ndarray, values: np.ndarray, seqs: np.ndarray
    ) -> None:
        self.steps, self.epochs, self.values, self.seqs = steps, epochs, values, seqs

    @classmethod
    def of(cls, points: list[tuple[int, float, float | None, int]]) -> _Series:
        """From (step, epoch, value, seq) points, one per step, in any order."""
        points.sort(key=lambda p: p[0])
        count = len(points)
        return cls(
            np.fromiter((p[0] for p in points), dtype=np.int64, count=count),
            np.fromiter((p[1] for p in points), dtype=np.float64, count=count),
            np.fromiter(
                (np.nan if p[2] is None else p[2] for p in points), dtype=np.float64, count=count
            ),
            np.fromiter((p[3] for p in points), dtype=np.int64, count=count),
        )

    @classmethod
    def unpacked(cls, row: Sequence[Any]) -> _Series:
        """From a chunk's packed columns (steps, epochs, values, seqs)."""
        return cls(
            np.frombuffer(bytes(row[0]), dtype="<i8"),
            np.frombuffer(bytes(row[1]), dtype="<f8"),
            np.frombuffer(bytes(row[2]), dtype="<f8"),
            np.frombuffer(bytes(row[3]), dtype="<i8"),
        )

    @classmethod
    def joined(cls, parts: list[_Series]) -> _Series:
        if len(parts) == 1:
            return parts[0]
        return cls(*(np.concatenate([getattr(p, name) for p in parts]) for name in _ARRAYS))

    def __len__(self) -> int:
        return len(self.steps)

    def part(self, selection: Any) -> _Series:
        return _Series(*(getattr(self, name)[selection] for name in _ARRAYS))

    def merged(self, newer: _Series) -> _Series:
        """These points with `newer`'s, a step of both taking newer's point."""
        both = _Series.joined([self, newer])
        # The last of each step: the newer point (stable sort keeps `newer` after `self`).
        order = np.argsort(both.steps, kind="stable")
        steps = both.steps[order]
        keep = np.r_[steps[1:] != steps[:-1], True]
        return both.part(order[keep])

    def window(self, lo: int, hi: int) -> _Series:
        return self.part(slice(*np.searchsorted(self.steps, [lo, hi + 1])))

    def point(self, i: int) -> Point:
        value = float(self.values[i])
        return int(self.steps[i]), float(self.epochs[i]), None if math.isnan(value) else value

    def points(self) -> list[Point]:
        values = self.values.tolist()
        return [
            (step, epoch, None if value != value else value)  # NaN != NaN: a gap
            for step, epoch, value in zip(
                self.steps.tolist(), self.epochs.tolist(), values, strict=True
            )
        ]

    def packed(self) -> tuple[bytes, bytes, bytes, bytes, int, int]:
        """MetricChunk's columns of _PACKED_FIELDS."""
        return (
            self.steps.astype("<i8").tobytes(),
            self.epochs.astype("<f8").tobytes(),
            self.values.astype("<f8").tobytes(),
            self.seqs.astype("<i8").tobytes(),
            int(self.seqs.min()),
            int(self.seqs.max()),
        )

    def blocks(self, size: int | None) -> list[tuple[int, int, int, Summary]]:
        """(block, start, end, summary of points start:end) for every block of `size` steps held
        (size None: one block of them all)."""
        ids = self.steps // size if size is not None else np.zeros(len(self.steps), dtype=np.int64)
        starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
        ends = np.r_[starts[1:], len(ids)]
        finite = ~np.isnan(self.values)
        low_keys = np.where(finite, self.values, np.inf)
        high_keys = np.where(finite, self.values, -np.inf)
        out: list[tuple[int, int, int, Summary]] = []
        for start, end in zip(starts.tolist(), ends.tolist(), strict=True):
            if finite[start:end].any():
                low = self.point(start + int(np.argmin(low_keys[start:end])))
                high = self.point(start + int(np.argmax(high_keys[start:end])))
            else:
                low = high = None
            summary = Summary(end - start, self.point(start), self.point(end - 1), low, high)
            out.append((int(ids[start]), start, end, summary))
        return out

    def summary(self) -> Summary:
        """The summary of all the points (at least one)."""
        return self.blocks(None)[0][3]


# A stored point a redone step replaced: (seq, key, step, epoch, value).
Replaced = tuple[int, str, int, float, float | None]


def metric_points_write(
    *, run_id: int, points: dict[tuple[str, int], tuple[float, float | None, int]]
) -> list[Replaced]:
    """Store points {(key, step): (epoch, value, seq)} of one run, a stored step overwritten.

    Returns the stored points that redone steps replaced, with their seqs: the caller keeps them
    (events_record stores them as the events they were, so the stream's replay keeps every seq).
    Runs inside the caller's transaction (events_record's), which holds the run row's lock, so
    no other writer of this run's points interleaves.
    """
    by_key: dict[str, list[tuple[int, float, float | None, int]]] = {}
    for (key, step), (epoch, value, seq) in points.items():
        by_key.setdefault(key, []).append((step, epoch, value, seq))
    replaced: list[Replaced] = []
    for key, key_points in by_key.items():
        replaced += _series_write(run_id, key, _Series.of(key_points))
    return replaced


def _series_write(run_id: int, key: str, series: _Series) -> list[Replaced]:
    """Write one metric's points; the stored points of the steps they redo (seq, key, step, epoch, value)."""
    replaced: list[Replaced] = []
    stored, packed = _stored_blocks(run_id, key, series)
    rows: list[tuple[int, int, Summary, _Series | None]] = []  # (level, block, summary, points)
    for block, start, end, summary in series.blocks(LEVELS[0]):
        part = series.part(slice(start, end))
        old = packed.get(block)
        if old is None:
            rows.append((0, block, summary, part))
        elif summary.first[0] > int(old.steps[-1]):
            joined = _Series.joined([old, part])
            rows.append((0, block, stored[(0, block)].combined(summary), joined))
        else:  # a redone step: the old summary may hold the point it replaced
            gone = old.part(np.isin(old.steps, part.steps))
            replaced += [
                (int(seq), key, step, epoch, value)
                for seq, (step, epoch, value) in zip(gone.seqs.tolist(), gone.points(), strict=True)
            ]
            merged = old.merged(part)
            rows.append((0, block, merged.summary(), merged))
    for level, size in enumerate(LEVELS[1:], 1):
        redo: list[int] = []
        for block, _start, _end, summary in series.blocks(size):
            old_summary = stored.get((level, block))
            if old_summary is None:
                rows.append((level, block, summary, None))
            elif summary.first[0] > old_summary.last[0]:
                rows.append((level, block, old_summary.combined(summary), None))
            else:
                redo.append(block)
        if redo:
            # The levels below first: the redone blocks are built from them.
            _blocks_upsert(run_id, key, rows, stored)
            rows = []
            for block in redo:
                again = _block_from_children(run_id, key, level, block)
                if again is not None:
                    rows.append((level, block, again, None))
    _blocks_upsert(run_id, key, rows, stored)
    return replaced


def _blocks_upsert(
    run_id: int,
    key: str,
    rows: list[tuple[int, int, Summary, _Series | None]],
    stored: dict[tuple[int, int], Summary],
) -> None:
    """Write blocks, and the chunk of points of each level-0 one: an update of the ones in
    `stored`, an insert of the others.

    On PostgreSQL the new ones go in by binary COPY (a batch's new chunks: 2 KB of points each,
    which an INSERT .. SELECT FROM unnest(arrays) copies at a third of the rate), the stored ones
    (a series' tail blocks, a handful) by an upsert.
    """
    if not rows:
        return
    blocks: tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]] = ([], [])  # (new, stored)
    chunks: tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]] = ([], [])
    for level, block, summary, points in rows:
        fields = summary.as_fields()
        side = int((level, block) in stored)
        blocks[side].append(
            (run_id, key, level, block, *(fields[name] for name in _SUMMARY_FIELDS))
        )
        if points is not None:
            chunks[side].append((run_id, key, block, *points.packed()))
    for model, columns, types, (fresh, known) in (
        (MetricBlock, _BLOCK_COLUMNS, _PG_BLOCK_TYPES, blocks),
        (MetricChunk, _CHUNK_COLUMNS, _PG_CHUNK_TYPES, chunks),
    ):
        if connection.vendor == "postgresql" and fresh:
            with (
                connection.cursor() as cursor,
                cursor.cursor.copy(
                    f"COPY {_table(model)} ({_names(columns)}) FROM STDIN (FORMAT BINARY)"
                ) as copy,
            ):
                copy.set_types(types)
                for row in fresh:
                    copy.write_row(row)
        else:
            known = fresh + known
        _rows_upsert(model, columns, known)


def _rows_upsert(model: Any, columns: tuple[str, ...], rows: list[tuple[Any, ...]]) -> None:
    """Insert or update rows of MetricBlock or MetricChunk, keyed by their unique columns."""
    unique = 4 if model is MetricBlock else 3  # (run_id, key, level, block) / (run_id, key, block)
    update = ", ".join(
        f"{q} = excluded.{q}" for q in map(connection.ops.quote_name, columns[unique:])
    )
    one = "(" + ", ".join(["%s"] * len(columns)) + ")"
    with connection.cursor() as cursor:
        for start in range(0, len(rows), 500):  # under SQLite's bound-parameter limit
            chunk = rows[start : start + 500]
            cursor.execute(
                f"INSERT INTO {_table(model)} ({_names(columns)}) "
                f"VALUES {', '.join([one] * len(chunk))} "
                f"ON CONFLICT ({', '.join(columns[:unique])}) DO UPDATE SET {update}",
                [value for row in chunk for value in row],
            )


_BLOCK_COLUMNS = ("run_id", "key", "level", "block", *_SUMMARY_FIELDS)
_CHUNK_COLUMNS = ("run_id", "key", "block", *_PACKED_FIELDS)
# PostgreSQL types of those columns (the COPY's binary rows).
_PG_BLOCK_TYPES = ("int8", "varchar", "int2", "int8", "int4", *(["int8", "float8", "float8"] * 4))
_PG_CHUNK_TYPES = ("int8", "varchar", "int8", "bytea", "bytea", "bytea", "bytea", "int8", "int8")


def _stored_blocks(
    run_id: int, key: str, series: _Series
) -> tuple[dict[tuple[int, int], Summary], dict[int, _Series]]:
    """The stored summaries of the blocks the batch touches, by (level, block), and the points
    of its stored level-0 blocks, by block."""
    lo, hi = int(series.steps[0]), int(series.steps[-1])
    # One index range per level (UNION ALL): with the levels OR-ed under one run/key condition,
    # PostgreSQL filters every block of the series, and a long run's batches slow down.
    one = (
        f"SELECT level, block, {', '.join(_SUMMARY_FIELDS)} FROM {_table(MetricBlock)} "
        "WHERE run_id = %s AND key = %s AND level = %s AND block BETWEEN %s AND %s"
    )
    params: list[Any] = []
    for level, size in enumerate(LEVELS):
        params += [run_id, key, level, lo // size, hi // size]
    rows = _fetch(" UNION ALL ".join([one] * len(LEVELS)), params)
    summaries = {(row[0], row[1]): Summary.from_row(row[2:]) for row in rows}
    points: dict[int, _Series] = {}
    if any(level == 0 for level, _ in summaries):
        chunks = _fetch(
            f"SELECT block, {_names(_ARRAYS)} FROM {_table(MetricChunk)} "
            "WHERE run_id = %s AND key = %s AND block BETWEEN %s AND %s",
            [run_id, key, lo // LEVELS[0], hi // LEVELS[0]],
        )
        points = {row[0]: _Series.unpacked(row[1:]) for row in chunks}
    return summaries, points


def _block_from_children(run_id: int, key: str, level: int, block: int) -> Summary | None:
    fan = LEVELS[level] // LEVELS[level - 1]
    children = (
        MetricBlock.objects.filter(
            run_id=run_id,
            key=key,
            level=level - 1,
            block__gte=block * fan,
            block__lt=(block + 1) * fan,
        )
        .order_by("block")
        .values_list(*_SUMMARY_FIELDS)
    )
    result: Summary | None = None
    for row in children:
        child = Summary.from_row(row)
        result = child if result is None else result.combined(child)
    return result


def metric_points_import(
    *, run_id: int, key: str, points: Iterable[tuple[int, float, float | None, int]]
) -> int:
    """Append (step, epoch, value, seq) points of one series in step order, 50,000 at a time
    (migration 0007 moves the row-per-point table here; the bench copies series with it).
    Returns how many were written."""
    batch: list[tuple[int, float, float | None, int]] = []
    written = 0
    for point in points:
        batch.append(point)
        if len(batch) == 50_000:
            _series_write(run_id, key, _Series.of(batch))
            written, batch = written + len(batch), []
    if batch:
        _series_write(run_id, key, _Series.of(batch))
        written += len(batch)
    return written


def metric_blocks_rebuild(*, run_id: int, key: str | None = None) -> None:
    """Summarise a run's stored points again from scratch (its chunks are the record)."""
    blocks = MetricBlock.objects.filter(run_id=run_id)
    chunks = MetricChunk.objects.filter(run_id=run_id)
    if key is not None:
        blocks, chunks = blocks.filter(key=key), chunks.filter(key=key)
    series: dict[str, list[_Series]] = {}
    for k, *packed in chunks.order_by("key", "block").values_list("key", *_ARRAYS):
        series.setdefault(k, []).append(_Series.unpacked(packed))
    blocks.delete()
    chunks.delete()
    for k, parts in series.items():
        _series_write(run_id, k, _Series.joined(parts))


def metric_points_since(
    *, run_id: int, after: int, upto: int
) -> list[tuple[int, str, int, float, float | None]]:
    """(seq, key, step, epoch, value) of the run's points with after < seq <= upto, in seq order."""
    rows = _fetch(
        f"SELECT key, {_names(_ARRAYS)} FROM {_table(MetricChunk)} "
        "WHERE run_id = %s AND max_seq > %s AND min_seq <= %s",
        [run_id, after, upto],
    )
    found: list[tuple[int, str, int, float, float | None]] = []
    for key, *packed in rows:
        block = _Series.unpacked(packed)
        block = block.part((block.seqs > after) & (block.seqs <= upto))
        found += [
            (int(seq), key, step, epoch, value)
            for seq, (step, epoch, value) in zip(block.seqs.tolist(), block.points(), strict=True)
        ]
    found.sort(key=lambda p: (p[0], p[1]))
    return found


# --- raw SQL ------------------------------------------------------------------------------------


def _table(model: Any) -> str:
    return connection.ops.quote_name(model._meta.db_table)


def _names(columns: Sequence[str]) -> str:
    """Quoted column names for raw SQL (MetricChunk has a column called `values`)."""
    return ", ".join(map(connection.ops.quote_name, columns))


def _fetch(sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
    """The rows of a read. On PostgreSQL bound on the server and sent in binary: Django's
    client-side cursor gets text, and parsing it was most of a 20-run comparison's time (thousands
    of summary rows; chunks' bytea as hex). The same connection, so the same transaction."""
    if connection.vendor != "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.fetchall()
    import psycopg

    connection.ensure_connection()
    with psycopg.Cursor(connection.connection) as cursor:
        cursor.execute(sql, params, binary=True)
        return cursor.fetchall()
