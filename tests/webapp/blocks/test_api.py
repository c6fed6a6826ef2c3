"""The team block library: /api/blocks/ and /api/blocks/<id>/versions/ (issue 16)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

pytestmark = pytest.mark.django_db


def dense(width: Any = None) -> dict[str, Any]:
    """A block: Linear(width) -> ReLU, exposing `width` (default 8)."""
    return {
        "params": [{"name": "width", "default": 8, "description": "output features"}],
        "inputs": [{"id": "x"}],
        "nodes": [
            {
                "id": "fc",
                "op": "Linear",
                "params": {"out_features": width or {"$param": "width"}},
                "inputs": ["x"],
            },
            {"id": "act", "op": "ReLU", "inputs": ["fc"]},
        ],
        "outputs": ["act"],
    }


def uses(op: str) -> dict[str, Any]:
    """A block made of one instance of block `op` followed by a GELU."""
    return {
        "inputs": [{"id": "x"}],
        "nodes": [
            {"id": "inner", "op": op, "inputs": ["x"]},
            {"id": "act", "op": "GELU", "inputs": ["inner"]},
        ],
        "outputs": ["act"],
    }


def create(api: Any, team: Any, name: str, definition: dict[str, Any], **extra: Any) -> Any:
    return api.post(
        "/api/blocks/",
        {"team": team.id, "name": name, "definition": definition, **extra},
        format="json",
    )


def test_a_block_is_created_with_version_1_named_by_the_server(api_a, team_a):
    definition = {**dense(), "name": "Whatever", "version": 7}
    response = create(
        api_a, team_a, "Dense", definition, description="a dense layer", input_shapes=[[4]]
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["name"], body["team"], body["description"]) == (
        "Dense",
        team_a.id,
        "a dense layer",
    )
    assert (body["latest_version"], body["versions"]) == (1, [1])
    assert body["latest"]["ref"] == "Dense@1"
    assert (body["latest"]["definition"]["name"], body["latest"]["definition"]["version"]) == (
        "Dense",
        1,
    )
    assert body["latest"]["dependencies"] == []
    assert body["interface"] == {
        "params": [{"name": "width", "default": 8, "description": "output features"}],
        "inputs": ["x"],
        "outputs": ["act"],
    }
    listed = api_a.get(f"/api/blocks/?team={team_a.id}").json()["results"]
    assert [(b["name"], b["latest_version"]) for b in listed] == [("Dense", 1)]
    assert api_a.get("/api/blocks/?team=abc").status_code == 400


def test_the_library_lists_the_block_with_the_newest_version_first(api_a, team_a):
    first = create(api_a, team_a, "First", dense()).json()
    assert create(api_a, team_a, "Second", dense()).status_code == 201
    names = [b["name"] for b in api_a.get("/api/blocks/").json()["results"]]
    assert names == ["Second", "First"]
    narrow = {**dense(), "params": [{"name": "width", "default": 2}]}
    answer = api_a.post(
        f"/api/blocks/{first['id']}/versions/", {"definition": narrow}, format="json"
    )
    assert answer.status_code == 201
    listed = api_a.get("/api/blocks/").json()["results"]
    assert [(b["name"], b["versions"]) for b in listed] == [("First", [2, 1]), ("Second", [1])]
    assert listed[0]["interface"]["params"][0]["default"] == 2  # the newest version's


def test_a_new_version_is_numbered_after_the_latest_and_readable(api_a, team_a):
    block = create(api_a, team_a, "Dense", dense()).json()
    wider = dense()
    wider["params"][0]["default"] = 32
    response = api_a.post(
        f"/api/blocks/{block['id']}/versions/",
        {"definition": wider, "note": "wider"},
        format="json",
    )
    assert response.status_code == 201, response.content
    assert (response.json()["number"], response.json()["ref"], response.json()["note"]) == (
        2,
        "Dense@2",
        "wider",
    )
    versions = api_a.get(f"/api/blocks/{block['id']}/versions/").json()["results"]
    assert [v["number"] for v in versions] == [2, 1]
    second = api_a.get(f"/api/blocks/{block['id']}/versions/2/").json()
    assert (
        second["definition"]["version"] == 2 and second["definition"]["params"][0]["default"] == 32
    )
    detail = api_a.get(f"/api/blocks/{block['id']}/").json()
    assert (detail["latest_version"], detail["versions"]) == (2, [2, 1])
    assert api_a.get(f"/api/blocks/{block['id']}/versions/3/").status_code == 404


def test_a_definition_with_errors_is_refused_naming_the_inner_node(api_a, team_a):
    definition = dense()
    definition["nodes"].append({"id": "mystery", "op": "NoSuchOp", "inputs": ["act"]})
    response = create(api_a, team_a, "Broken", definition)
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "invalid_block"
    assert "definition.nodes.mystery" in error["fields"]
    assert any(p["node"] == "mystery" for p in error["errors"])
    assert not api_a.get("/api/blocks/").json()["results"]  # nothing half-made


def test_an_undeclared_param_reference_is_refused(api_a, team_a):
    definition = dense()
    definition["nodes"][0]["params"]["out_features"] = {"$param": "channels"}
    response = create(api_a, team_a, "Dense", definition)
    assert response.status_code == 400
    assert "channels" in response.json()["error"]["message"]


def test_a_shape_error_shows_with_sample_input_shapes(api_a, team_a):
    definition = {
        "inputs": [{"id": "a"}, {"id": "b"}],
        "nodes": [{"id": "sum", "op": "Add", "inputs": ["a", "b"]}],
        "outputs": ["sum"],
    }
    assert create(api_a, team_a, "Sum", definition).status_code == 201  # structure alone is fine
    response = create(api_a, team_a, "Sum2", definition, input_shapes=[[4], [5]])
    assert response.status_code == 400, response.content
    assert "definition.nodes.sum" in response.json()["error"]["fields"]


def test_a_block_the_team_lacks_is_a_400_naming_the_op(api_a, team_a, api_b, team_b):
    assert create(api_b, team_b, "Dense", dense()).status_code == 201  # team B's, not A's
    response = create(api_a, team_a, "Outer", uses("Dense@1"))
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "unknown_block"
    assert "Dense@1" in error["message"]
    assert "definition.nodes.inner" in error["fields"]


def test_dependencies_are_the_transitive_closure_dependencies_first(api_a, team_a):
    assert create(api_a, team_a, "Dense", dense()).status_code == 201
    middle = create(api_a, team_a, "Middle", uses("Dense@1"))
    assert middle.status_code == 201, middle.content
    outer = create(api_a, team_a, "Outer", uses("Middle@1"), input_shapes=[[4]])
    assert outer.status_code == 201, outer.content
    version = api_a.get(f"/api/blocks/{outer.json()['id']}/versions/1/").json()
    assert [(d["name"], d["version"]) for d in version["dependencies"]] == [
        ("Dense", 1),
        ("Middle", 1),
    ]
    # Deleting a block the others use leaves their versions whole: they carry copies.
    dense_id = next(
        b["id"] for b in api_a.get("/api/blocks/").json()["results"] if b["name"] == "Dense"
    )
    assert api_a.delete(f"/api/blocks/{dense_id}/").status_code == 204
    again = api_a.get(f"/api/blocks/{outer.json()['id']}/versions/1/").json()
    assert again["dependencies"] == version["dependencies"]


def test_a_block_cannot_contain_itself(api_a, team_a):
    block = create(api_a, team_a, "Loop", dense()).json()
    # Version 2 places version 2: not saved yet, so not the team's; version 1 is fine (no cycle).
    response = api_a.post(
        f"/api/blocks/{block['id']}/versions/", {"definition": uses("Loop@2")}, format="json"
    )
    assert response.status_code == 400
    assert "Loop@2" in response.json()["error"]["message"]


def test_names_are_identifiers_and_unique_in_a_team(api_a, team_a, api_b, team_b):
    bad = create(api_a, team_a, "res block", dense())
    assert bad.status_code == 400 and "name" in bad.json()["error"]["fields"]
    assert create(api_a, team_a, "class", dense()).status_code == 400
    assert create(api_a, team_a, "Dense", dense()).status_code == 201
    taken = create(api_a, team_a, "Dense", dense())
    assert taken.status_code == 400 and "name" in taken.json()["error"]["fields"]
    assert create(api_b, team_b, "Dense", dense()).status_code == 201  # another team may


def test_not_a_block_definition_names_the_path(api_a, team_a):
    response = create(api_a, team_a, "Dense", {**dense(), "inputs": "x"})
    assert response.status_code == 400
    assert any(key.startswith("definition.inputs") for key in response.json()["error"]["fields"])
    assert create(api_a, team_a, "Dense", ["not", "an", "object"]).status_code == 400


def test_a_definition_larger_than_a_spec_may_be_is_refused(api_a, team_a, settings):
    settings.NETLOOM_MAX_SPEC_BYTES = 2000
    definition = dense()
    definition["description"] = "x" * 3000
    response = create(api_a, team_a, "Dense", definition)
    assert response.status_code == 400
    assert response.json()["error"]["fields"] == {
        "definition": [response.json()["error"]["message"]]
    }


def test_viewers_read_editors_write_other_teams_see_nothing(api_a, api_viewer_a, api_b, team_a):
    block = create(api_a, team_a, "Dense", dense()).json()
    assert api_viewer_a.get(f"/api/blocks/{block['id']}/versions/1/").status_code == 200
    assert create(api_viewer_a, team_a, "Other", dense()).status_code == 403
    assert (
        api_viewer_a.post(
            f"/api/blocks/{block['id']}/versions/", {"definition": dense()}, format="json"
        ).status_code
        == 403
    )
    assert (
        api_viewer_a.patch(
            f"/api/blocks/{block['id']}/", {"description": "x"}, format="json"
        ).status_code
        == 403
    )
    assert api_viewer_a.delete(f"/api/blocks/{block['id']}/").status_code == 403
    assert api_b.get(f"/api/blocks/{block['id']}/").status_code == 404
    assert api_b.get("/api/blocks/").json()["results"] == []
    changed = api_a.patch(
        f"/api/blocks/{block['id']}/", {"description": "now described"}, format="json"
    )
    assert changed.status_code == 200 and changed.json()["description"] == "now described"


def test_a_graph_saves_a_v2_spec_with_blocks_and_v1_specs_stay_as_they_were(
    api_a, team_a, valid_spec
):
    block = create(api_a, team_a, "Dense", dense()).json()
    definition = api_a.get(f"/api/blocks/{block['id']}/versions/1/").json()["definition"]
    spec = {
        "version": 2,
        "inputs": [{"id": "x", "shape": [4], "dtype": "float32"}],
        "blocks": [definition],
        "nodes": [
            {"id": "d1", "op": "Dense@1", "params": {"width": 16}, "inputs": ["x"]},
            {"id": "d2", "op": "Dense@1", "inputs": ["d1"]},
            {"id": "head", "op": "Linear", "params": {"out_features": 3}, "inputs": ["d2"]},
        ],
        "outputs": ["head"],
    }
    created = api_a.post(
        "/api/graphs/", {"team": team_a.id, "name": "blocks", "spec": spec}, format="json"
    )
    assert created.status_code == 201, created.content
    latest = created.json()["latest"]
    assert latest["valid"] and latest["spec"]["version"] == 2
    assert [b["name"] for b in latest["spec"]["blocks"]] == ["Dense"]
    plain = api_a.post(
        "/api/graphs/", {"team": team_a.id, "name": "plain", "spec": valid_spec}, format="json"
    )
    assert "blocks" not in plain.json()["latest"]["spec"]

    # Upgrading the instances to version 2 reads as op changes; the definitions as blocks added/removed.
    wider = dense()
    wider["params"][0]["default"] = 12
    second = api_a.post(
        f"/api/blocks/{block['id']}/versions/", {"definition": wider}, format="json"
    ).json()
    upgraded = copy.deepcopy(spec)
    upgraded["blocks"] = [second["definition"]]
    for node in upgraded["nodes"][:2]:
        node["op"] = "Dense@2"
    graph_id = created.json()["id"]
    saved = api_a.post(f"/api/graphs/{graph_id}/revisions/", {"spec": upgraded}, format="json")
    assert saved.status_code == 201, saved.content
    diff = api_a.get(f"/api/graphs/{graph_id}/diff/?from=1&to=2").json()
    changed = {c["id"]: c for c in diff["nodes"]["changed"]}
    assert changed["d1"]["op"] == {"from": "Dense@1", "to": "Dense@2"}
    assert changed["d2"]["op"] == {"from": "Dense@1", "to": "Dense@2"}
    assert diff["blocks"] == {"added": ["Dense@2"], "removed": ["Dense@1"], "changed": []}
    assert "d1.op: Dense@1 -> Dense@2" in diff["lines"]
    assert "block Dense@2 added" in diff["lines"]


def test_the_diff_says_what_changed_inside_a_definition_kept_under_one_ref():
    from webapp.graphs.selectors import revision_diff, spec_diff

    def spec(block: dict[str, Any]) -> dict[str, Any]:
        return {
            "version": 2,
            "inputs": [{"id": "x", "shape": [4]}],
            "blocks": [block],
            "nodes": [{"id": "d1", "op": "Dense@1", "inputs": ["x"]}],
            "outputs": ["d1"],
        }

    before = {**dense(), "name": "Dense", "version": 1, "layout": {"fc": {"x": 1, "y": 1}}}
    after = copy.deepcopy(before)
    after["params"][0]["default"] = 16
    after["nodes"][1]["op"] = "GELU"
    after["layout"] = {"fc": {"x": 9, "y": 9}}  # canvas only: never a change
    diff = spec_diff(spec(before), spec(after))
    assert diff["nodes"]["changed"] == []  # the instance itself is the same
    assert diff["blocks"]["changed"] == [
        {"ref": "Dense@1", "lines": ["param width default: 8 -> 16", "act.op: ReLU -> GELU"]}
    ]
    assert revision_diff(spec(before), spec(after)) == [
        "block Dense@1: param width default: 8 -> 16",
        "block Dense@1: act.op: ReLU -> GELU",
    ]
    moved = copy.deepcopy(before)
    moved["layout"] = {}
    assert revision_diff(spec(before), spec(moved)) == []
