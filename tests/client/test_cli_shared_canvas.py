"""`netloom graphs shared|save-shared` against the real service (Django's live server): read the
shared canvas of a graph and save it as a revision."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pycrdt import Map

from netloom.cli import main

pytestmark = pytest.mark.django_db(transaction=True)

SPEC = {
    "version": 1,
    "inputs": [{"id": "x", "shape": [4], "dtype": "float32"}],
    "nodes": [{"id": "fc1", "op": "Linear", "params": {"out_features": 3}, "inputs": ["x"]}],
    "outputs": ["fc1"],
    "layout": {"x": {"x": 0, "y": 0}, "fc1": {"x": 0, "y": 100}},
}


@pytest.fixture
def graph(live_server: Any, settings: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> int:
    from django.contrib.auth import get_user_model

    from webapp.accounts.services import membership_add, team_create, token_create
    from webapp.graphs.services import graph_create

    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    team = team_create(name="Team A")
    user = get_user_model().objects.create_user(username="alice", password="pw")
    membership_add(team=team, user=user, role="editor")
    _, token = token_create(user=user, name="cli")
    monkeypatch.delenv("NETLOOM_CONFIG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("NETLOOM_URL", live_server.url)
    monkeypatch.setenv("NETLOOM_TOKEN", token)
    return graph_create(team=team, name="shared", spec=SPEC, created_by=user).pk


def run(capsys: Any, *argv: str) -> tuple[int, Any]:
    code = main(["--json", *argv])
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip() else None


def test_read_and_save_the_shared_canvas(graph: int, capsys: Any) -> None:
    from webapp.graphs.collab.services import collab_doc_load, collab_update_append

    code, state = run(capsys, "graphs", "shared", str(graph))
    assert code == 0 and state["base_revision"] == 1 and state["updates"] == 0
    assert state["spec"]["nodes"] == SPEC["nodes"]

    doc = collab_doc_load(graph_id=graph)  # someone in the room widens fc1
    before = doc.get_state()
    doc.get("nodes", type=Map)["fc1"]["params"]["out_features"] = 5
    collab_update_append(graph_id=graph, data=doc.get_update(before), user_id=None)

    code, revision = run(capsys, "graphs", "save-shared", str(graph), "-m", "wider")
    assert code == 0 and revision["number"] == 2 and revision["valid"] is True
    assert revision["spec"]["nodes"][0]["params"] == {"out_features": 5}
    code, again = run(capsys, "graphs", "save-shared", str(graph))
    assert code == 0 and again["number"] == 2  # nothing changed since: no new revision
