"""The metric store: points as the record, a pyramid of block summaries for reading long series.

MetricPoint (unique run/key/step, with the seq of the event that wrote it) stays the record: the
stream's replay (events_since) and resume's overwrite of redone steps work on it as before.
Beside it, MetricRollup keeps, for every metric, a summary of each step-aligned block at four
levels (LEVELS: 64, 512, 4096 and 32768 steps): point count, first and last point, and the points
with the lowest and the highest finite value. Both are written in the one transaction of
`events_record`, so a reader never sees points without their summaries.

Writing (`metric_points_write`): the points of a batch are upserted in one statement
(PostgreSQL: INSERT .. SELECT FROM unnest(arrays) ON CONFLICT; SQLite: executemany with ON
CONFLICT), then each block the batch touches is summarised with numpy and combined with the
stored summary when the batch only appends to it; a block the batch rewrites (a redone step) is
summarised again from the points themselves (level 0) or from its child blocks (levels above).

Reading (`metric_series_read`, many series in a few queries): a window a..b that holds at most
max_points points is returned point for point (the real data). A larger one is cut into
(max_points - 2) // 2 buckets of equal step width; the window is covered by the coarsest blocks
no wider than a bucket (finer blocks and then single points at its edges), and each bucket keeps
the lowest and highest point of the blocks in it, with the window's first and last point, so at
most max_points points come back after reading about max_points..8*max_points summaries, however
long the series is. Buckets narrower than a 64-step block are made from the points themselves
while the window holds at most NARROW_POINTS * max_points of them, else from the 64-step blocks
(fewer points come back then, each still a stored point). The counting and bucketing is numpy.

Series written before the summaries existed (no MetricRollup row for the key) are read from the
points and downsampled in Python, as before.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.db import connection

from .models import MetricPoint, MetricRollup

# Steps per block at each level; each level is 8 blocks of the one below.
LEVELS: tuple[int, ...] = (64, 512, 4096, 32768)
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
        """MetricRollup's summary columns."""
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


class _Series:
    """One metric's points of a batch as sorted numpy arrays (values NaN where None)."""

    def __init__(self, points: list[tuple[int, float, float | None]]) -> None:
        points.sort(key=lambda p: p[0])
        self.steps = np.fromiter((p[0] for p in points), dtype=np.int64, count=len(points))
        self.epochs = np.fromiter((p[1] for p in points), dtype=np.float64, count=len(points))
        self.values = np.fromiter(
            (np.nan if p[2] is None else p[2] for p in points), dtype=np.float64, count=len(points)
        )

    def point(self, i: int) -> Point:
        value = float(self.values[i])
        return int(self.steps[i]), float(self.epochs[i]), None if math.isnan(value) else value

    def blocks(self, size: int) -> list[tuple[int, Summary]]:
        """(block, summary of this batch's points in it) for every block of `size` steps touched."""
        ids = self.steps // size
        starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
        ends = np.r_[starts[1:], len(ids)]
        finite = ~np.isnan(self.values)
        low_keys = np.where(finite, self.values, np.inf)
        high_keys = np.where(finite, self.values, -np.inf)
        out: list[tuple[int, Summary]] = []
        for start, end in zip(starts.tolist(), ends.tolist(), strict=True):
            if finite[start:end].any():
                low = self.point(start + int(np.argmin(low_keys[start:end])))
                high = self.point(start + int(np.argmax(high_keys[start:end])))
            else:
                low = high = None
            out.append(
                (
                    int(ids[start]),
                    Summary(end - start, self.point(start), self.point(end - 1), low, high),
                )
            )
        return out


def summarise(points: Iterable[Point]) -> Summary | None:
    """The summary of points in step order (None for no points)."""
    result: Summary | None = None
    for point in points:
        value = point[2]
        one = Summary(
            1, point, point, None if value is None else point, None if value is None else point
        )
        result = one if result is None else result.combined(one)
    return result


def _pg_array(numbers: Iterable[Any]) -> str:
    """A PostgreSQL array literal of numbers (None -> NULL), built in C by str.join: psycopg's own
    list dumping costs more than the insert itself at 50,000 points a second."""
    return "{" + ",".join("NULL" if n is None else repr(n) for n in numbers) + "}"


