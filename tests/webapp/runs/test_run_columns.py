"""GET /api/runs/columns/: the metric names, config paths and graph parameters a team's runs have,
for the runs table's column picker and the filter's completion; scoped to the team and the filter."""

from __future__ import annotations

from typing import Any

import pytest

from webapp.graphs.services import revision_save
from webapp.runs.models import Checkpoint, Run, RunStatus
from webapp.runs.selectors import runs_columns

pytestmark = pytest.mark.django_db


@pytest.fixture
def runs(team_a: Any, user_a: Any, graph_a: Any, dataset_a: Any, valid_spec: dict[str, Any]) -> list[Run]:
    """Two runs with different metrics and configs over two revisions; a best checkpoint on one."""
    wide = {**valid_spec, "nodes": [dict(n) for n in valid_spec["nodes"]]}
    wide["nodes"][0] = {**wide["nodes"][0], "params": {"out_features": 64}}
    wide_rev, _ = revision_save(graph=graph_a, spec=wide, created_by=user_a)
    made = Run.objects.bulk_create([
        Run(team=team_a, graph_revision=graph_a.revisions.get(number=1), dataset=dataset_a, created_by=user_a,
            config={"epochs": 5, "optimizer": {"lr": 0.1}}, tags=["baseline"], status=RunStatus.SUCCEEDED,
            final_metrics={"val/accuracy": 0.9, "val/confusion_matrix": [[1, 0], [0, 1]]}),
        Run(team=team_a, graph_revision=wide_rev, dataset=dataset_a, created_by=user_a,
            config={"batch_size": 32}, status=RunStatus.FAILED, final_metrics={"test/loss": 0.3}),
    ])
    Checkpoint.objects.create(run=made[0], name="best", step=1, epoch=1, path="/nowhere", metrics={"val/f1": 0.5})
    return made


def test_the_names_of_the_teams_runs_come_sorted_by_kind(api_a: Any, team_a: Any, runs: list[Run]) -> None:
    answer = api_a.get("/api/runs/columns/", {"team": team_a.pk})
    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert body["metrics"] == ["test/loss", "val/accuracy"], "numbers only: a confusion matrix is no column"
    assert body["best"] == ["val/f1"]
    assert body["config"] == ["batch_size", "epochs", "optimizer.lr"]
    assert "nodes.fc1.out_features" in body["nodes"]
    assert body["sampled"] == 2 and body["complete"] is True


def test_the_filter_narrows_the_names(api_a: Any, team_a: Any, runs: list[Run]) -> None:
    body = api_a.get("/api/runs/columns/", {"team": team_a.pk, "filter": 'tags = "baseline"'}).json()
    assert body["metrics"] == ["val/accuracy"] and body["config"] == ["epochs", "optimizer.lr"]


def test_a_bad_filter_is_a_400_naming_its_column(api_a: Any, team_a: Any, runs: list[Run]) -> None:
    answer = api_a.get("/api/runs/columns/", {"team": team_a.pk, "filter": "metrics.val/accuracy >"})
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["code"] == "invalid_filter" and error["column"] == 23 and "filter" in error["fields"], error


def test_another_teams_runs_are_not_read(api_b: Any, runs: list[Run]) -> None:
    body = api_b.get("/api/runs/columns/").json()
    assert body["metrics"] == [] and body["config"] == [] and body["sampled"] == 0


def test_only_the_newest_sample_is_read(team_a: Any, runs: list[Run]) -> None:
    body = runs_columns(runs=Run.objects.filter(team=team_a), sample=1)
    assert body["sampled"] == 1 and body["complete"] is False
    assert body["config"] == ["batch_size"], "the newest run's"
