"""Reading the metric store (webapp/metrics/store.py): many series in a few queries.

A window a..b that holds at most max_points points is returned point for point (the real data).
A larger one is cut into (max_points - 2) // 2 buckets of equal step width; the window is covered
by the coarsest blocks no wider than a bucket (finer blocks and then single points at its edges),
and each bucket keeps the lowest and highest point of the blocks in it, with the window's first
and last point, so at most max_points points come back after reading about max_points..2*max_points
summaries, however long the series is. Buckets narrower than a 64-step block are made from the
points themselves while the window holds at most NARROW_POINTS * max_points of them, else from
the 64-step blocks (fewer points come back then, each still a stored point). The counting and
bucketing is numpy.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from django.db import connection

from .models import MetricBlock, MetricChunk
from .store import (
    _ARRAYS,
    _SUMMARY_FIELDS,
    LEVELS,
    NARROW_POINTS,
    Point,
    _fetch,
    _names,
    _Series,
    _table,
)

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


def _raw_points(ranges: list[tuple[int, str, int, int]]) -> dict[SeriesId, _Series]:
    """Points of (run, key, first step, last step) ranges, in step order, from their chunks.

    One query per 200 ranges, each an index range of MetricChunk's (run, key, block).
    """
    parts: dict[SeriesId, dict[int, _Series]] = {}
    size = LEVELS[0]
    for start in range(0, len(ranges), 200):
        chunk = ranges[start : start + 200]
        where = " OR ".join("(run_id = %s AND key = %s AND block BETWEEN %s AND %s)" for _ in chunk)
        rows = _fetch(
            f"SELECT run_id, key, block, {_names(_ARRAYS)} FROM {_table(MetricChunk)} WHERE {where}",
            [v for run_id, key, lo, hi in chunk for v in (run_id, key, lo // size, hi // size)],
        )
        for run_id, key, block, *packed in rows:
            parts.setdefault((run_id, key), {})[block] = _Series.unpacked(packed)
    joined = {
        sid: _Series.joined([blocks[b] for b in sorted(blocks)]) for sid, blocks in parts.items()
    }
    windows: dict[SeriesId, list[_Series]] = {}
    for run_id, key, lo, hi in sorted(ranges):  # a series' ranges in step order, none overlapping
        sid = (run_id, key)
        if sid in joined:
            windows.setdefault(sid, []).append(joined[sid].window(lo, hi))
    return {sid: _Series.joined(found) for sid, found in windows.items()}


def _extents(series: list[SeriesId]) -> dict[SeriesId, tuple[int, int]]:
    """(first step, last step) of each summarised series (absent: the key has no summaries)."""
    run_ids = sorted({run_id for run_id, _ in series})
    keys = sorted({key for _, key in series})
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT run_id, key, MIN(first_step), MAX(last_step) FROM {_table(MetricBlock)} "
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
    points is left out. A few queries in all, however many series are asked for.
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
        # key and step): read them.
        raw = _raw_points([(run_id, key, from_step, to_step) for run_id, key in series])
        return {sid: points.points() for sid, points in raw.items()}
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
        return {**answer, **{sid: raw[sid].points() if sid in raw else [] for sid in windows}}
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
    pieces = _block_tables(block_ranges)
    edges = _raw_points(edge_ranges)
    exact: list[SeriesId] = []
    fine: list[SeriesId] = []
    for sid, (lo, hi) in windows.items():
        table = _summary_table(pieces.get(sid), edges.get(sid))
        held = table[:, 0].sum()
        if held <= max_points:
            exact.append(sid)
        elif sid in narrow and held <= NARROW_POINTS * max_points:
            fine.append(sid)  # bucketed from its points: finer than the 64-step blocks
        else:
            answer[sid] = _bucketed(table, lo=lo, width=(hi - lo + 1) / buckets, buckets=buckets)
    raw = _raw_points([(*sid, *windows[sid]) for sid in exact + fine])
    answer.update({sid: raw[sid].points() if sid in raw else [] for sid in exact})
    for sid in fine:
        lo, hi = windows[sid]
        answer[sid] = _bucketed(
            _summary_table(None, raw.get(sid)),
            lo=lo,
            width=(hi - lo + 1) / buckets,
            buckets=buckets,
        )
    return answer


def _block_tables(ranges: list[tuple[int, str, int, int, int]]) -> dict[SeriesId, np.ndarray]:
    """The summaries of the blocks in (run, key, level, first, last) ranges: per series an (N, 13)
    float array in _SUMMARY_FIELDS' order, NaN for null.

    PostgreSQL: one statement over the ranges (passed as arrays), each range's summaries coming
    back as one 2-D float8 array in its binary form (array_send), read by numpy without a Python
    object per value: a 20-run comparison reads 30,000 summaries, and
    rows of them cost more to send and parse than to find. SQLite: an OR of 200 ranges a
    statement, rows into numpy.
    """
    if not ranges:
        return {}
    width = len(_SUMMARY_FIELDS)
    if connection.vendor == "postgresql":
        series = list(dict.fromkeys((run_id, key) for run_id, key, *_ in ranges))
        index = {sid: i for i, sid in enumerate(series)}
        values = ", ".join(f"coalesce(b.{name}::float8, 'NaN')" for name in _SUMMARY_FIELDS)
        # One aggregate per range, in a subquery: a GROUP BY over the join sorted 30,000 wide
        # rows (on disk, past work_mem) to group what the index scans already give in order.
        rows = _fetch(
            f"SELECT r.sid, (SELECT array_send(array_agg(ARRAY[{values}])) FROM {_table(MetricBlock)} b "
            "WHERE b.run_id = r.run_id AND b.key = r.key AND b.level = r.level "
            "AND b.block BETWEEN r.lo AND r.hi) "
            "FROM unnest(%s::int[], %s::bigint[], %s::varchar[], %s::smallint[], %s::bigint[], "
            "%s::bigint[]) AS r(sid, run_id, key, level, lo, hi)",
            [[index[(r[0], r[1])] for r in ranges], *(list(column) for column in zip(*ranges, strict=True))],
        )
        # array_send of a 2-D float8 array: ndim, flags, element type, then (size, lower bound)
        # per dimension (int32s: 28 bytes), then each element as (int32 length, 8 big-endian bytes).
        element = np.dtype([("length", ">i4"), ("value", ">f8")])
        tables: dict[SeriesId, list[np.ndarray]] = {}
        for sid, packed in rows:
            if packed is not None:  # None: no block in the range
                flat = np.frombuffer(bytes(packed), dtype=element, offset=28)["value"]
                tables.setdefault(series[sid], []).append(flat.astype(np.float64).reshape(-1, width))
        return {sid: np.concatenate(parts) for sid, parts in tables.items()}
    found: dict[SeriesId, list[tuple[Any, ...]]] = {}
    for start in range(0, len(ranges), 200):  # keep each statement's parameter count modest
        chunk = ranges[start : start + 200]
        where = " OR ".join(
            "(run_id = %s AND key = %s AND level = %s AND block BETWEEN %s AND %s)" for _ in chunk
        )
        for row in _fetch(
            f"SELECT run_id, key, {', '.join(_SUMMARY_FIELDS)} FROM {_table(MetricBlock)} WHERE {where}",
            [v for r in chunk for v in r],
        ):
            found.setdefault((row[0], row[1]), []).append(row[2:])
    return {sid: np.array(rows, dtype=np.float64).reshape(-1, width) for sid, rows in found.items()}


def _summary_table(blocks: np.ndarray | None, points: _Series | None) -> np.ndarray:
    """Block summaries (_block_tables) and single points as one (N, 13) float array.

    Steps are exact below 2**53. A point is the summary of one: n = 1 and itself as first, last,
    lowest and highest.
    """
    parts = [np.empty((0, len(_SUMMARY_FIELDS))) if blocks is None else blocks]
    if points is not None and len(points):
        single = np.column_stack([points.steps.astype(np.float64), points.epochs, points.values])
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
    points = points[unique]
    # Column by column (a 100-run compare makes 100,000 of these tuples: a Python loop per point
    # was a quarter of the request).
    values = points[:, 2].tolist()
    if np.isnan(points[:, 2]).any():
        values = [None if math.isnan(value) else value for value in values]
    return list(zip(points[:, 0].astype(np.int64).tolist(), points[:, 1].tolist(), values, strict=True))