def _points_upsert(
    run_id: int, points: dict[tuple[str, int], tuple[float, float | None, int]]
) -> None:
    """Insert or overwrite (run, key, step) points in one statement."""
    table = connection.ops.quote_name(MetricPoint._meta.db_table)
    conflict = (
        "ON CONFLICT (run_id, key, step) DO UPDATE SET "
        "epoch = excluded.epoch, value = excluded.value, seq = excluded.seq"
    )
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            keys = list(dict.fromkeys(key for key, _ in points))
            index = {key: i for i, key in enumerate(keys, 1)}
            rows = list(points.values())
            cursor.execute(
                f"INSERT INTO {table} (run_id, key, step, epoch, value, seq) "
                "SELECT %s, (%s::varchar[])[k], s, e, v, q "
                "FROM unnest(%s::int[], %s::bigint[], %s::float8[], %s::float8[], %s::bigint[]) AS t(k, s, e, v, q) "
                + conflict,
                [
                    run_id,
                    keys,
                    "{" + ",".join(str(index[key]) for key, _ in points) + "}",
                    "{" + ",".join(str(step) for _, step in points) + "}",
                    _pg_array(row[0] for row in rows),
                    _pg_array(row[1] for row in rows),
                    "{" + ",".join(str(row[2]) for row in rows) + "}",
                ],
            )
        else:
            cursor.executemany(
                f"INSERT INTO {table} (run_id, key, step, epoch, value, seq) VALUES (%s, %s, %s, %s, %s, %s) "
                + conflict,
                [
                    (run_id, key, step, epoch, value, seq)
                    for (key, step), (epoch, value, seq) in points.items()
                ],
            )


def metric_points_write(
    *, run_id: int, points: dict[tuple[str, int], tuple[float, float | None, int]]
) -> None:
    """Store points {(key, step): (epoch, value, seq)} of one run and keep their block summaries.

    Runs inside the caller's transaction (events_record's), which holds the run row's lock, so
    no other writer of this run's points interleaves.
    """
    if not points:
        return
    _points_upsert(run_id, points)
    by_key: dict[str, list[tuple[int, float, float | None]]] = {}
    for (key, step), (epoch, value, _seq) in points.items():
        by_key.setdefault(key, []).append((step, epoch, value))
    for key, key_points in by_key.items():
        _rollups_update(run_id, key, _Series(key_points))


def _rollups_update(run_id: int, key: str, series: _Series) -> None:
    stored = _stored_blocks(run_id, key, series)
    rows: list[tuple[int, int, Summary]] = []  # (level, block, summary) not yet written
    for level, size in enumerate(LEVELS):
        redo: list[int] = []
        for block, summary in series.blocks(size):
            old = stored.get((level, block))
            if old is None:
                rows.append((level, block, summary))
            elif summary.first[0] > old.last[0]:
                rows.append((level, block, old.combined(summary)))
            else:  # a redone step: the old summary may hold the point it replaced
                redo.append(block)
        if redo:
            # The levels below first: the redone blocks are built from them.
            _rollups_upsert(run_id, key, rows)
            rows = []
            for block in redo:
                again = (
                    _block_from_points(run_id, key, block, size)
                    if level == 0
                    else _block_from_children(run_id, key, level, block)
                )
                if again is not None:
                    rows.append((level, block, again))
    _rollups_upsert(run_id, key, rows)


