"""GET /api/runs/?filter=&ordering=: runs found and ordered by what they achieved, on both databases.

The seeded runs vary in final metrics, best checkpoint, config, graph width and tags; every
expression's answer (ids and the page's `count`) is compared with the truth computed in Python.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from webapp.graphs.services import revision_save
from webapp.runs.models import Checkpoint, Run, RunStatus

pytestmark = pytest.mark.django_db


@pytest.fixture
def seeded(team_a: Any, user_a: Any, graph_a: Any, dataset_a: Any, valid_spec: dict[str, Any]) -> list[Run]:
    """40 runs over two revisions (fc1 16 or 64 wide); some without metrics, some tagged."""
    wide = {**valid_spec, "nodes": [dict(n) for n in valid_spec["nodes"]]}
    wide["nodes"][0] = {**wide["nodes"][0], "params": {"out_features": 64}}
    narrow_rev = graph_a.revisions.get(number=1)
    wide_rev, _ = revision_save(graph=graph_a, spec=wide, created_by=user_a)
    rng = random.Random(7)
    runs = []
    for i in range(40):
        metrics = {} if i % 9 == 0 else {"val/accuracy": round(rng.random(), 4), "val/loss": round(rng.random() * 2, 4)}
        runs.append(Run(
            team=team_a, graph_revision=wide_rev if i % 2 else narrow_rev, dataset=dataset_a, created_by=user_a,
            config={"epochs": 5 + i % 3, "optimizer": {"name": "adamw" if i % 4 else "sgd", "lr": [0.1, 0.01, 0.001][i % 3]}},
            final_metrics=metrics, tags=["baseline"] if i % 5 == 0 else ["sweep-3"] if i % 5 == 1 else [],
            status=RunStatus.SUCCEEDED if metrics else RunStatus.FAILED, name=f"run {i}",
        ))
    Run.objects.bulk_create(runs)
    made = list(Run.objects.filter(team=team_a).order_by("id"))
    for run in made[::3]:  # a best checkpoint on every third run
        if run.final_metrics:
            Checkpoint.objects.create(run=run, name="best", step=1, epoch=1, path="/nowhere",
                                      metrics={"val/accuracy": run.final_metrics["val/accuracy"] / 2})
    return made


def _all(api: Any, **params: str) -> tuple[list[int], int]:
    ids: list[int] = []
    page = api.get("/api/runs/", {**params, "page_size": "500"})
    assert page.status_code == 200, page.content
    body = page.json()
    ids += [r["id"] for r in body["results"]]
    return ids, body["count"]


def test_ordering_by_a_final_metric_puts_the_true_best_first_and_runs_without_it_last(api_a: Any, seeded: list[Run]) -> None:
    ids, count = _all(api_a, ordering="-metrics.val/accuracy")
    truth = sorted((r for r in seeded if r.final_metrics), key=lambda r: (-r.final_metrics["val/accuracy"], -r.pk))
    assert count == len(seeded)
    assert ids[: len(truth)] == [r.pk for r in truth]
    assert set(ids[len(truth):]) == {r.pk for r in seeded if not r.final_metrics}, "no metric: last"
    ascending, _ = _all(api_a, ordering="metrics.val/accuracy")
    assert ascending[: len(truth)] == [r.pk for r in sorted(truth, key=lambda r: (r.final_metrics["val/accuracy"], -r.pk))]


def test_ordering_by_config_graph_parameter_and_best_checkpoint(api_a: Any, seeded: list[Run]) -> None:
    ids, _ = _all(api_a, ordering="-config.optimizer.lr")
    lrs = [next(r for r in seeded if r.pk == i).config["optimizer"]["lr"] for i in ids]
    assert lrs == sorted(lrs, reverse=True)
    ids, _ = _all(api_a, ordering="-nodes.fc1.out_features")
    widths = [next(r for r in seeded if r.pk == i).graph_revision.spec["nodes"][0]["params"]["out_features"] for i in ids]
    assert widths == sorted(widths, reverse=True) and widths[0] == 64
    ids, _ = _all(api_a, ordering="-best.val/accuracy")
    best = {c.run_id: c.metrics["val/accuracy"] for c in Checkpoint.objects.filter(name="best")}
    assert ids[: len(best)] == sorted(best, key=lambda pk: (-best[pk], -pk))


@pytest.mark.parametrize("expression, truth", [
    ("metrics.val/accuracy > 0.5", lambda r: r.final_metrics.get("val/accuracy", -1) > 0.5),
    ('metrics.val/accuracy > 0.3 and config.optimizer.lr < 0.05 and tags = "baseline"',
     lambda r: r.final_metrics.get("val/accuracy", -1) > 0.3 and r.config["optimizer"]["lr"] < 0.05 and "baseline" in r.tags),
    ('not (status = "failed" or metrics.val/loss >= 1) and nodes.fc1.out_features = 64',
     lambda r: r.status != "failed" and not r.final_metrics.get("val/loss", 0) >= 1 and r.graph_revision.node_params["fc1"]["out_features"] == 64),
    ('config.optimizer.name = "sgd" or tags != "sweep-3"', lambda r: r.config["optimizer"]["name"] == "sgd" or "sweep-3" not in r.tags),
    ("metrics.val/accuracy = null", lambda r: not r.final_metrics),
    ('name ~ "run 1"', lambda r: "run 1" in r.name),
    ("nodes.fc1.out_features > 20 and config.optimizer.lr <= 0.01",
     lambda r: r.graph_revision.node_params["fc1"]["out_features"] > 20 and r.config["optimizer"]["lr"] <= 0.01),
    ("not metrics.val/loss < 1", lambda r: not r.final_metrics.get("val/loss", 9) < 1),
    ("best.val/accuracy >= 0.2", None),
])
def test_a_filter_finds_exactly_the_runs_it_describes_and_counts_them(
    api_a: Any, seeded: list[Run], expression: str, truth: Any
) -> None:
    if truth is None:
        best = {c.run_id: c.metrics["val/accuracy"] for c in Checkpoint.objects.filter(name="best")}
        expected = {pk for pk, value in best.items() if value >= 0.2}
    else:
        expected = {r.pk for r in seeded if truth(r)}
    ids, count = _all(api_a, filter=expression)
    assert set(ids) == expected and count == len(expected), expression
    assert expected, "each case selects something"


@pytest.mark.parametrize("expression, column, words", [
    ("metrics.val/accuracy >", 23, "ends too early"),
    ("metrics.val/accuracy > 0.9 and", 31, "ends too early"),
    ("metrics.val/accuracy >> 0.9", 23, "unexpected"),
    ("colour = 3", 1, "unknown field 'colour'"),
    ("status > 3 )", 12, "unexpected ')'"),
    ('tags < "x"', 1, "tags takes = or !="),
    ("created_at > \"yesterday\"", 1, "date or time"),
    ("metrics. > 1", 8, "unexpected character"),
    ("status = $", 10, "unexpected character '$'"),
])
def test_a_wrong_expression_is_a_400_that_points_at_its_column(
    api_a: Any, seeded: list[Run], expression: str, column: int, words: str
) -> None:
    answer = api_a.get("/api/runs/", {"filter": expression})
    assert answer.status_code == 400, answer.content
    error = answer.json()["error"]
    assert error["code"] == "invalid_filter" and words in error["message"], error
    assert error["column"] == column and f"column {column}" in error["fields"]["filter"][0], error


def test_an_unknown_ordering_names_the_choices_and_an_unknown_parameter_is_refused(api_a: Any, seeded: list[Run]) -> None:
    wrong = api_a.get("/api/runs/", {"ordering": "-colour"})
    assert wrong.status_code == 400 and "metrics.<name>" in wrong.json()["error"]["message"]
    typo = api_a.get("/api/runs/", {"filtre": "metrics.val/accuracy > 0.9"})
    assert typo.status_code == 400, "a misspelt parameter must not answer every run"
    assert "filtre" in typo.json()["error"]["message"] and "filter" in typo.json()["error"]["message"]


def test_another_teams_runs_stay_out_of_every_filter(api_b: Any, seeded: list[Run]) -> None:
    ids, count = _all(api_b, filter="metrics.val/accuracy >= 0")
    assert ids == [] and count == 0


@pytest.mark.parametrize("ordering, expression, index, walks_in_order", [
    ("-created_at", None, "run_team_created", True),
    ("-metrics.val/accuracy", None, "run_team_val_accuracy", True),
    ("metrics.val/loss", None, "run_team_val_loss", True),
    ("-metrics.val/accuracy", "metrics.val/accuracy > 0.5 and config.optimizer.lr < 0.05", "run_team_val_accuracy", True),
    ("-created_at", "metrics.val/accuracy > 0.5 and config.optimizer.lr < 0.05", "run_team_val_accuracy", False),
])
def test_a_teams_page_by_time_or_a_headline_metric_can_walk_its_index(
    team_a: Any, seeded: list[Run], ordering: str, expression: str | None, index: str, walks_in_order: bool
) -> None:
    """The page's ordering and a range on an indexed metric are the index's own expressions, their
    JSON paths written into the SQL (a bound path never matches an index on SQLite): the plan names
    the index (docs/decisions/0023-runs-expression-indexes.md). A plan, not a timing."""
    from django.db import connection

    from webapp.runs.selectors import runs_filter

    if connection.vendor == "postgresql":  # 40 rows: the planner would rather read and sort them all
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL enable_seqscan = off; SET LOCAL enable_sort = off")
    runs = runs_filter(Run.objects.filter(team=team_a), ordering=ordering, expression=expression)
    # The page when it walks in order; else what the exact count reads (its range).
    plan = runs[:50].explain() if walks_in_order else runs.order_by().explain()
    if walks_in_order or connection.vendor == "sqlite":
        assert index in plan, plan
    else:  # over 40 rows PostgreSQL's pick among equal-cost indexes is arbitrary: the range is the index's expression
        assert "(final_metrics -> 'val/accuracy'::text) > '0.5'::jsonb" in plan, plan
    if walks_in_order:
        assert "TEMP B-TREE" not in plan and "Sort" not in plan, plan


def test_a_filtered_page_by_the_metric_it_filters_on_is_in_order(api_a: Any, seeded: list[Run]) -> None:
    ids, count = _all(api_a, ordering="metrics.val/loss", filter="metrics.val/loss < 1.5 or status = \"failed\"")
    kept = [r for r in seeded if r.status == "failed" or r.final_metrics.get("val/loss", 9) < 1.5]
    truth = sorted((r for r in kept if r.final_metrics), key=lambda r: (r.final_metrics["val/loss"], -r.pk))
    assert count == len(kept) and ids[: len(truth)] == [r.pk for r in truth], "runs without it last (or)"
    ids, count = _all(api_a, ordering="metrics.val/loss", filter="metrics.val/loss < 1.5 and tags != \"x\"")
    assert ids == [r.pk for r in truth if r.final_metrics["val/loss"] < 1.5] and count == len(ids)
