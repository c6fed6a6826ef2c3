"""REST API of runs: creation checks, team scoping and roles, cancel, metrics, downloads."""

from __future__ import annotations

from typing import Any

import pytest

from webapp.runs.models import Run, RunStatus
from webapp.runs.stream.events import events_record


def test_create_fills_engine_defaults_and_queues(api_a: Any, run_body: dict[str, Any]) -> None:
    answer = api_a.post("/api/runs/", run_body, format="json")
    assert answer.status_code == 201, answer.json()
    run = answer.json()
    assert run["status"] == "queued" and run["revision"] == 1 and run["graph_name"] == "mlp"
    assert run["config"]["epochs"] == 2 and run["config"]["batch_size"] == 32
    assert run["recipe"]["source"]["name"] == "iris" and "split" in run["recipe"]
    assert run["progress"] == {"epoch": 0.0, "step": 0, "total_steps": None, "fraction": None, "eta_seconds": None}
    assert run["stream"] == f"/ws/runs/{run['id']}/" and run["last_seq"] == 1


def test_bad_config_is_refused_with_the_field_named(api_a: Any, run_body: dict[str, Any]) -> None:
    answer = api_a.post("/api/runs/", {**run_body, "config": {"epochs": 0, "optimizer": {"name": "lbfgs"}}}, format="json")
    assert answer.status_code == 400
    fields = answer.json()["error"]["fields"]
    assert "config.epochs" in fields and "config.optimizer.name" in fields
    assert not Run.objects.exists()


def test_a_graph_that_does_not_fit_the_dataset_is_refused_per_node(api_a: Any, graph_a: Any, dataset_a: Any, user_a: Any,
                                                                     valid_spec: dict[str, Any]) -> None:
    from webapp.graphs.services import revision_save

    spec = {**valid_spec, "nodes": [dict(n) for n in valid_spec["nodes"]]}
    spec["nodes"][2]["params"] = {"out_features": 5}
    spec["inputs"] = [{"id": "x", "shape": [4], "dtype": "float32"}]
    revision_save(graph=graph_a, spec=spec, created_by=user_a)
    answer = api_a.post("/api/runs/", {"graph": graph_a.pk, "revision": 2, "dataset": dataset_a.pk}, format="json")
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["code"] == "invalid_graph" and "graph.fc2" in error["fields"]
    assert "out_features=3" in error["fields"]["graph.fc2"][0]

    spec["nodes"][2]["params"] = {"out_features": 3}
    spec["inputs"] = [{"id": "x", "shape": [5], "dtype": "float32"}]
    revision_save(graph=graph_a, spec=spec, created_by=user_a)
    answer = api_a.post("/api/runs/", {"graph": graph_a.pk, "dataset": dataset_a.pk}, format="json")
    assert answer.status_code == 400 and "graph.x" in answer.json()["error"]["fields"]


def test_an_invalid_graph_reports_its_nodes(api_a: Any, graph_a: Any, dataset_a: Any, user_a: Any, broken_spec: dict[str, Any]) -> None:
    from webapp.graphs.services import revision_save

    revision_save(graph=graph_a, spec=broken_spec, created_by=user_a)
    answer = api_a.post("/api/runs/", {"graph": graph_a.pk, "revision": 2, "dataset": dataset_a.pk}, format="json")
    assert answer.status_code == 400
    assert any(e["node"] == "fc2" for e in answer.json()["error"]["errors"])


def test_missing_or_foreign_references_are_400_naming_the_field(api_a: Any, api_b: Any, run_body: dict[str, Any]) -> None:
    assert "graph" in api_a.post("/api/runs/", {"dataset": run_body["dataset"]}, format="json").json()["error"]["fields"]
    answer = api_a.post("/api/runs/", {**run_body, "revision": 9}, format="json")
    assert answer.status_code == 400 and "revision" in answer.json()["error"]["fields"]
    answer = api_b.post("/api/runs/", run_body, format="json")
    assert answer.status_code == 400 and "graph" in answer.json()["error"]["fields"]