def _rollups_upsert(run_id: int, key: str, rows: list[tuple[int, int, Summary]]) -> None:
    """Write block summaries in one statement (an insert, or an update of the stored block)."""
    if len(rows) > 1000:  # a rebuild: keep under the databases' bound-parameter limits
        for start in range(0, len(rows), 1000):
            _rollups_upsert(run_id, key, rows[start : start + 1000])
        return
    if not rows:
        return
    columns = ("run_id", "key", "level", "block", *_SUMMARY_FIELDS)
    one = "(" + ", ".join(["%s"] * len(columns)) + ")"
    params: list[Any] = []
    for level, block, summary in rows:
        fields = summary.as_fields()
        params += [run_id, key, level, block, *(fields[name] for name in _SUMMARY_FIELDS)]
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {connection.ops.quote_name(MetricRollup._meta.db_table)} ({', '.join(columns)}) "
            f"VALUES {', '.join([one] * len(rows))} ON CONFLICT (run_id, key, level, block) DO UPDATE SET "
            + ", ".join(f"{name} = excluded.{name}" for name in _SUMMARY_FIELDS),
            params,
        )


def _stored_blocks(run_id: int, key: str, series: _Series) -> dict[tuple[int, int], Summary]:
    """The stored summaries of the blocks the batch touches, by (level, block)."""
    lo, hi = int(series.steps[0]), int(series.steps[-1])
    table = connection.ops.quote_name(MetricRollup._meta.db_table)
    # One index range per level (UNION ALL): with the levels OR-ed under one run/key condition,
    # PostgreSQL filters every block of the series, and a long run's batches slow down.
    one = (
        f"SELECT level, block, {', '.join(_SUMMARY_FIELDS)} FROM {table} "
        "WHERE run_id = %s AND key = %s AND level = %s AND block BETWEEN %s AND %s"
    )
    params: list[Any] = []
    for level, size in enumerate(LEVELS):
        params += [run_id, key, level, lo // size, hi // size]
    with connection.cursor() as cursor:
        cursor.execute(" UNION ALL ".join([one] * len(LEVELS)), params)
        return {(row[0], row[1]): Summary.from_row(row[2:]) for row in cursor.fetchall()}


def _block_from_points(run_id: int, key: str, block: int, size: int) -> Summary | None:
    points = (
        MetricPoint.objects.filter(
            run_id=run_id, key=key, step__gte=block * size, step__lt=(block + 1) * size
        )
        .order_by("step")
        .values_list("step", "epoch", "value")
    )
    return summarise(points)


def _block_from_children(run_id: int, key: str, level: int, block: int) -> Summary | None:
    children = (
        MetricRollup.objects.filter(
            run_id=run_id, key=key, level=level - 1, block__gte=block * 8, block__lt=(block + 1) * 8
        )
        .order_by("block")
        .values_list(*_SUMMARY_FIELDS)
    )
    result: Summary | None = None
    for row in children:
        child = Summary.from_row(row)
        result = child if result is None else result.combined(child)
    return result


def metric_rollups_rebuild(*, run_id: int, key: str | None = None) -> None:
    """Summarise a run's stored points again from scratch (points written around events_record)."""
    rollups = MetricRollup.objects.filter(run_id=run_id)
    points = MetricPoint.objects.filter(run_id=run_id)
    if key is not None:
        rollups, points = rollups.filter(key=key), points.filter(key=key)
    rollups.delete()
    by_key: dict[str, list[tuple[int, float, float | None]]] = {}
    for k, step, epoch, value in points.order_by("key", "step").values_list(
        "key", "step", "epoch", "value"
    ):
        by_key.setdefault(k, []).append((step, epoch, value))
    for k, key_points in by_key.items():
        _rollups_update(run_id, k, _Series(key_points))


# --- reading ------------------------------------------------------------------------------------

SeriesId = tuple[int, str]  # (run id, metric key)


def _cover(lo: int, hi: int, level: int) -> list[tuple[int, int, int]]:
    """Cover steps lo..hi with whole blocks: [(level, first block, last block)], level -1 = steps."""
    if lo > hi:
        return []
    if level < 0:
        return [(-1, lo, hi)]
    size = LEVELS[level]
    first = -(-lo // size)
    last = (hi + 1) // size - 1
    if first > last:
        return _cover(lo, hi, level - 1)
    return [
        *_cover(lo, first * size - 1, level - 1),
        (level, first, last),
        *_cover((last + 1) * size, hi, level - 1),
    ]


def _table(model: Any) -> str:
    return connection.ops.quote_name(model._meta.db_table)


def _raw_points(
    ranges: list[tuple[int, str, int, int]], *, small: bool = False
) -> dict[SeriesId, list[Point]]:
    """Points of (run, key, first step, last step) ranges, in step order.

    One query per series (an index range scan already in step order), or one in all for
    `small` ranges (the few points at the edges of a covered window).
    """
    found: dict[SeriesId, list[Point]] = {}
    if not ranges:
        return found
    if small:
        where = " OR ".join("(run_id = %s AND key = %s AND step BETWEEN %s AND %s)" for _ in ranges)
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT run_id, key, step, epoch, value FROM {_table(MetricPoint)} WHERE {where} "
                "ORDER BY run_id, key, step",
                [v for r in ranges for v in r],
            )
            for run_id, key, step, epoch, value in cursor.fetchall():
                found.setdefault((run_id, key), []).append((step, epoch, value))
        return found
    with connection.cursor() as cursor:
        for run_id, key, lo, hi in ranges:
            cursor.execute(
                f"SELECT step, epoch, value FROM {_table(MetricPoint)} "
                "WHERE run_id = %s AND key = %s AND step BETWEEN %s AND %s ORDER BY step",
                [run_id, key, lo, hi],
            )
            found[(run_id, key)] = cursor.fetchall()
    return found


def _extents(series: list[SeriesId]) -> dict[SeriesId, tuple[int, int]]:
    """(first step, last step) of each summarised series (absent: the key has no summaries)."""
    run_ids = sorted({run_id for run_id, _ in series})
    keys = sorted({key for _, key in series})
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT run_id, key, MIN(first_step), MAX(last_step) FROM {_table(MetricRollup)} "
            f"WHERE level = %s AND run_id IN ({', '.join(['%s'] * len(run_ids))}) "
            f"AND key IN ({', '.join(['%s'] * len(keys))}) GROUP BY run_id, key",
            [len(LEVELS) - 1, *run_ids, *keys],
        )
        return {(row[0], row[1]): (int(row[2]), int(row[3])) for row in cursor.fetchall()}


