"""`netloom audit` against the real service (Django's live server, a real database)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from netloom.cli import main
from netloom.client import Client
from tests.client.test_cli_against_the_service import service  # noqa: F401 - fixture

pytestmark = pytest.mark.django_db(transaction=True)


def test_audit_lists_filters_and_streams_json_lines(service: Any, capsys: Any, live_server: Any) -> None:  # noqa: F811
    from webapp.graphs.services import graph_create, graph_rename

    graph = graph_create(team=service.team, name="mlp", created_by=service.user)
    graph_rename(graph=graph, name="mlp-2", actor=service.user)
    team = str(service.team.pk)

    assert main(["audit", team, "--action", "graph."]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["AT", "ACTOR_NAME", "ACTION", "OBJECT", "CHANGE"]
    assert "graph.renamed" in lines[1] and 'name: "mlp" -> "mlp-2"' in lines[1] and "alice" in lines[1]
    assert "graph.created" in lines[2] and len(lines) == 3

    assert main(["audit", team, "--object", f"graph:{graph.pk}", "--jsonl"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["action"] for r in rows] == ["graph.renamed", "graph.created"]

    assert main(["audit", team, "--since", "yesterday"]) == 1
    assert "since" in capsys.readouterr().err

    import os

    entries = Client(live_server.url, os.environ["NETLOOM_TOKEN"]).audit(service.team.pk, action="member.")
    assert [e["action"] for e in entries] == ["member.added"] and entries[0]["actor_name"] == "system"
