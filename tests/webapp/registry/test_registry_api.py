"""The registry through its API: models, versions copied from runs, aliases moved with a history."""

from __future__ import annotations

import shutil
from typing import Any

import pytest
from safetensors.torch import load_file

from tests.webapp.runs.test_predict import csv_run, mlp, openapi, train_for_real  # noqa: F401
from webapp.runs.models import Checkpoint
from webapp.runs.selectors import run_export_dir

pytestmark = pytest.mark.django_db(transaction=True)


def _model(api: Any, team: Any, name: str = "flowers") -> dict[str, Any]:
    made = api.post("/api/models/", {"team": team.id, "name": name, "description": "iris"}, format="json")
    assert made.status_code == 201, made.content
    return made.json()


def test_register_two_versions_move_production_and_read_the_history(
    api_a: Any, make_user: Any, client_for: Any, team_a: Any, csv_run: Any  # noqa: F811
) -> None:
    run, _ = csv_run
    model = _model(api_a, team_a)
    first = api_a.post(f"/api/models/{model['id']}/versions/", {"run": run.pk, "note": "final"}, format="json")
    assert first.status_code == 201, first.content
    assert first.json()["number"] == 1 and first.json()["source"]["run"] == run.pk
    assert {"model.safetensors", "model.py", "export.json"} <= set(first.json()["files"])
    best = next(c.name for c in Checkpoint.objects.filter(run=run))
    second = api_a.post(f"/api/models/{model['id']}/versions/", {"run": run.pk, "checkpoint": best}, format="json")
    assert second.status_code == 201 and second.json()["number"] == 2
    assert second.json()["source"]["checkpoint"] == best

    # Deleting the run's files breaks nothing: the version has its own copy.
    shutil.rmtree(run_export_dir(run))
    weights = api_a.get(f"/api/models/{model['id']}/versions/1/download/?format=safetensors")
    assert weights.status_code == 200, weights.content
    assert weights["Content-Disposition"].endswith('flowers-v1-model.safetensors"')

    boss = api_a  # alice, the team's admin
    editor = client_for(make_user("ed", team_a, "editor"))
    editor_move = editor.put(f"/api/models/{model['id']}/aliases/production/", {"version": 1}, format="json")
    assert editor_move.status_code == 403 and editor_move.json()["error"]["code"] == "alias_guarded"
    assert editor.put(f"/api/models/{model['id']}/aliases/staging/", {"version": 2}, format="json").status_code == 200
    moved = boss.put(f"/api/models/{model['id']}/aliases/production/", {"version": 1, "note": "first"}, format="json")
    assert moved.status_code == 200 and moved.json()["aliases"] == {"production": 1, "staging": 2}
    again = boss.put(f"/api/models/{model['id']}/aliases/production/", {"version": 2, "note": "better"}, format="json")
    detail = again.json()
    assert detail["aliases"]["production"] == 2 and detail["latest_version"] == 2
    history = [(h["alias"], h["from_version"], h["to_version"], h["actor"], h["note"]) for h in detail["history"]]
    assert history == [("production", 1, 2, "alice", "better"), ("production", None, 1, "alice", "first"),
                       ("staging", None, 2, "ed", "")]
    assert [v["aliases"] for v in detail["versions"]] == [["production", "staging"], []]
    assert boss.delete(f"/api/models/{model['id']}/aliases/staging/?note=done").status_code == 204
    assert api_a.get(f"/api/models/{model['id']}/").json()["history"][0]["to_version"] is None


def test_a_version_needs_a_trained_run_of_the_team(api_a: Any, api_b: Any, team_a: Any, team_b: Any, run_a: Any) -> None:
    model = _model(api_a, team_a)
    queued = api_a.post(f"/api/models/{model['id']}/versions/", {"run": run_a.pk}, format="json")
    assert queued.status_code == 409 and queued.json()["error"]["code"] == "run_not_trained"
    other = _model(api_b, team_b, "theirs")
    foreign = api_b.post(f"/api/models/{other['id']}/versions/", {"run": run_a.pk}, format="json")
    assert foreign.status_code == 400 and "run" in foreign.json()["error"]["fields"]
    missing = api_a.post(f"/api/models/{model['id']}/versions/", {"run": run_a.pk, "checkpoint": "nope"}, format="json")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "checkpoint_missing"
    assert api_a.get(f"/api/models/{model['id']}/").json()["versions"] == []


def test_names_aliases_and_roles_are_checked(api_a: Any, api_viewer_a: Any, team_a: Any) -> None:
    model = _model(api_a, team_a)
    taken = api_a.post("/api/models/", {"team": team_a.id, "name": "flowers"}, format="json")
    assert taken.status_code == 400 and taken.json()["error"]["code"] == "name_taken"
    assert api_viewer_a.post("/api/models/", {"team": team_a.id, "name": "x"}, format="json").status_code == 403
    bad = api_a.put(f"/api/models/{model['id']}/aliases/Prod Uction/", {"version": 1}, format="json")
    assert bad.status_code == 400 and "alias" in bad.json()["error"]["fields"]
    none = api_a.put(f"/api/models/{model['id']}/aliases/staging/", {"version": 3}, format="json")
    assert none.status_code == 404 and none.json()["error"]["code"] == "version_missing"
    assert api_viewer_a.get(f"/api/models/{model['id']}/").status_code == 200


def test_the_weights_of_a_version_load_into_the_runs_graph(api_a: Any, team_a: Any, csv_run: Any) -> None:  # noqa: F811
    from engine.build import build

    run, _ = csv_run
    model = _model(api_a, team_a)
    api_a.post(f"/api/models/{model['id']}/versions/", {"run": run.pk}, format="json")
    answer = api_a.get(f"/api/models/{model['id']}/versions/1/download/?format=safetensors")
    path = run_export_dir(run).parent / "downloaded.safetensors"
    path.write_bytes(b"".join(answer.streaming_content))
    net = build(run.graph_revision.spec, seed=0)
    net.load_state_dict(load_file(path), strict=True)


def test_the_endpoint_is_null_until_a_version_is_production(api_a: Any, team_a: Any) -> None:
    """`endpoint` names the served URL of the default alias; a model with no production version has none."""
    model = _model(api_a, team_a, name="Iris classifier")
    detail = api_a.get(f"/api/models/{model['id']}/").json()
    assert detail["endpoint"] is None