def metric_series_read(
    *,
    series: list[SeriesId],
    max_points: int | None = None,
    from_step: int | None = None,
    to_step: int | None = None,
) -> dict[SeriesId, list[Point]]:
    """The points of each (run, key) in steps from_step..to_step, at most max_points of each.

    Every stored point when the window holds at most max_points (or max_points is None);
    otherwise the first, the last and each bucket's lowest and highest point. A series with no
    summaries (written before them) is left out: the caller reads its points itself. A few
    queries in all, however many series are asked for.
    """
    if not series:
        return {}
    if (
        max_points is not None
        and from_step is not None
        and to_step is not None
        and to_step - from_step < max_points
    ):
        # A zoomed window of at most max_points steps holds at most max_points points (one per
        # key and step): read them, summaries or not.
        return _raw_points([(run_id, key, from_step, to_step) for run_id, key in series])
    extents = _extents(series)
    windows: dict[SeriesId, tuple[int, int]] = {}
    answer: dict[SeriesId, list[Point]] = {}
    for sid, (first, last) in extents.items():
        lo = first if from_step is None else max(from_step, first)
        hi = last if to_step is None else min(to_step, last)
        if lo > hi:
            answer[sid] = []
        else:
            windows[sid] = (lo, hi)
    if max_points is None:
        raw = _raw_points([(*sid, lo, hi) for sid, (lo, hi) in windows.items()])
        return {**answer, **{sid: raw.get(sid, []) for sid in windows}}
    buckets = max((max_points - 2) // 2, 1)
    block_ranges: list[tuple[int, str, int, int, int]] = []
    edge_ranges: list[tuple[int, str, int, int]] = []
    narrow: set[SeriesId] = set()  # buckets narrower than the finest block
    for sid, (lo, hi) in windows.items():
        width = (hi - lo + 1) / buckets
        level = max((i for i, size in enumerate(LEVELS) if size <= width), default=-1)
        if level < 0:
            narrow.add(sid)
            level = 0  # counted with the finest blocks first: the window may hold few points
        for c_level, c_lo, c_hi in _cover(lo, hi, level):
            if c_level < 0:
                edge_ranges.append((*sid, c_lo, c_hi))
            else:
                block_ranges.append((*sid, c_level, c_lo, c_hi))
    pieces: dict[SeriesId, list[tuple[Any, ...]]] = {sid: [] for sid in windows}
    for start in range(0, len(block_ranges), 200):  # keep each statement's parameter count modest
        chunk = block_ranges[start : start + 200]
        where = " OR ".join(
            "(run_id = %s AND key = %s AND level = %s AND block BETWEEN %s AND %s)" for _ in chunk
        )
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT run_id, key, {', '.join(_SUMMARY_FIELDS)} FROM {_table(MetricRollup)} WHERE {where}",
                [v for r in chunk for v in r],
            )
            for row in cursor.fetchall():
                pieces[(row[0], row[1])].append(row[2:])
    edges = _raw_points(edge_ranges, small=True)
    exact: list[SeriesId] = []
    fine: list[SeriesId] = []
    for sid, (lo, hi) in windows.items():
        table = _summary_table(pieces[sid], edges.get(sid, []))
        held = table[:, 0].sum()
        if held <= max_points:
            exact.append(sid)
        elif sid in narrow and held <= NARROW_POINTS * max_points:
            fine.append(sid)  # bucketed from its points: finer than the 64-step blocks
        else:
            answer[sid] = _bucketed(table, lo=lo, width=(hi - lo + 1) / buckets, buckets=buckets)
    raw = _raw_points([(*sid, *windows[sid]) for sid in exact + fine])
    answer.update({sid: raw.get(sid, []) for sid in exact})
    for sid in fine:
        lo, hi = windows[sid]
        answer[sid] = _bucketed(
            _summary_table([], raw.get(sid, [])),
            lo=lo,
            width=(hi - lo + 1) / buckets,
            buckets=buckets,
        )
    return answer


