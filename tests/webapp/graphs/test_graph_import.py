"""POST /api/graphs/import/: a spec file and its weights become a new graph in one step, or nothing.

The graphs page's import dialog sends both at once: weights refused for any reason (a key that
does not fit, not safetensors) leave no graph behind, so fixing the file and importing again
does not make a second graph of the same name.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from safetensors.torch import save

from .test_weights_import import imported, named  # noqa: F401 - a fixture and a helper

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def media(settings: Any, tmp_path: Any) -> Any:
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings


def send(api: Any, team: int, spec: Any, weights: bytes | None, name: str = "skip mlp") -> Any:
    form: dict[str, Any] = {"team": str(team), "name": name, "spec": json.dumps(spec)}
    if weights is not None:
        form["file"] = named(weights, "skip_mlp.safetensors")
    return api.post("/api/graphs/import/", form, format="multipart")


def graph_names(api: Any, team: int) -> list[str]:
    return [g["name"] for g in api.get(f"/api/graphs/?team={team}").json()["results"]]


def test_a_spec_and_its_weights_become_a_graph_and_an_import_run(media, api_a, team_a, imported):  # noqa: F811
    answer = send(api_a, team_a.id, imported["spec"], save(imported["weights"]))
    assert answer.status_code == 201, answer.content
    body = answer.json()
    assert body["name"] == "skip mlp" and body["revision"] == 1
    run = body["run"]
    assert run["origin"] == {"kind": "import", "file": "skip_mlp.safetensors"}
    assert run["graph"] == body["graph"] and run["revision"] == 1
    checkpoints = api_a.get(f"/api/runs/{run['id']}/checkpoints/").json()
    assert [c["name"] for c in checkpoints] == ["imported"]


def test_refused_weights_leave_no_graph_behind(media, api_a, team_a, imported):  # noqa: F811
    wrong = dict(imported["weights"])
    wrong.pop("head.weight")
    answer = send(api_a, team_a.id, imported["spec"], save(wrong))
    assert answer.status_code == 400, answer.content
    error = answer.json()["error"]
    assert error["code"] == "weights_mismatch" and list(error["fields"]) == ["file"]
    assert "head.weight" in error["message"]
    junk = send(api_a, team_a.id, imported["spec"], b"\x80\x04not safetensors at all")
    assert junk.status_code == 400 and list(junk.json()["error"]["fields"]) == ["file"]
    assert graph_names(api_a, team_a.id) == []
    # The fixed file, sent again: one graph.
    assert send(api_a, team_a.id, imported["spec"], save(imported["weights"])).status_code == 201
    assert graph_names(api_a, team_a.id) == ["skip mlp"]


def test_without_weights_it_is_a_graph_of_the_spec(media, api_a, team_a, imported):  # noqa: F811
    answer = send(api_a, team_a.id, imported["spec"], None, name="no weights")
    assert answer.status_code == 201, answer.content
    assert answer.json()["run"] is None
    assert graph_names(api_a, team_a.id) == ["no weights"]


def test_viewers_cannot_import(media, api_viewer_a, team_a, imported):  # noqa: F811
    answer = send(api_viewer_a, team_a.id, imported["spec"], save(imported["weights"]))
    assert answer.status_code == 403
