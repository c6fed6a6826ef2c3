"""The lineage walk's bounds: its queries do not grow with the number of runs it meets, and the node
cap cuts it (saying so). Rows are made with the ORM: nothing here needs training."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

pytestmark = pytest.mark.django_db


def family(run: Any, children: int) -> None:
    """`children` fine-tunes of `run`'s best checkpoint, each with two checkpoints of its own."""
    from webapp.runs.models import Checkpoint, Run

    Checkpoint.objects.create(run=run, name="best", step=10, epoch=1.0, path="/nowhere")
    for i in range(children):
        child = Run.objects.create(team=run.team, graph_revision=run.graph_revision, dataset=run.dataset,
                                   name=f"tune {i}", config=run.config, init={"run": run.pk, "checkpoint": "best",
                                                                             "mode": "finetune"})
        for name in ("best", "epoch-0001"):
            Checkpoint.objects.create(run=child, name=name, step=5, epoch=1.0, path="/nowhere")


def queries(run_id: int, team_id: int, **kwargs: Any) -> tuple[int, dict[str, Any]]:
    from webapp.registry.lineage import run_lineage

    with CaptureQueriesContext(connection) as captured:
        answer = run_lineage(run_id=run_id, team_id=team_id, **kwargs)
    assert answer is not None
    return len(captured), answer


def test_the_walk_reads_a_few_queries_per_level_whatever_the_width(run_a: Any) -> None:
    family(run_a, 3)
    few, small = queries(run_a.pk, run_a.team_id)
    assert len([n for n in small["nodes"] if n["kind"] == "run"]) == 4
    family_more = 40
    from webapp.runs.models import Checkpoint

    Checkpoint.objects.filter(run=run_a).delete()
    family(run_a, family_more)
    many, large = queries(run_a.pk, run_a.team_id)
    assert len([n for n in large["nodes"] if n["kind"] == "run"]) == 1 + 3 + family_more
    assert many == few <= 12, (few, many)  # 9 at depth 3, with 4 runs as with 44
    assert not large["truncated"]


def test_the_node_cap_cuts_the_walk_and_says_so(run_a: Any) -> None:
    family(run_a, 30)
    _, answer = queries(run_a.pk, run_a.team_id, cap=20)
    assert len(answer["nodes"]) == 20 and answer["truncated"]
    ids = {n["id"] for n in answer["nodes"]}
    assert all(e["source"] in ids and e["target"] in ids for e in answer["edges"])