def _summary_table(rows: list[tuple[Any, ...]], points: list[Point]) -> np.ndarray:
    """Block summaries (_SUMMARY_FIELDS' order) and single points as one (N, 13) float array.

    None becomes NaN; steps are exact below 2**53. A point is the summary of one: n = 1 and
    itself as first, last, lowest and highest.
    """
    parts = [np.array(rows, dtype=np.float64).reshape(-1, len(_SUMMARY_FIELDS))]
    if points:
        single = np.array(points, dtype=np.float64).reshape(-1, 3)
        parts.append(np.column_stack([np.ones(len(single)), single, single, single, single]))
    return np.concatenate(parts)


def _bucketed(table: np.ndarray, *, lo: int, width: float, buckets: int) -> list[Point]:
    """First, last, and per bucket of `width` steps its lowest and highest point (step order).

    `table` holds summaries (_summary_table) that together cover the window once; a piece
    belongs to the bucket of its first step. Vectorised: a long series' overview, or twenty of
    them, reads some 30,000 summaries.
    """
    table = table[np.argsort(table[:, 1], kind="stable")]
    index = np.minimum(((table[:, 1] - lo) / width).astype(np.int64), buckets - 1)
    starts = np.flatnonzero(np.r_[True, index[1:] != index[:-1]])
    low_values, high_values = table[:, 9], table[:, 12]
    low = np.lexsort((np.where(np.isnan(low_values), np.inf, low_values), index))[starts]
    high = np.lexsort((np.where(np.isnan(high_values), np.inf, -high_values), index))[starts]
    chosen = [table[[0], 1:4], table[[-1], 4:7]]
    for picked, columns in ((low, slice(7, 10)), (high, slice(10, 13))):
        finite = ~np.isnan(table[picked, columns.start + 2])
        chosen.append(table[picked[finite], columns])
        # A bucket with no finite value shows its first point (a gap the chart draws).
        chosen.append(table[starts[~finite], 1:4])
    points = np.concatenate(chosen)
    _, unique = np.unique(points[:, 0], return_index=True)
    return [
        (int(step), float(epoch), None if math.isnan(value) else float(value))
        for step, epoch, value in points[unique].tolist()
    ]
