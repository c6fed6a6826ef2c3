"""The metric store: block summaries written with the points, long series read through them."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest

from webapp.metrics.models import MetricBlock, MetricChunk
from webapp.metrics.series import metric_series_read
from webapp.metrics.store import LEVELS, metric_blocks_rebuild
from webapp.runs.stream.events import events_record, events_since, flatten

pytestmark = pytest.mark.django_db(transaction=True)


def record(
    run_id: int, steps: range | list[int], value: Any, *, key: str = "train/loss", batch: int = 5000
) -> None:
    """Metric events through the recorder's write path, in batches like the recorder's."""
    steps = list(steps)
    for start in range(0, len(steps), batch):
        events = [
            {"type": "metric", "step": s, "epoch": s / 100, "values": {key: value(s)}}
            for s in steps[start : start + batch]
        ]
        events_record(run_id=run_id, events=events)


def stored(run_id: int, key: str = "train/loss") -> list[tuple[int, float, float | None]]:
    return metric_series_read(series=[(run_id, key)]).get((run_id, key), [])


def block_rows(run_id: int) -> list[tuple[Any, ...]]:
    return list(
        MetricBlock.objects.filter(run_id=run_id)
        .order_by("key", "level", "block")
        .values_list(
            "key",
            "level",
            "block",
            "n",
            "first_step",
            "last_step",
            "first_value",
            "last_value",
            "min_step",
            "min_value",
            "max_step",
            "max_value",
        )
    )


def chunk_rows(run_id: int) -> list[tuple[Any, ...]]:
    return [
        (key, block, bytes(steps), bytes(values), bytes(seqs), low, high)
        for key, block, steps, values, seqs, low, high in MetricChunk.objects.filter(run_id=run_id)
        .order_by("key", "block")
        .values_list("key", "block", "steps", "values", "seqs", "min_seq", "max_seq")
    ]


def wave(step: int) -> float:
    return math.sin(step / 500) + (step % 7) / 100


def test_overview_keeps_first_last_and_every_spike(api_a: Any, run_a: Any) -> None:
    spikes = {3_333: 50.0, 17_001: -40.0, 29_998: 60.0}
    record(run_a.pk, range(1, 40_001), lambda s: spikes.get(s, wave(s)))
    answer = api_a.get(f"/api/runs/{run_a.pk}/metrics/?keys=train/loss&max_points=200").json()
    series = answer["series"]["train/loss"]
    steps, values = series["step"], series["value"]
    assert len(steps) <= 200 and steps == sorted(steps) and len(set(steps)) == len(steps)
    assert steps[0] == 1 and steps[-1] == 40_000
    for step, value in spikes.items():
        assert steps[values.index(value)] == step
    # Every point shown is a stored point (no averages, no invented values).
    points = {s: (e, v) for s, e, v in stored(run_a.pk)}
    assert all(points[s] == (e, v) for s, e, v in zip(steps, series["epoch"], values, strict=True))
    # Each stretch of the series has its extremes on the chart: spread over the whole width.
    assert (
        len(steps) > 150
        and max(b - a for a, b in zip(steps, steps[1:], strict=False)) < 40_000 / 50
    )


def test_a_zoomed_window_returns_every_stored_point(api_a: Any, run_a: Any) -> None:
    record(run_a.pk, range(0, 20_000, 2), wave)
    url = f"/api/runs/{run_a.pk}/metrics/?keys=train/loss&max_points=500"
    window = api_a.get(url + "&from_step=5001&to_step=5999").json()["series"]["train/loss"]
    expected = [p for p in stored(run_a.pk) if 5001 <= p[0] <= 5999]
    assert len(expected) == 499
    assert list(zip(window["step"], window["epoch"], window["value"], strict=True)) == expected
    # A wider window is bucketed again, inside its bounds.
    wide = api_a.get(url + "&from_step=1000&to_step=9000").json()["series"]["train/loss"]
    assert len(wide["step"]) <= 500 and wide["step"][0] == 1000 and wide["step"][-1] == 9000
    # Nothing in a window past the end; the whole series when no window is given.
    assert api_a.get(url + "&from_step=50000").json()["series"] == {}
    full = api_a.get(f"/api/runs/{run_a.pk}/metrics/?keys=train/loss").json()["series"][
        "train/loss"
    ]
    assert len(full["step"]) == 10_000
    assert api_a.get(url + "&from_step=abc").status_code == 400


def test_redone_steps_replace_their_points_and_their_summaries(api_a: Any, run_a: Any) -> None:
    record(run_a.pk, range(1, 9_001), lambda s: 99.0 if s == 4_200 else wave(s))
    # Resume from step 4000: the redone steps get new values; the old spike at 4200 is gone.
    record(
        run_a.pk, range(4_000, 12_001), lambda s: -7.0 if s == 8_888 else wave(s) + 0.5, batch=3000
    )
    points = stored(run_a.pk)
    assert len(points) == 12_000 and 99.0 not in [v for _, _, v in points]
    written, chunks = block_rows(run_a.pk), chunk_rows(run_a.pk)
    metric_blocks_rebuild(run_id=run_a.pk)
    # What the batches kept equals a summary from scratch, and the points are what they were.
    assert block_rows(run_a.pk) == written and chunk_rows(run_a.pk) == chunks
    series = api_a.get(f"/api/runs/{run_a.pk}/metrics/?max_points=100").json()["series"][
        "train/loss"
    ]
    assert 99.0 not in series["value"] and -7.0 in series["value"]
    assert series["step"][0] == 1 and series["step"][-1] == 12_000


def test_nan_values_and_random_order_batches_summarise_like_a_rebuild(run_a: Any) -> None:
    rng = random.Random(7)
    steps = list(range(0, 70_000, 3))
    rng.shuffle(steps)
    record(
        run_a.pk, steps, lambda s: float("nan") if s % 11 == 0 else rng.uniform(-1, 1), batch=4000
    )
    record(run_a.pk, list(range(100, 200)), lambda s: float("nan"))  # a block of NaNs only
    written, chunks = block_rows(run_a.pk), chunk_rows(run_a.pk)
    assert {row[1] for row in written} == set(range(len(LEVELS)))
    metric_blocks_rebuild(run_id=run_a.pk)
    assert block_rows(run_a.pk) == written and chunk_rows(run_a.pk) == chunks


def test_replay_from_a_seq_still_rebuilds_metric_events(run_a: Any) -> None:
    base = type(run_a).objects.get(pk=run_a.pk).event_seq  # run_create's own status event
    events_record(
        run_id=run_a.pk,
        events=[
            {"type": "metric", "step": s, "epoch": 0.0, "values": {"a": float(s), "b": -float(s)}}
            for s in range(1, 301)
        ],
    )
    events_record(
        run_id=run_a.pk, events=[{"type": "metric", "step": 5, "epoch": 0.0, "values": {"a": 0.5}}]
    )
    replay = flatten(events_since(run_id=run_a.pk, since=base + 298))
    assert [(e["seq"] - base, e["step"], e["values"]) for e in replay] == [
        (299, 299, {"a": 299.0, "b": -299.0}),
        (300, 300, {"a": 300.0, "b": -300.0}),
        (301, 5, {"a": 0.5}),
    ]


def test_compare_answers_many_runs_in_one_request(
    api_a: Any, api_b: Any, run_a: Any, user_a: Any
) -> None:
    from webapp.runs.services import run_create

    other = run_create(
        user=user_a,
        team=run_a.team,
        graph_revision=run_a.graph_revision,
        dataset=run_a.dataset,
        config={"epochs": 2},
    )
    record(run_a.pk, range(1, 3001), wave)
    record(other.pk, range(1, 101), lambda s: float(s))
    answer = api_a.get(
        f"/api/runs/compare/?ids={other.pk},{run_a.pk}&keys=train/loss&max_points=50"
    )
    assert answer.status_code == 200
    runs = answer.json()["runs"]
    assert [r["run"] for r in runs] == [other.pk, run_a.pk]
    assert all(len(r["series"]["train/loss"]["step"]) <= 50 for r in runs)
    assert runs[1]["series"]["train/loss"]["step"][-1] == 3000 and runs[1]["last_seq"] >= 3000
    zoomed = api_a.get(
        f"/api/runs/compare/?ids={run_a.pk},{other.pk}&max_points=50&from_step=10&to_step=40"
    ).json()
    assert zoomed["runs"][0]["series"]["train/loss"]["step"] == list(range(10, 41))
    assert api_b.get(f"/api/runs/compare/?ids={run_a.pk},{other.pk}").status_code == 404
    assert api_a.get(f"/api/runs/compare/?ids={run_a.pk},999999").status_code == 404
    assert api_a.get("/api/runs/compare/?ids=x").status_code == 400
    assert api_a.get("/api/runs/compare/").status_code == 400


def test_any_window_is_exact_or_keeps_its_first_last_and_extremes(run_a: Any) -> None:
    from webapp.metrics.selectors import run_metric_series

    rng = random.Random(3)
    record(
        run_a.pk, range(0, 60_000, 2), lambda s: float("nan") if s % 97 == 0 else rng.gauss(0, 1)
    )
    points = stored(run_a.pk)
    for _ in range(25):
        lo = rng.randrange(-100, 60_000)
        hi = lo + rng.choice([50, 900, 2_500, 9_000, 70_000])
        max_points = rng.choice([10, 100, 1000])
        inside = [p for p in points if lo <= p[0] <= hi]
        got = run_metric_series(
            run=run_a, keys=["train/loss"], max_points=max_points, from_step=lo, to_step=hi
        )
        rows = list(zip(*got["train/loss"].values(), strict=True)) if inside else []
        if len(inside) <= max_points:
            assert rows == inside
            continue
        assert len(rows) <= max_points and set(rows) <= set(inside) and rows == sorted(rows)
        assert rows[0] == inside[0] and rows[-1] == inside[-1]
        finite = [p for p in inside if p[2] is not None]
        assert min(finite, key=lambda p: p[2]) in rows and max(finite, key=lambda p: p[2]) in rows


def test_a_replay_in_many_rounds_is_the_replay_in_one(run_a: Any, monkeypatch: Any) -> None:
    import webapp.runs.stream.events as events

    record(run_a.pk, range(1, 301), wave)
    record(run_a.pk, range(150, 161), lambda s: -1.0, key="val/loss")
    record(run_a.pk, range(100, 131), lambda s: 5.0)  # redone steps: their points move to new seqs
    whole = flatten(events_since(run_id=run_a.pk))
    monkeypatch.setattr(events, "REPLAY_ROUND", 7)  # rounds that cut through chunks
    rounds = flatten(events_since(run_id=run_a.pk, chunk=5))
    assert rounds == whole and [e["seq"] for e in rounds] == sorted({e["seq"] for e in whole})
