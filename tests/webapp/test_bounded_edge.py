"""Every value is bounded at the edge: what no column can hold or no page can show is a 400 naming it.

The parser (webapp/api/parsers.py) holds every JSON body to 64-bit integers, finite numbers and
strings the databases can encode; the shared fields (webapp/api/serializers.py) hold integers to
their column and names to visible text. Nothing refused is stored.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from webapp.graphs.models import Graph

pytestmark = pytest.mark.django_db

BIDI_OVERRIDE = "\u202e"  # RIGHT-TO-LEFT OVERRIDE: "fdp.exe" shows as "exe.pdf"


def _post(api: Any, path: str, raw: str, method: str = "post") -> Any:
    return getattr(api, method)(path, data=raw, content_type="application/json")


def _graph_body(team: Any, spec: dict[str, Any] | None = None, name: str = "g") -> dict[str, Any]:
    return {"team": team.pk, "name": name, **({"spec": spec} if spec is not None else {})}


@pytest.mark.parametrize(
    ("number", "what"),
    [(str(2**64), "64-bit"), (str(-(2**63) - 1), "64-bit"), ("1e400", "finite")],
    ids=["2^64", "-2^63-1", "1e400"],
)
def test_a_number_no_column_holds_is_refused_naming_its_path(api_a, team_a, valid_spec, number, what):
    body = json.dumps(_graph_body(team_a, valid_spec)).replace('"x": 100', f'"x": {number}')
    answer = _post(api_a, "/api/graphs/", body)
    assert answer.status_code == 400, answer.content
    error = answer.json()["error"]
    assert list(error["fields"]) == ["spec.layout.fc1.x"] and what in error["message"]
    assert not Graph.objects.exists()


def test_nan_and_infinity_tokens_are_refused(api_a, team_a):
    for token in ("NaN", "Infinity", "-Infinity"):
        answer = _post(api_a, "/api/graphs/", f'{{"team": {team_a.pk}, "name": "g", "spec": {{"x": {token}}}}}')
        assert answer.status_code == 400 and "not valid JSON" in answer.json()["error"]["message"]
    assert not Graph.objects.exists()


def test_half_a_surrogate_pair_is_refused_naming_its_path(api_a, team_a):
    answer = _post(api_a, "/api/graphs/", f'{{"team": {team_a.pk}, "name": "a\\ud800b"}}')
    assert answer.status_code == 400
    assert list(answer.json()["error"]["fields"]) == ["name"]
    assert not Graph.objects.exists()


def test_the_largest_64_bit_integer_is_still_a_number_the_api_takes(api_a, team_a, valid_spec):
    body = json.dumps(_graph_body(team_a, valid_spec)).replace('"x": 100', f'"x": {2**63 - 1}')
    answer = _post(api_a, "/api/graphs/", body)
    assert answer.status_code == 201, answer.content
    assert answer.json()["latest"]["spec"]["layout"]["fc1"]["x"] == 2**63 - 1


@pytest.mark.parametrize(
    "name",
    [f"invoice{BIDI_OVERRIDE}fdp.exe", "two\nlines", "tab\there", "bell\x07", "isolate\u2066x\u2069", "bom\ufeff"],
    ids=["rlo", "newline", "tab", "bell", "isolate", "bom"],
)
def test_a_name_with_control_or_bidi_characters_is_refused_everywhere(
    api_a, team_a, graph_a, dataset_a, name
):
    attempts = [
        ("post", "/api/graphs/", {"team": team_a.pk, "name": name}),
        ("patch", f"/api/graphs/{graph_a.pk}/", {"name": name}),
        ("post", "/api/datasets/", {"team": team_a.pk, "name": name, "builtin": "iris"}),
        ("patch", f"/api/datasets/{dataset_a.pk}/", {"name": name}),
        ("post", "/api/teams/", {"name": name}),
        ("post", "/api/auth/tokens/", {"name": name}),
    ]
    for method, path, body in attempts:
        answer = getattr(api_a, method)(path, body, format="json")
        assert answer.status_code == 400, (path, answer.content)
        error = answer.json()["error"]
        assert list(error["fields"]) == ["name"], (path, error)
        assert "U+" in error["message"], error
    graph_a.refresh_from_db()
    dataset_a.refresh_from_db()
    assert (graph_a.name, dataset_a.name) == ("mlp", "iris")
    assert Graph.objects.count() == 1


def test_names_in_any_script_with_joiners_and_emoji_are_kept(api_a, team_a):
    for name in ("Zürich café", "نموذج\u200cجديد", "模型 ✓", "family \U0001f468\u200d\U0001f469\u200d\U0001f467"):
        answer = api_a.post("/api/graphs/", {"team": team_a.pk, "name": name}, format="json")
        assert answer.status_code == 201, answer.content
        assert answer.json()["name"] == name


def test_a_spec_with_more_nodes_than_the_limit_is_refused_before_it_is_stored(api_a, team_a, graph_a, settings):
    settings.NETLOOM_MAX_NODES = 50
    nodes = [{"id": f"r{i}", "op": "ReLU", "inputs": [f"r{i - 1}" if i else "x"]} for i in range(51)]
    spec = {"version": 1, "inputs": [{"id": "x", "shape": [4]}], "nodes": nodes, "outputs": ["r50"]}
    for path in ("/api/graphs/", f"/api/graphs/{graph_a.pk}/revisions/"):
        answer = api_a.post(path, _graph_body(team_a, spec), format="json") if path == "/api/graphs/" else \
            api_a.post(path, {"spec": spec}, format="json")
        assert answer.status_code == 400, answer.content
        error = answer.json()["error"]
        assert error["code"] == "too_many_nodes" and list(error["fields"]) == ["spec.nodes"]
        assert "51 nodes" in error["message"] and "the limit is 50" in error["message"]
    assert Graph.objects.count() == 1 and graph_a.revisions.count() == 1


def test_a_spec_body_over_the_size_limit_is_a_413_and_nothing_is_stored(api_a, team_a, valid_spec, settings):
    settings.NETLOOM_MAX_SPEC_BYTES = 4096
    spec = {**valid_spec, "layout": {f"n{i}": {"x": i, "y": i} for i in range(4000)}}  # ~100 KB
    answer = api_a.post("/api/graphs/", _graph_body(team_a, spec), format="json")
    assert answer.status_code == 413, answer.content
    error = answer.json()["error"]
    assert error["code"] == "payload_too_large" and f"{4096 + 64 * 1024} bytes" in error["message"]
    assert not Graph.objects.exists()
    assert api_a.post("/api/graphs/", _graph_body(team_a, valid_spec), format="json").status_code == 201


def _request_bodies(schema: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(operation, body schema) of every request body, with $refs resolved one level at a time."""
    out = []
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            for media in operation.get("requestBody", {}).get("content", {}).values():
                out.append((f"{method.upper()} {path}", media["schema"]))
    return out