def test_roles_and_teams(api_a: Any, api_viewer_a: Any, api_b: Any, anon: Any, run_a: Any, run_body: dict[str, Any]) -> None:
    assert api_viewer_a.get(f"/api/runs/{run_a.pk}/").status_code == 200
    assert api_viewer_a.post("/api/runs/", run_body, format="json").status_code == 403
    assert api_viewer_a.post(f"/api/runs/{run_a.pk}/cancel/").status_code == 403
    assert api_b.get(f"/api/runs/{run_a.pk}/").status_code == 404
    assert api_b.post(f"/api/runs/{run_a.pk}/cancel/").status_code == 404
    assert api_b.get("/api/runs/").json()["results"] == []
    assert anon.get("/api/runs/").status_code == 401
    assert [r["id"] for r in api_a.get("/api/runs/?status=queued").json()["results"]] == [run_a.pk]
    assert api_a.get("/api/runs/?status=running").json()["results"] == []


def test_cancel_of_a_queued_run_is_immediate(api_a: Any, run_a: Any) -> None:
    answer = api_a.post(f"/api/runs/{run_a.pk}/cancel/")
    assert answer.status_code == 200 and answer.json()["status"] == "cancelled"
    assert api_a.post(f"/api/runs/{run_a.pk}/cancel/").status_code == 409


def test_cancel_of_a_running_run_sets_the_flag(api_a: Any, run_a: Any) -> None:
    from webapp.runs.scheduling.leases import run_lease_take

    assert run_lease_take(run_id=run_a.pk, worker="w")
    answer = api_a.post(f"/api/runs/{run_a.pk}/cancel/")
    assert answer.status_code == 202
    assert answer.json()["status"] == "running" and answer.json()["cancel_requested"] is True


def test_metrics_downsampling_keeps_first_last_and_extremes(api_a: Any, run_a: Any) -> None:
    values = [float((i * 37) % 101) for i in range(1, 201)]
    values[120] = 1000.0  # a spike
    events_record(
        run_id=run_a.pk,
        events=[
            {"type": "metric", "step": i, "epoch": i / 10, "values": {"train/loss": v}}
            for i, v in enumerate(values, 1)
        ]
        + [{"type": "metric", "step": 10, "epoch": 1.0, "values": {"val/loss": 0.5}}],
    )
    full = api_a.get(f"/api/runs/{run_a.pk}/metrics/").json()["series"]
    assert set(full) == {"train/loss", "val/loss"} and len(full["train/loss"]["step"]) == 200
    series = api_a.get(f"/api/runs/{run_a.pk}/metrics/?keys=train/loss&max_points=20").json()["series"]
    assert list(series) == ["train/loss"]
    steps, kept = series["train/loss"]["step"], series["train/loss"]["value"]
    assert len(steps) <= 20 and steps[0] == 1 and steps[-1] == 200 and steps == sorted(steps)
    assert 1000.0 in kept and min(values) in kept
    assert api_a.get(f"/api/runs/{run_a.pk}/metrics/?max_points=1").status_code == 400


def test_downloads_and_explanations_need_a_succeeded_run(api_a: Any, run_a: Any) -> None:
    assert api_a.get(f"/api/runs/{run_a.pk}/export/?format=safetensors").status_code == 409
    assert api_a.get(f"/api/runs/{run_a.pk}/export/?format=exe").status_code == 400
    answer = api_a.post(f"/api/runs/{run_a.pk}/explanations/", {"index": 0, "method": "saliency"}, format="json")
    assert answer.status_code == 409
    assert api_a.get(f"/api/runs/{run_a.pk}/checkpoints/").json() == []


@pytest.mark.parametrize("body, field", [
    ({"method": "saliency"}, "index"),
    ({"index": 0, "input": [1, 2, 3, 4], "method": "saliency"}, "index"),
    ({"index": 0, "method": "astrology"}, "method"),
])
def test_explanation_requests_are_checked(api_a: Any, run_a: Any, body: dict[str, Any], field: str) -> None:
    Run.objects.filter(pk=run_a.pk).update(status=RunStatus.SUCCEEDED)
    answer = api_a.post(f"/api/runs/{run_a.pk}/explanations/", body, format="json")
    assert answer.status_code == 400 and field in answer.json()["error"]["fields"]
