"""POST /api/runs/<id>/reproduce/ and the lineage of a fine-tuned run, trained for real.

A run (with dropout, so the RNG matters) is trained by the real runs.train task in process; a
fine-tune of its `best` checkpoint is trained too; each is reproduced through the API and the
reproduction trained: the exported safetensors hold the very same tensors (torch.equal) on CPU.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
from safetensors.torch import load

pytestmark = pytest.mark.django_db(transaction=True)

SPEC = {
    "version": 1,
    "inputs": [{"id": "x", "shape": [4], "dtype": "float32"}],
    "nodes": [
        {"id": "fc1", "op": "Linear", "params": {"out_features": 16}, "inputs": ["x"]},
        {"id": "act", "op": "ReLU", "inputs": ["fc1"]},
        {"id": "drop", "op": "Dropout", "params": {"p": 0.3}, "inputs": ["act"]},
        {"id": "fc2", "op": "Linear", "params": {"out_features": 3}, "inputs": ["drop"]},
    ],
    "outputs": ["fc2"],
}
CONFIG = {"device": "cpu", "epochs": 2, "batch_size": 16, "seed": 7, "log_every": 1}


@pytest.fixture
def runs_env(settings: Any, tmp_path: Any) -> Any:
    """Files in tmp, tasks queued to an in-memory broker (never Redis)."""
    from webapp.celery import app

    settings.MEDIA_ROOT = tmp_path / "media"
    settings.RUNS_LEASE_SECONDS = 30.0
    previous = app.conf.broker_url
    app.conf.broker_url = "memory://"
    app._pool = None
    yield settings
    app.conf.broker_url = previous
    app._pool = None


def trained(api: Any, run_id: int) -> dict[str, Any]:
    from workers.runs import train_run

    assert train_run(run_id) == "succeeded"
    run = api.get(f"/api/runs/{run_id}/").json()
    assert run["status"] == "succeeded", run["error"]
    return run


def weights(api: Any, run_id: int) -> dict[str, torch.Tensor]:
    answer = api.get(f"/api/runs/{run_id}/export/?format=safetensors")
    assert answer.status_code == 200, answer.content[:300]
    return load(b"".join(answer.streaming_content))


def assert_same(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> None:
    assert sorted(a) == sorted(b)
    for key in a:
        assert torch.equal(a[key], b[key]), key


@pytest.fixture
def fine_tuned(runs_env: Any, api_a: Any, team_a: Any, dataset_a: Any) -> dict[str, Any]:
    """{"graph", "source", "tuned"}: a trained run and a trained fine-tune of its best checkpoint."""
    graph = api_a.post("/api/graphs/", {"team": team_a.id, "name": "drop mlp", "spec": SPEC}, format="json").json()
    created = api_a.post("/api/runs/", {"graph": graph["id"], "dataset": dataset_a.id, "name": "base",
                                        "config": CONFIG}, format="json")
    assert created.status_code == 201, created.content
    source = trained(api_a, created.json()["id"])
    created = api_a.post("/api/runs/", {
        "graph": graph["id"], "dataset": dataset_a.id, "name": "tuned", "config": {**CONFIG, "seed": 11},
        "init": {"run": source["id"], "checkpoint": "best", "mode": "finetune"},
    }, format="json")
    assert created.status_code == 201, created.content
    return {"graph": graph, "source": source, "tuned": trained(api_a, created.json()["id"])}


def test_a_reproduction_trains_bit_identical_weights_on_cpu(fine_tuned: Any, api_a: Any) -> None:
    for original in (fine_tuned["source"], fine_tuned["tuned"]):
        answer = api_a.post(f"/api/runs/{original['id']}/reproduce/", {}, format="json")
        assert answer.status_code == 201, answer.content
        copy = answer.json()
        assert copy["status"] == "queued" and copy["reproduces"] == original["id"]
        assert copy["name"] == f"{original['name']} (reproduction)"
        assert (copy["graph_revision"], copy["dataset"]) == (original["graph_revision"], original["dataset"])
        assert copy["config"] == original["config"] and copy["config"]["seed"] == original["config"]["seed"]
        assert copy["init"] == original["init"]
        assert copy["code_version"]["netloom"]
        trained(api_a, copy["id"])
        assert_same(weights(api_a, original["id"]), weights(api_a, copy["id"]))


def test_deterministic_mode_is_recorded_and_trains_the_same_weights_on_cpu(fine_tuned: Any, api_a: Any) -> None:
    original = fine_tuned["source"]
    answer = api_a.post(f"/api/runs/{original['id']}/reproduce/", {"deterministic": True}, format="json")
    assert answer.status_code == 201, answer.content
    assert answer.json()["config"]["deterministic"] is True
    trained(api_a, answer.json()["id"])
    assert_same(weights(api_a, original["id"]), weights(api_a, answer.json()["id"]))


def test_reproduce_is_for_editors_of_the_runs_team(fine_tuned: Any, api_b: Any, client_for: Any,
                                                   viewer_a: Any) -> None:
    run_id = fine_tuned["source"]["id"]
    assert api_b.post(f"/api/runs/{run_id}/reproduce/", {}, format="json").status_code == 404
    assert client_for(viewer_a).post(f"/api/runs/{run_id}/reproduce/", {}, format="json").status_code == 403
    bad = client_for(viewer_a).post(f"/api/runs/{run_id}/reproduce/", {"seed": 3}, format="json")
    assert bad.status_code in (400, 403)
