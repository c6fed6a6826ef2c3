"""GET /api/datasets/<id>/versions/<n>/lineage/: which runs and models used this data.

Rows are made with the ORM (nothing here needs training): runs pinned to version 1 of a built-in,
a fine-tune of one of them pinned to version 2, a model version registered from the fine-tune with
an alias, a reproduction, and runs on version 2 only, which must not appear."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

pytestmark = pytest.mark.django_db


def pinned_run(source: Any, version: Any, name: str, **fields: Any) -> Any:
    from webapp.runs.models import Checkpoint, Run

    run = Run.objects.create(
        team=source.team,
        graph_revision=source.graph_revision,
        dataset=source.dataset,
        dataset_version=version,
        name=name,
        config=source.config,
        **fields,
    )
    Checkpoint.objects.create(run=run, name="best", step=5, epoch=1.0, path="/nowhere")
    return run


@pytest.fixture
def world(run_a: Any, dataset_a: Any, user_a: Any) -> dict[str, Any]:
    from webapp.datasets.models import DatasetVersion
    from webapp.registry.models import ModelAlias, ModelVersion, RegisteredModel
    from webapp.runs.models import Checkpoint

    v1 = dataset_a.versions.get(number=1)
    assert run_a.dataset_version_id == v1.pk
    v2 = DatasetVersion.objects.create(dataset=dataset_a, number=2, digest="b" * 64)
    Checkpoint.objects.create(run=run_a, name="best", step=10, epoch=1.0, path="/nowhere")
    sibling = pinned_run(run_a, v1, "sibling")
    tuned = pinned_run(
        run_a, v2, "tuned on v2", init={"run": run_a.pk, "checkpoint": "best", "mode": "finetune"}
    )
    again = pinned_run(run_a, v1, "again", reproduces=run_a)
    elsewhere = pinned_run(run_a, v2, "only v2")
    model = RegisteredModel.objects.create(team=run_a.team, name="iris-net", created_by=user_a)
    version = ModelVersion.objects.create(
        model=model, number=1, run=tuned, source={"run": tuned.pk, "checkpoint": "best"}
    )
    ModelAlias.objects.create(model=model, name="production", version=version)
    return {
        "v1": v1,
        "v2": v2,
        "run": run_a,
        "sibling": sibling,
        "tuned": tuned,
        "again": again,
        "elsewhere": elsewhere,
        "model": model,
        "version": version,
    }


def edges_of(answer: dict[str, Any]) -> set[tuple[str, str, str]]:
    return {(e["source"], e["target"], e["kind"]) for e in answer["edges"]}


def test_the_runs_and_models_that_used_a_dataset_version(
    world: dict[str, Any], api_a: Any, dataset_a: Any
) -> None:
    answer = api_a.get(f"/api/datasets/{dataset_a.pk}/versions/1/lineage/")
    assert answer.status_code == 200, answer.content
    lineage = answer.json()
    root = f"dataset:{dataset_a.pk}@1"
    run, sibling, tuned, again = (
        f"run:{world[k].pk}" for k in ("run", "sibling", "tuned", "again")
    )
    version, alias = f"model_version:{world['version'].pk}", f"alias:{world['model'].pk}:production"
    nodes = {n["id"]: n for n in lineage["nodes"]}
    assert lineage["root"] == root and not lineage["truncated"]
    # The start is the version itself, named by its digest (a built-in's: of its generated data).
    assert nodes[root]["kind"] == "dataset" and nodes[root]["label"] == "iris v1"
    assert (nodes[root]["data"]["version"], nodes[root]["data"]["digest"]) == (
        1,
        world["v1"].digest,
    )
    # Runs pinned to v1, the fine-tune of one of them (trained on v2), its model version and alias.
    assert {run, sibling, again, tuned, version, alias} <= set(nodes)
    assert f"run:{world['elsewhere'].pk}" not in nodes  # v2's own run never used v1
    edges = edges_of(lineage)
    assert {
        (root, run, "trained_on"),
        (root, sibling, "trained_on"),
        (root, again, "trained_on"),
    } <= edges
    checkpoint = f"checkpoint:{world['run'].pk}:best"
    assert {
        (run, checkpoint, "checkpoint"),
        (checkpoint, tuned, "finetune"),
        (run, again, "reproduced_by"),
        (f"checkpoint:{world['tuned'].pk}:best", version, "registered"),
        (version, alias, "alias"),
    } <= edges
    # The fine-tune names the data it trained on: version 2, drawn beside.
    assert (f"dataset:{dataset_a.pk}@2", tuned, "trained_on") in edges
    assert (root, tuned, "trained_on") not in edges
    assert nodes[version]["label"] == "iris-net v1"

    # Version 2: its own runs (the fine-tune and "only v2"); v1's runs are upstream, never walked.
    down = api_a.get(f"/api/datasets/{dataset_a.pk}/versions/2/lineage/").json()
    ids = {n["id"] for n in down["nodes"]}
    assert {tuned, f"run:{world['elsewhere'].pk}", version, alias} <= ids and sibling not in ids

    # depth bounds the hops between runs: at depth 1 the fine-tune's model is not reached... but the
    # pinned runs' own checkpoints are.
    shallow = api_a.get(f"/api/datasets/{dataset_a.pk}/versions/1/lineage/?depth=1").json()
    assert {run, checkpoint, tuned} <= {n["id"] for n in shallow["nodes"]}
    assert version not in {n["id"] for n in shallow["nodes"]}


def test_another_team_and_an_unknown_version_are_404(
    world: dict[str, Any], api_a: Any, api_b: Any, dataset_a: Any
) -> None:
    assert api_b.get(f"/api/datasets/{dataset_a.pk}/versions/1/lineage/").status_code == 404
    missing = api_a.get(f"/api/datasets/{dataset_a.pk}/versions/9/lineage/")
    assert missing.status_code == 404 and "no version 9" in missing.json()["error"]["message"]
    assert api_a.get("/api/datasets/999999/versions/1/lineage/").status_code == 404
    bad = api_a.get(f"/api/datasets/{dataset_a.pk}/versions/1/lineage/?depth=11")
    assert bad.status_code == 400 and "depth" in bad.json()["error"]["fields"]


def test_a_run_moved_to_another_team_is_left_out(
    world: dict[str, Any], api_a: Any, team_b: Any, dataset_a: Any
) -> None:
    from webapp.runs.models import Run

    Run.objects.filter(pk=world["tuned"].pk).update(team=team_b)
    answer = api_a.get(f"/api/datasets/{dataset_a.pk}/versions/1/lineage/").json()
    ids = {n["id"] for n in answer["nodes"]}
    assert (
        f"run:{world['tuned'].pk}" not in ids and f"model_version:{world['version'].pk}" not in ids
    )
    assert all(e["source"] in ids and e["target"] in ids for e in answer["edges"])


def queries(version: Any, team_id: int, **kwargs: Any) -> tuple[int, dict[str, Any]]:
    from webapp.registry.lineage import dataset_version_lineage

    with CaptureQueriesContext(connection) as captured:
        answer = dataset_version_lineage(version=version, team_id=team_id, **kwargs)
    return len(captured), answer


def test_the_queries_do_not_grow_with_the_runs_and_the_cap_cuts(
    world: dict[str, Any], dataset_a: Any
) -> None:
    from webapp.datasets.models import DatasetVersion

    v1 = DatasetVersion.objects.select_related("dataset").get(pk=world["v1"].pk)
    few, small = queries(v1, dataset_a.team_id)
    for i in range(40):
        pinned_run(
            world["run"],
            world["v1"],
            f"more {i}",
            init={"run": world["sibling"].pk, "checkpoint": "best"},
        )
    many, large = queries(v1, dataset_a.team_id)
    runs = [n for n in large["nodes"] if n["kind"] == "run"]
    assert len(runs) == len([n for n in small["nodes"] if n["kind"] == "run"]) + 40
    assert many == few <= 16, (
        few,
        many,
    )  # the pinned runs, then at most 5 per level (10 here at depth 3)
    assert not large["truncated"]

    _, cut = queries(v1, dataset_a.team_id, cap=20)
    assert len(cut["nodes"]) == 20 and cut["truncated"]
    assert cut["nodes"][0]["id"] == f"dataset:{dataset_a.pk}@1"  # the start is never cut
    ids = {n["id"] for n in cut["nodes"]}
    assert all(e["source"] in ids and e["target"] in ids for e in cut["edges"])
    _, few_runs = queries(v1, dataset_a.team_id, cap=5)
    assert len(few_runs["nodes"]) == 5 and few_runs["truncated"]