def _integers(node: Any, components: dict[str, Any], where: str, seen: set[str]) -> list[tuple[str, dict]]:
    if isinstance(node, dict):
        if "$ref" in node:
            name = node["$ref"].rsplit("/", 1)[-1]
            if name in seen:
                return []
            return _integers(components[name], components, where, seen | {name})
        found = [(where, node)] if node.get("type") == "integer" else []
        for key, child in node.items():
            if key == "properties":
                for prop, sub in child.items():
                    found += _integers(sub, components, f"{where}.{prop}", seen)
            elif key != "readOnly":
                found += _integers(child, components, where, seen)
        return found
    if isinstance(node, list):
        return [hit for child in node for hit in _integers(child, components, where, seen)]
    return []


def test_every_integer_a_request_body_takes_is_bounded_in_the_schema(api_a):
    schema = api_a.get("/api/schema/?format=json").json()
    components = schema["components"]["schemas"]
    unbounded = [
        (operation + where, prop)
        for operation, body in _request_bodies(schema)
        for where, prop in _integers(body, components, "", set())
        if not prop.get("readOnly")
        and not (-(2**63) <= prop.get("minimum", -(2**64)) and prop.get("maximum", 2**64) <= 2**63 - 1)
    ]
    assert not unbounded, unbounded
