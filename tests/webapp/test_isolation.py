"""Team isolation over every API route: anonymous -> 401, another team's member -> 404, no leaks.

The route list is each app's `API_ROUTES` (method, path with {placeholders}) plus the listed
public routes; `test_every_api_route_is_covered` walks Django's URL resolver and fails when a
route or method exists that no list names, so a new endpoint cannot skip this check.

Placeholders are filled with team A's objects. An app whose routes need more objects (runs:
{run}, {explanation}) provides `tests/webapp/<app>/isolation.py` with

    def objects(*, team, user, dataset, revision) -> dict[str, object]

returning the placeholder values (created in team A, by `user`, from the given dataset and
graph revision).
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import re
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.test import APIClient

APPS = ["accounts", "datasets", "graphs", "blocks", "runs", "sweeps", "registry", "audit"]
MARKER = "secret-a"  # in the names of team A's objects: must never show up for team B
# Routes about the caller's own account or pure computation (no team data): team B may use them.
OWN_ROUTES = {
    ("post", "/api/auth/tokens/"),
    ("post", "/api/auth/logout/"),
    ("post", "/api/teams/"),
    ("post", "/api/graphs/validate/"),
    ("post", "/api/graphs/codegen/"),
}


def _app_lists(name: str) -> list[tuple[str, str]]:
    routes: list[tuple[str, str]] = []
    for module_name in [f"webapp.{app}.urls" for app in APPS] + ["webapp.urls"]:
        routes += list(getattr(importlib.import_module(module_name), name, []))
    return routes


API_ROUTES = _app_lists("API_ROUTES")
PUBLIC_ROUTES = _app_lists("PUBLIC_ROUTES")
PLACEHOLDER = re.compile(r"\{(\w+)\}")


def _route_id(route: tuple[str, str]) -> str:
    return f"{route[0].upper()} {route[1]}"


def _normalise(path: str) -> str:
    """'/api/graphs/{graph}/' and 'api/graphs/<int:pk>/' both become 'api/graphs/{}/'."""
    path = re.sub(r"\{\w+\}|<(?:\w+:)?\w+>|\(\?P<\w+>[^)]*\)", "{}", path)
    path = path.split("?")[0].replace("^", "").replace("$", "").lstrip("/")
    return path.replace("\\.", ".")


def _resolver_routes() -> set[tuple[str, str]]:
    """(method, normalised path) for every view under /api/, from the URL resolver."""
    found: set[tuple[str, str]] = set()

    def walk(patterns: list[Any], prefix: str) -> None:
        for entry in patterns:
            if isinstance(entry, URLResolver):
                walk(entry.url_patterns, prefix + str(entry.pattern))
            elif isinstance(entry, URLPattern):
                path = _normalise(prefix + str(entry.pattern))
                if not path.startswith("api/"):
                    continue
                callback = entry.callback
                actions = getattr(callback, "actions", None)
                if actions:
                    methods = set(actions) - {"head", "options"}
                else:
                    view_class = getattr(callback, "view_class", None) or getattr(
                        callback, "cls", None
                    )
                    methods = {
                        m
                        for m in ("get", "post", "put", "patch", "delete")
                        if view_class is not None and hasattr(view_class, m)
                    }
                for method in methods:
                    found.add((method, path))

    walk(get_resolver().url_patterns, "")
    return found


def test_every_api_route_is_covered():
    listed = {(m, _normalise(p)) for m, p in API_ROUTES + PUBLIC_ROUTES}
    missing = sorted(_resolver_routes() - listed)
    assert not missing, f"API routes without an isolation check (add them to API_ROUTES): {missing}"
    stale = sorted(listed - _resolver_routes())
    assert not stale, f"API_ROUTES names routes that do not exist: {stale}"


def _extra_objects(**base: Any) -> dict[str, Any]:
    objects: dict[str, Any] = {}
    for hook in sorted(Path(__file__).parent.glob("*/isolation.py")):
        spec = importlib.util.spec_from_file_location(f"isolation_{hook.parent.name}", hook)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        objects.update(module.objects(**base))
    return objects


@pytest.fixture
def team_a_world(team_a, user_a, make_user, client_for, valid_spec) -> dict[str, Any]:
    """Objects of team A (names carry MARKER) and the values of every placeholder."""
    from webapp.accounts.services.tokens import token_create
    from webapp.datasets.services import dataset_builtin_create
    from webapp.graphs.services import graph_create

    dataset = dataset_builtin_create(
        team=team_a, name=f"{MARKER} data", builtin="iris", options={}, created_by=user_a
    )
    graph = graph_create(team=team_a, name=f"{MARKER} graph", spec=valid_spec, created_by=user_a)
    revision = graph.revisions.get(number=1)
    token, _ = token_create(user=user_a, name=f"{MARKER} token")
    member = make_user(f"{MARKER}-member", team_a, "editor")
    values: dict[str, Any] = {
        "team": team_a.id,
        "member": member.id,
        "token": token.id,
        "dataset": dataset.id,
        "graph": graph.id,
        "revision": revision.number,
    }
    values.update(_extra_objects(team=team_a, user=user_a, dataset=dataset, revision=revision))
    body = {
        "team": team_a.id,
        "name": "made by team B",
        "builtin": "iris",
        "spec": valid_spec,
        "username": f"{MARKER}-member",
        "role": "viewer",
        "graph": graph.id,
        "graph_revision": revision.id,
        "revision": revision.id,
        "dataset": dataset.id,
        "layout": {},
    }
    return {"values": values, "body": body, "team": team_a}


def _fill(path: str, values: dict[str, Any]) -> str:
    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        assert name in values, (
            f"no team-A object for {{{name}}}: create one in a tests/webapp/<app>/isolation.py hook"
        )
        return str(values[name])

    return PLACEHOLDER.sub(value, path)


def _request(client: APIClient, method: str, path: str, body: dict[str, Any]) -> Any:
    if method == "get" or method == "delete":
        return getattr(client, method)(path)
    if path.split("?")[0].endswith("/upload/"):
        form = {
            "team": body["team"],
            "kind": "csv",
            "options": json.dumps({"target": "b"}),
            "file": SimpleUploadedFile("a.csv", b"a,b\n1,2\n3,4\n"),
        }
        return client.post(path, form, format="multipart")
    return getattr(client, method)(path, body, format="json")


def _team_ids(data: Any) -> set[Any]:
    if isinstance(data, dict):
        found = {data["team"]} if "team" in data else set()
        for value in data.values():
            found |= _team_ids(value)
        return found
    if isinstance(data, list):
        return set().union(*(_team_ids(v) for v in data)) if data else set()
    return set()


@pytest.mark.parametrize("route", API_ROUTES, ids=_route_id)
def test_route_is_closed_to_anonymous_and_other_teams(route, team_a_world, user_b, client_for):
    method, template = route
    path = _fill(template, team_a_world["values"])
    body = team_a_world["body"]

    anonymous = _request(APIClient(), method, path, body)
    assert anonymous.status_code == 401, (route, anonymous.status_code)
    assert set(anonymous.json()["error"]) >= {"code", "message", "fields"}

    outsider = _request(client_for(user_b), method, path, body)
    text = outsider.content.decode(errors="replace")
    assert outsider.status_code < 500, text
    assert MARKER not in text, f"{_route_id(route)} leaks team A's data to team B: {text[:300]}"
    if PLACEHOLDER.search(template):
        # A foreign object is indistinguishable from a missing one.
        assert outsider.status_code == 404, (route, outsider.status_code, text[:300])
    elif method == "get":
        assert outsider.status_code == 200, (route, outsider.status_code)
        assert team_a_world["team"].id not in _team_ids(outsider.json())
    elif route not in OWN_ROUTES:
        # Creating something in team A, or pointing at its objects, from team B.
        assert outsider.status_code in (400, 404), (route, outsider.status_code, text[:300])
        assert outsider.json()["error"]["code"] != "permission_denied"


@pytest.mark.parametrize("route", PUBLIC_ROUTES, ids=_route_id)
def test_public_routes_answer_anonymous_users(route, db):
    method, path = route
    response = _request(APIClient(), method, path, {})
    assert response.status_code != 401
    assert response.status_code < 500


ROUTES_WITH_IDS = [route for route in API_ROUTES if PLACEHOLDER.search(route[1].split("?")[0])]


@pytest.mark.parametrize("route", ROUTES_WITH_IDS, ids=_route_id)
@pytest.mark.parametrize("number", [0, 2**63, 10**20, "%C2%B2", "1%C2%B2"],
                         ids=["zero", "past-bigint", "twenty-digits", "superscript-two", "one-superscript-two"])
def test_an_id_no_row_can_have_is_a_404_on_every_route(route, number, team_a_world, user_a, client_for):
    """Every id in a path past a bigint column's range (SQLite cannot even bind it), below 1, or
    made of a digit int() refuses ("²" is a digit to str.isdigit: it was a 500 on the run detail)
    is an ordinary 404 with the error envelope, for the team's own member: never a 500."""
    method, template = route
    where, _, query = template.partition("?")  # a query's ids are checked as fields (400): not here
    path = PLACEHOLDER.sub(str(number), where) + ("?" + _fill(query, team_a_world["values"]) if query else "")
    response = _request(client_for(user_a), method, path, team_a_world["body"])
    assert response.status_code == 404, (route, response.status_code, response.content[:300])
    assert response.json()["error"]["code"] == "not_found"
