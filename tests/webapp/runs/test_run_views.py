"""Saved views of the runs list (/api/run-views/): a team's named filter, ordering and columns."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.django_db


def test_an_editor_saves_a_view_that_opens_as_the_runs_list_and_a_teammate_reads_it(
    api_a: Any, api_viewer_a: Any, team_a: Any, run_a: Any
) -> None:
    made = api_a.post("/api/run-views/", {
        "team": team_a.id, "name": "best baselines", "filter": 'metrics.val/accuracy > 0.9 and tags = "baseline"',
        "ordering": "-metrics.val/accuracy", "columns": ["metrics.val/accuracy", "config.optimizer.lr"],
    }, format="json")  # fmt: skip
    assert made.status_code == 201, made.content
    view = made.json()
    listed = api_viewer_a.get("/api/run-views/", {"team": team_a.id}).json()["results"]
    assert [v["name"] for v in listed] == ["best baselines"] and listed[0]["columns"] == view["columns"]
    opened = api_viewer_a.get("/api/runs/", {"team": team_a.id, "filter": view["filter"], "ordering": view["ordering"]})
    assert opened.status_code == 200 and opened.json()["count"] == 0  # run_a has no metrics yet
    assert api_viewer_a.post("/api/run-views/", {"team": team_a.id, "name": "x"}, format="json").status_code == 403
    changed = api_a.patch(f"/api/run-views/{view['id']}/", {"filter": "status = \"queued\""}, format="json")
    assert changed.status_code == 200 and changed.json()["filter"] == 'status = "queued"'
    assert api_a.delete(f"/api/run-views/{view['id']}/").status_code == 204
    assert api_a.get("/api/run-views/").json()["count"] == 0


@pytest.mark.parametrize("body, field, words", [
    ({"filter": "metrics.val/accuracy >"}, "filter", "column 23"),
    ({"ordering": "-colour"}, "ordering", "One of created_at"),
    ({"columns": ["ok", "no spaces please"]}, "columns.1", "not a column key"),
])
def test_a_view_that_would_not_open_is_refused_naming_the_field(
    api_a: Any, team_a: Any, body: dict[str, Any], field: str, words: str
) -> None:
    answer = api_a.post("/api/run-views/", {"team": team_a.id, "name": "v", **body}, format="json")
    assert answer.status_code == 400, answer.content
    error = answer.json()["error"]
    assert field in error["fields"] and words in error["fields"][field][0], error
    assert api_a.get("/api/run-views/").json()["count"] == 0, "nothing stored"


def test_a_name_is_unique_in_its_team(api_a: Any, team_a: Any) -> None:
    first = api_a.post("/api/run-views/", {"team": team_a.id, "name": "mine"}, format="json")
    assert first.status_code == 201
    again = api_a.post("/api/run-views/", {"team": team_a.id, "name": "mine"}, format="json")
    assert again.status_code == 400 and again.json()["error"]["code"] == "name_taken"
