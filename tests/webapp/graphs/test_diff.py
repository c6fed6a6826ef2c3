"""GET /api/graphs/<id>/diff/?from=A&to=B: nodes added, removed and changed, edges, inputs, lines."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from webapp.graphs.schema import RevisionDiff
from webapp.graphs.selectors import revision_diff

pytestmark = pytest.mark.django_db


def save(api: Any, graph_id: int, spec: dict[str, Any]) -> int:
    response = api.post(f"/api/graphs/{graph_id}/revisions/", {"spec": spec}, format="json")
    assert response.status_code == 201, response.content
    return response.json()["number"]


def diff(api: Any, graph_id: int, query: str) -> Any:
    return api.get(f"/api/graphs/{graph_id}/diff/?{query}")


@pytest.fixture
def edited(valid_spec) -> dict[str, Any]:
    """valid_spec with fc1 wider, act removed, a dropout and a skip added, fc2 now a GELU'd Linear."""
    spec = copy.deepcopy(valid_spec)
    spec["nodes"] = [
        {"id": "fc1", "op": "Linear", "params": {"out_features": 32, "bias": False}, "inputs": ["x"]},
        {"id": "drop", "op": "Dropout", "params": {"p": 0.2}, "inputs": ["fc1"]},
        {"id": "fc2", "op": "Linear", "params": {"out_features": 3}, "inputs": ["drop"]},
    ]
    spec["layout"] = {"drop": {"x": 1, "y": 2}}
    return spec


def test_diff_names_added_removed_and_changed_nodes_and_edges(api_a, graph_a, edited):
    to = save(api_a, graph_a.id, edited)
    response = diff(api_a, graph_a.id, f"from=1&to={to}")
    assert response.status_code == 200
    body = response.json()
    RevisionDiff.model_validate(body)  # the documented shape, nothing more
    assert (body["graph"], body["from"], body["to"]) == (graph_a.id, 1, 2)
    assert body["nodes"]["added"] == [{"id": "drop", "op": "Dropout", "params": {"p": 0.2}}]
    assert body["nodes"]["removed"] == [{"id": "act", "op": "ReLU", "params": {}}]
    assert body["nodes"]["changed"] == [
        {
            "id": "fc1",
            "op": None,
            "params": [
                {"name": "bias", "from": None, "to": False},
                {"name": "out_features", "from": 16, "to": 32},
            ],
            "inputs": None,
        }
    ]
    assert body["edges"] == {
        "added": [{"source": "drop", "target": "fc2"}, {"source": "fc1", "target": "drop"}],
        "removed": [{"source": "act", "target": "fc2"}, {"source": "fc1", "target": "act"}],
    }
    assert body["inputs"] == {"added": [], "removed": [], "changed": []}
    assert body["outputs"] is None
    assert body["lines"] == [
        "node act removed",
        "node drop added",
        "fc1.bias: (default) -> false",
        "fc1.out_features: 16 -> 32",
        "edge act -> fc2 removed",
        "edge fc1 -> act removed",
        "edge drop -> fc2 added",
        "edge fc1 -> drop added",
    ]
    # One diff, two renderings: the runs compare view's lines are these.
    assert revision_diff(graph_a.revisions.get(number=1), graph_a.revisions.get(number=2)) == body["lines"]


def test_backwards_diff_swaps_added_and_removed(api_a, graph_a, edited):
    save(api_a, graph_a.id, edited)
    body = diff(api_a, graph_a.id, "from=2&to=1").json()
    assert [n["id"] for n in body["nodes"]["added"]] == ["act"]
    assert [n["id"] for n in body["nodes"]["removed"]] == ["drop"]
    assert body["nodes"]["changed"][0]["params"][1] == {"name": "out_features", "from": 32, "to": 16}


