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
        # The data it pins is the original's version, never "the latest".
        assert copy["dataset_version"] == original["dataset_version"] and copy["dataset_version"]["digest"]
        assert copy["config"] == original["config"] and copy["config"]["seed"] == original["config"]["seed"]
        assert copy["init"] == original["init"]
        assert copy["code_version"]["netloom"]
        from webapp.audit.models import AuditEntry

        created = AuditEntry.objects.get(action="run.created", object_id=str(copy["id"]))
        assert created.after["reproduces"] == original["id"]
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


def by_kind(answer: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [node for node in answer["nodes"] if node["kind"] == kind]


def test_the_lineage_of_a_fine_tuned_run_names_its_dataset_source_run_and_checkpoint(
    fine_tuned: Any, api_a: Any, api_b: Any, team_a: Any, dataset_a: Any, django_assert_max_num_queries: Any
) -> None:
    source, tuned = fine_tuned["source"], fine_tuned["tuned"]
    model = api_a.post("/api/models/", {"team": team_a.id, "name": "iris-net"}, format="json").json()
    version = api_a.post(f"/api/models/{model['id']}/versions/", {"run": tuned["id"]}, format="json")
    assert version.status_code == 201, version.content
    assert api_a.put(f"/api/models/{model['id']}/aliases/staging/", {"version": 1}, format="json").status_code == 200

    with django_assert_max_num_queries(40):
        answer = api_a.get(f"/api/runs/{tuned['id']}/lineage/")
    assert answer.status_code == 200, answer.content
    lineage = answer.json()
    ids = {node["id"] for node in lineage["nodes"]}
    edges = {(e["source"], e["target"], e["kind"]) for e in lineage["edges"]}
    assert lineage["root"] == f"run:{tuned['id']}" and not lineage["truncated"]
    (data,) = by_kind(lineage, "dataset")
    # The dataset version the run pinned, with its digest: the data is named by its bytes.
    pinned = dataset_a.versions.get(number=1)
    assert (data["data"]["name"], data["data"]["version"], data["data"]["digest"]) == (
        dataset_a.name, 1, pinned.digest) and len(pinned.digest) == 64
    # dataset -> source run -> its best checkpoint -> the fine-tuned run -> model version -> alias
    checkpoint = f"checkpoint:{source['id']}:best"
    assert {f"run:{source['id']}", checkpoint, f"run:{tuned['id']}"} <= ids
    assert (f"dataset:{dataset_a.id}@1", f"run:{source['id']}", "trained_on") in edges
    assert (f"run:{source['id']}", checkpoint, "checkpoint") in edges
    assert (checkpoint, f"run:{tuned['id']}", "finetune") in edges
    versions = by_kind(lineage, "model_version")
    assert [v["label"] for v in versions] == ["iris-net v1"]
    assert (versions[0]["id"], f"alias:{model['id']}:staging", "alias") in edges
    run_node = next(n for n in lineage["nodes"] if n["id"] == f"run:{tuned['id']}")
    assert run_node["data"]["seed"] == 11 and run_node["data"]["revision"] == 1
    assert run_node["data"]["init"] == {"run": source["id"], "checkpoint": "best", "mode": "finetune"}
    assert run_node["data"]["code_version"]["netloom"]

    # From the source run: its checkpoints and the fine-tune downstream.
    down = api_a.get(f"/api/runs/{source['id']}/lineage/?depth=1").json()
    assert (checkpoint, f"run:{tuned['id']}", "finetune") in {(e["source"], e["target"], e["kind"]) for e in down["edges"]}
    # From the model version: the same chain upstream.
    from_version = api_a.get(f"/api/models/{model['id']}/versions/1/lineage/").json()
    assert {f"run:{source['id']}", checkpoint, f"run:{tuned['id']}", f"dataset:{dataset_a.id}@1"} <= {
        n["id"] for n in from_version["nodes"]}

    assert api_b.get(f"/api/runs/{tuned['id']}/lineage/").status_code == 404
    assert api_b.get(f"/api/models/{model['id']}/versions/1/lineage/").status_code == 404
    bad = api_a.get(f"/api/runs/{tuned['id']}/lineage/?depth=0")
    assert bad.status_code == 400 and "depth" in bad.json()["error"]["fields"]


def test_a_source_run_of_another_team_never_appears(fine_tuned: Any, api_a: Any, team_b: Any) -> None:
    from webapp.runs.models import Run

    source, tuned = fine_tuned["source"], fine_tuned["tuned"]
    Run.objects.filter(pk=source["id"]).update(team=team_b)  # as if the fine-tune's source were team B's
    lineage = api_a.get(f"/api/runs/{tuned['id']}/lineage/").json()
    ids = {node["id"] for node in lineage["nodes"]}
    assert f"run:{tuned['id']}" in ids
    assert not any(i == f"run:{source['id']}" or i.startswith(f"checkpoint:{source['id']}:") for i in ids)
    assert all(e["source"] in ids and e["target"] in ids for e in lineage["edges"])
    assert api_a.get(f"/api/runs/{source['id']}/lineage/").status_code == 404
