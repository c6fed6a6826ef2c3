"""Migration 0007: points stored one row each move into chunks, and back, none lost or changed."""

from __future__ import annotations

import math
from typing import Any

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from webapp.metrics.models import MetricBlock
from webapp.metrics.series import metric_series_read
from webapp.runs.stream.events import events_record, events_since, flatten

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE, AFTER = [("runs", "0006_run_import")], [("runs", "0007_metric_blocks")]


def migrate(target: list[tuple[str, str]]) -> Any:
    executor = MigrationExecutor(connection)
    executor.migrate(target)
    return executor.loader.project_state(target).apps


@pytest.fixture(autouse=True)
def latest_schema_after() -> Any:
    """Every later migration applied again: the next test on this database needs today's tables."""
    yield
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())


def test_every_point_survives_the_move_into_chunks_and_back(run_a: Any) -> None:
    # Two keys, a NaN, a step redone later (a new seq), steps across many 64-step blocks.
    events_record(
        run_id=run_a.pk,
        events=[
            {
                "type": "metric",
                "step": s,
                "epoch": s / 50,
                "values": {
                    "train/loss": float("nan") if s == 77 else 1 / s,
                    **({"val/loss": -s} if s % 100 == 0 else {}),
                },
            }
            for s in range(1, 1001)
        ],
    )
    events_record(
        run_id=run_a.pk,
        events=[{"type": "metric", "step": 500, "epoch": 10.0, "values": {"train/loss": 42.0}}],
    )
    series = [(run_a.pk, "train/loss"), (run_a.pk, "val/loss")]
    points = metric_series_read(series=series)
    replay = [e for e in flatten(events_since(run_id=run_a.pk)) if e["type"] == "metric"]
    blocks = sorted(
        MetricBlock.objects.filter(run=run_a).values_list(
            "key", "level", "block", "n", "min_value", "max_value"
        )
    )
    assert points[series[0]][76][2] is None and points[series[0]][499][2] == 42.0

    old = migrate(BEFORE)
    rows = old.get_model("runs", "MetricPoint").objects.filter(run_id=run_a.pk)
    as_rows = {
        key: [
            (s, e, v)
            for s, e, v in rows.filter(key=key)
            .order_by("step")
            .values_list("step", "epoch", "value")
        ]
        for _, key in series
    }
    assert as_rows == {key: points[(run_a.pk, key)] for _, key in series}
    assert rows.get(key="train/loss", step=500).seq == replay[-1]["seq"]

    migrate(AFTER)
    assert metric_series_read(series=series) == points
    assert [e for e in flatten(events_since(run_id=run_a.pk)) if e["type"] == "metric"] == replay
    again = sorted(
        MetricBlock.objects.filter(run=run_a).values_list(
            "key", "level", "block", "n", "min_value", "max_value"
        )
    )
    assert again == blocks and not any(
        isinstance(v, float) and math.isnan(v) for row in again for v in row
    )