def test_op_change_inputs_ports_order_and_outputs(api_a, graph_a, valid_spec):
    spec = copy.deepcopy(valid_spec)
    spec["inputs"][0]["shape"] = [8]
    spec["nodes"] = [
        {"id": "fc1", "op": "Linear", "params": {"out_features": 16}, "inputs": ["x"]},
        {"id": "act", "op": "GELU", "inputs": ["fc1"]},
        {"id": "parts", "op": "Chunk", "params": {"chunks": 2, "dim": 1}, "inputs": ["act"]},
        {"id": "cat", "op": "Concat", "params": {"dim": 1}, "inputs": ["parts:0", "parts:1"]},
        {"id": "fc2", "op": "Linear", "params": {"out_features": 3}, "inputs": ["cat"]},
    ]
    save(api_a, graph_a.id, spec)
    swapped = copy.deepcopy(spec)
    swapped["nodes"][3]["inputs"] = ["parts:1", "parts:0"]
    swapped["outputs"] = ["fc2", "cat"]
    save(api_a, graph_a.id, swapped)

    first = diff(api_a, graph_a.id, "from=1&to=2").json()
    assert first["inputs"]["changed"] == [
        {"id": "x", "params": [{"name": "shape", "from": [4], "to": [8]}]}
    ]
    assert first["nodes"]["changed"] == [
        {"id": "act", "op": {"from": "ReLU", "to": "GELU"}, "params": [], "inputs": None}
    ]
    assert {"source": "parts:1", "target": "cat"} in first["edges"]["added"]
    assert "input x.shape: [4] -> [8]" in first["lines"] and "act.op: ReLU -> GELU" in first["lines"]

    second = diff(api_a, graph_a.id, "from=2&to=3").json()
    # The same wires read in another order: no edge added or removed, the node says so.
    assert second["edges"] == {"added": [], "removed": []}
    assert second["nodes"]["changed"] == [
        {"id": "cat", "op": None, "params": [],
         "inputs": {"from": ["parts:0", "parts:1"], "to": ["parts:1", "parts:0"]}}
    ]
    assert second["outputs"] == {"from": ["fc2"], "to": ["fc2", "cat"]}
    assert second["lines"] == [
        'cat.inputs: ["parts:0", "parts:1"] -> ["parts:1", "parts:0"]',
        'outputs: ["fc2"] -> ["fc2", "cat"]',
    ]


def test_a_wire_read_twice_counts_twice(api_a, graph_a, valid_spec):
    spec = copy.deepcopy(valid_spec)
    spec["nodes"].insert(2, {"id": "sum", "op": "Add", "inputs": ["act", "act"]})
    spec["nodes"][3]["inputs"] = ["sum"]
    save(api_a, graph_a.id, spec)
    once = copy.deepcopy(spec)
    once["nodes"][2]["inputs"] = ["act", "fc1"]
    save(api_a, graph_a.id, once)
    body = diff(api_a, graph_a.id, "from=2&to=3").json()
    assert body["edges"] == {
        "added": [{"source": "fc1", "target": "sum"}],
        "removed": [{"source": "act", "target": "sum"}],
    }
    assert body["nodes"]["changed"] == []


def test_layout_only_is_no_change_and_a_revision_against_itself_is_empty(api_a, graph_a, valid_spec):
    body = diff(api_a, graph_a.id, "from=1&to=1").json()
    assert body["lines"] == [] and body["nodes"] == {"added": [], "removed": [], "changed": []}
    moved = copy.deepcopy(valid_spec)
    moved["layout"] = {"fc1": {"x": 900, "y": 900}}
    moved["ui"] = {"zoom": 2}
    assert revision_diff(valid_spec, moved) == []


def test_viewers_may_read_a_diff(api_viewer_a, graph_a):
    assert diff(api_viewer_a, graph_a.id, "from=1&to=1").status_code == 200


def test_unknown_revision_is_a_404_naming_the_parameter(api_a, graph_a):
    response = diff(api_a, graph_a.id, "from=1&to=7")
    assert response.status_code == 404
    error = response.json()["error"]
    assert error["code"] == "not_found" and list(error["fields"]) == ["to"]
    assert "no revision 7" in error["message"]
    assert list(diff(api_a, graph_a.id, "from=9&to=1").json()["error"]["fields"]) == ["from"]


@pytest.mark.parametrize(
    ("query", "fields"),
    [
        ("", ["from", "to"]),
        ("from=1", ["to"]),
        ("to=1", ["from"]),
        ("from=one&to=1", ["from"]),
        ("from=1&to=-2", ["to"]),
        ("from=0&to=1.5", ["from", "to"]),
        ("from=99999999999999999999&to=1", ["from"]),
    ],
)
def test_bad_parameters_are_a_400_naming_them(api_a, graph_a, query, fields):
    response = diff(api_a, graph_a.id, query)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid" and sorted(error["fields"]) == fields


def test_another_teams_graph_is_a_404(api_b, graph_a):
    response = diff(api_b, graph_a.id, "from=1&to=1")
    assert response.status_code == 404
    assert diff(api_b, graph_a.id, "").status_code == 404  # not a 400 that says the graph exists


def test_the_diff_is_in_the_openapi_schema(api_a):
    schema = api_a.get("/api/schema/?format=json")
    if schema.status_code == 404:
        pytest.skip("no schema route")
    doc = schema.json()
    operation = doc["paths"]["/api/graphs/{id}/diff/"]["get"]
    assert {p["name"] for p in operation["parameters"]} >= {"from", "to"}
    assert operation["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].endswith("/RevisionDiff")
    save_409 = doc["paths"]["/api/graphs/{graph_pk}/revisions/"]["post"]["responses"]["409"]
    assert save_409["content"]["application/json"]["schema"]["$ref"].endswith("/StaleBaseError")
