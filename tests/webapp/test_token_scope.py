"""Scoped, expiring tokens: a read token reads and streams but writes nothing, a team-bound token
sees one team, an expired or revoked token says why it is refused.

The routes are every app's API_ROUTES (tests/webapp/test_isolation.py reads the same lists and
fails when a route is missing from them), so a new write route is checked here without a word.
A POST that only reads is named in READ_POSTS and marked `reads_only` in its view.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from tests.webapp import test_isolation as isolation
from tests.webapp.test_isolation import API_ROUTES, _fill, _request, _route_id
from webapp.accounts.models import ApiToken, Role
from webapp.accounts.services.memberships import membership_add
from webapp.accounts.services.tokens import token_create, token_forget, token_revoke

# POSTs that change nothing: a read token may call them (each view marks its handler reads_only).
READ_POSTS = {
    ("post", "/api/graphs/validate/"),
    ("post", "/api/graphs/codegen/"),
    ("post", "/api/runs/{run}/predict/"),  # an inference is a read of the model
}
# Team A's objects for every placeholder (the isolation test's fixture).
team_a_world = isolation.team_a_world

WRITE_ROUTES = [route for route in API_ROUTES if route[0] != "get" and route not in READ_POSTS]
READ_ROUTES = [route for route in API_ROUTES if route[0] == "get"]


def bearer(raw: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


def error(response: Any) -> dict[str, Any]:
    return response.json()["error"]


@pytest.fixture
def read_a(user_a: Any) -> APIClient:
    """Team A's admin, signed in with a read token."""
    _, raw = token_create(user=user_a, name="read", scope="read")
    return bearer(raw)


def test_the_route_lists_hold_writes_and_read_posts() -> None:
    assert len(WRITE_ROUTES) > 20
    assert READ_POSTS <= set(API_ROUTES)


@pytest.mark.parametrize("route", WRITE_ROUTES, ids=_route_id)
def test_a_read_token_is_refused_every_write(route: Any, team_a_world: Any, read_a: APIClient) -> None:
    path = _fill(route[1], team_a_world["values"])
    response = _request(read_a, route[0], path, team_a_world["body"])
    assert response.status_code == 403, (route, response.status_code, response.content[:300])
    assert error(response)["code"] == "token_scope"
    assert error(response)["scope"] == "read"


@pytest.mark.parametrize("route", READ_ROUTES + sorted(READ_POSTS), ids=_route_id)
def test_a_read_token_reads(route: Any, team_a_world: Any, read_a: APIClient) -> None:
    path = _fill(route[1], team_a_world["values"])
    response = _request(read_a, route[0], path, team_a_world["body"])
    assert response.status_code not in (401, 403), (route, response.status_code, response.content[:300])
    assert response.status_code < 500, (route, response.content[:300])


def test_a_read_token_lists_and_heads(read_a: APIClient, team_a: Any, graph_a: Any) -> None:
    for path in ("/api/teams/", "/api/graphs/", "/api/runs/", "/api/auth/me/", f"/api/graphs/{graph_a.pk}/"):
        assert read_a.get(path).status_code == 200, path
    assert read_a.head("/api/graphs/").status_code == 200
    assert read_a.options("/api/graphs/").status_code == 200


def test_a_write_token_still_writes(api_a: APIClient, team_a: Any) -> None:
    made = api_a.post("/api/auth/tokens/", {"name": "more"}, format="json")
    assert made.status_code == 201, made.content
    assert made.json()["scope"] == "write" and made.json()["team"] is None


# --- team-bound tokens ------------------------------------------------------------------------


@pytest.fixture
def both_teams(user_a: Any, team_b: Any, graph_a: Any, valid_spec: Any) -> dict[str, Any]:
    """user_a in team A (admin) and team B (editor), with a graph in each."""
    from webapp.graphs.services import graph_create

    membership_add(team=team_b, user=user_a, role=Role.EDITOR)
    graph_b = graph_create(team=team_b, name="graph of B", spec=valid_spec, created_by=user_a)
    return {"graph_a": graph_a, "graph_b": graph_b, "team_b": team_b}


def test_a_team_bound_token_sees_one_team(user_a: Any, team_a: Any, both_teams: Any) -> None:
    _, raw = token_create(user=user_a, name="only A", team=team_a.pk)
    client = bearer(raw)
    team_b, graph_b = both_teams["team_b"], both_teams["graph_b"]

    teams = client.get("/api/teams/").json()
    assert [t["id"] for t in teams["results"]] == [team_a.pk]
    assert [t["id"] for t in client.get("/api/auth/me/").json()["teams"]] == [team_a.pk]
    assert client.get(f"/api/teams/{team_b.pk}/").status_code == 404
    assert client.get(f"/api/graphs/{graph_b.pk}/").status_code == 404
    assert client.get(f"/api/graphs/{both_teams['graph_a'].pk}/").status_code == 200
    assert {g["team"] for g in client.get("/api/graphs/").json()["results"]} == {team_a.pk}
    refused = client.post("/api/graphs/", {"team": team_b.pk, "name": "into B", "spec": graph_b.revisions.get().spec},
                          format="json")
    assert refused.status_code == 400 and "team" in error(refused)["fields"]
    # The same user's unbound token sees both teams.
    _, everything = token_create(user=user_a, name="all")
    assert len(bearer(everything).get("/api/teams/").json()["results"]) == 2


def test_a_team_bound_token_sees_one_teams_runs(user_a: Any, team_a: Any, both_teams: Any, dataset_a: Any,
                                                 revision_a: Any) -> None:
    from webapp.datasets.services import dataset_builtin_create
    from webapp.runs.models import Run, RunStatus

    team_b = both_teams["team_b"]
    data_b = dataset_builtin_create(team=team_b, name="data of B", builtin="iris", options={}, created_by=user_a)
    run_a = Run.objects.create(team=team_a, graph_revision=revision_a, dataset=dataset_a, config={},
                               created_by=user_a, status=RunStatus.SUCCEEDED)
    run_b = Run.objects.create(team=team_b, graph_revision=both_teams["graph_b"].revisions.get(), dataset=data_b,
                               config={}, created_by=user_a, status=RunStatus.SUCCEEDED)
    _, raw = token_create(user=user_a, name="only B", team=team_b.name)  # by name
    client = bearer(raw)
    assert [r["id"] for r in client.get("/api/runs/").json()["results"]] == [run_b.pk]
    assert client.get(f"/api/runs/{run_a.pk}/").status_code == 404  # the cached detail path too
    assert client.get(f"/api/runs/{run_b.pk}/").status_code == 200


def test_a_team_bound_token_loses_the_team_with_the_membership(user_a: Any, make_user: Any, team_a: Any) -> None:
    make_user("other-admin", team_a, Role.ADMIN)  # so that alice may leave
    _, raw = token_create(user=user_a, name="only A", team=team_a.pk, scope="read")
    client = bearer(raw)
    assert client.get(f"/api/teams/{team_a.pk}/").status_code == 200
    from webapp.accounts.services.memberships import membership_remove

    membership_remove(team=team_a, user=user_a)
    assert client.get(f"/api/teams/{team_a.pk}/").status_code == 404
    assert client.get("/api/teams/").json()["results"] == []


# --- creating scoped tokens -------------------------------------------------------------------


def test_creating_a_scoped_token(api_a: APIClient, team_a: Any) -> None:
    when = (timezone.now() + timedelta(days=30)).replace(microsecond=0)
    made = api_a.post("/api/auth/tokens/", {"name": "ci", "scope": "read", "team": team_a.pk,
                                           "expires_at": when.isoformat()}, format="json")
    assert made.status_code == 201, made.content
    body = made.json()
    assert (body["scope"], body["team"], body["team_name"]) == ("read", team_a.pk, "Team A")
    listed = {t["id"]: t for t in api_a.get("/api/auth/tokens/").json()["results"]}
    assert listed[body["id"]]["scope"] == "read" and listed[body["id"]]["expires_at"] is not None
    assert bearer(body["token"]).post("/api/teams/", {"name": "new"}, format="json").json()["error"]["code"] == (
        "token_scope")


@pytest.mark.parametrize(("body", "field"), [
    ({"expires_at": "2001-01-01T00:00:00Z"}, "expires_at"),
    ({"expires_at": "tomorrow"}, "expires_at"),
    ({"expires_at": "2999-01-01T00:00:00Z"}, "expires_at"),
    ({"expires_at": "2999-01-01T00:00:00Z", "expires_in_days": 3}, "expires_at"),
    ({"scope": "admin"}, "scope"),
    ({"team": 999999}, "team"),
    ({"team": "Team B"}, "team"),  # exists, but not one of alice's teams
    ({"team": True}, "team"),
])
def test_a_wrong_token_option_is_a_400_naming_it(api_a: APIClient, team_b: Any, body: dict[str, Any],
                                                  field: str) -> None:
    response = api_a.post("/api/auth/tokens/", {"name": "x", **body}, format="json")
    assert response.status_code == 400, response.content
    assert field in error(response)["fields"], error(response)


def test_a_team_bound_token_makes_tokens_of_its_team_only(user_a: Any, team_a: Any, both_teams: Any) -> None:
    _, raw = token_create(user=user_a, name="only A", team=team_a.pk)
    client = bearer(raw)
    refused = client.post("/api/auth/tokens/", {"team": both_teams["team_b"].pk}, format="json")
    assert refused.status_code == 400 and "team" in error(refused)["fields"]
    made = client.post("/api/auth/tokens/", {"name": "child"}, format="json")
    assert made.status_code == 201 and made.json()["team"] == team_a.pk
    # It lists (and may revoke) the tokens of its team only, and makes no new team.
    listed = client.get("/api/auth/tokens/").json()["results"]
    assert {t["team"] for t in listed} == {team_a.pk} and len(listed) == 2
    unbound, _ = token_create(user=user_a, name="everything")
    assert client.delete(f"/api/auth/tokens/{unbound.pk}/").status_code == 404
    refused = client.post("/api/teams/", {"name": "Team C"}, format="json")
    assert refused.status_code == 403 and error(refused)["code"] == "token_team"


def test_a_password_sign_in_makes_a_scoped_token(user_a: Any, team_a: Any) -> None:
    response = APIClient().post("/api/auth/token/", {"username": "alice", "password": "pw", "scope": "read",
                                                     "team": "team a", "expires_in_days": 1}, format="json")
    assert response.status_code == 201, response.content
    assert (response.json()["scope"], response.json()["team"]) == ("read", team_a.pk)
    assert bearer(response.json()["token"]).delete(f"/api/auth/tokens/{response.json()['id']}/").status_code == 403
    past = APIClient().post("/api/auth/token/", {"username": "alice", "password": "pw",
                                                 "expires_at": "2000-01-01T00:00Z"}, format="json")
    assert past.status_code == 400 and "expires_at" in error(past)["fields"]


# --- expired, revoked, unknown ----------------------------------------------------------------


def test_an_expired_token_is_a_401_saying_when(user_a: Any, team_a: Any) -> None:
    token, raw = token_create(user=user_a, name="short", expires_in_days=1)
    client = bearer(raw)
    assert client.get("/api/teams/").status_code == 200  # kept in the cache now
    ended = timezone.now() - timedelta(minutes=1)
    ApiToken.objects.filter(pk=token.pk).update(expires_at=ended)
    token_forget(digests=[token.token_hash])
    response = client.get("/api/teams/")
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert error(response)["code"] == "token_expired"
    assert error(response)["expires_at"] == ended.isoformat()
    assert "expired" in error(response)["message"]


def test_a_revoked_and_an_unknown_token_are_401(user_a: Any) -> None:
    token, raw = token_create(user=user_a, name="gone")
    token_revoke(token=token)
    revoked = bearer(raw).get("/api/teams/")
    assert revoked.status_code == 401 and error(revoked)["code"] == "token_revoked"
    unknown = bearer("nl_nothing").get("/api/teams/")
    assert unknown.status_code == 401 and error(unknown)["code"] == "authentication_failed"


def test_token_allows_for_the_model_server(user_a: Any, team_a: Any, team_b: Any) -> None:
    from webapp.accounts.selectors import token_allows

    read, _ = token_create(user=user_a, scope="read", team=team_a.pk)
    assert token_allows(read, method="GET", team_id=team_a.pk)
    assert token_allows(read, method="POST", team_id=team_a.pk, reads=True)  # POST /v2/models/x/infer
    assert not token_allows(read, method="POST", team_id=team_a.pk)
    assert not token_allows(read, method="GET", team_id=team_b.pk)
    assert token_allows(None, method="DELETE", team_id=team_b.pk)  # a session: roles decide


# --- streams ----------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_read_tokens_stream_opens_and_an_expired_ones_closes(user_a: Any, team_a: Any, revision_a: Any,
                                                                dataset_a: Any, team_b: Any) -> None:
    """Through the same middleware as the server (a token in `?token=`)."""
    from channels.db import database_sync_to_async
    from channels.routing import URLRouter
    from channels.testing import WebsocketCommunicator
    from django.db import connections

    from webapp.api.channels_auth import TokenAuthMiddlewareStack
    from webapp.runs.models import Run, RunStatus
    from webapp.runs.stream.routing import websocket_urlpatterns

    run = Run.objects.create(team=team_a, graph_revision=revision_a, dataset=dataset_a, config={},
                             created_by=user_a, status=RunStatus.SUCCEEDED)
    _, read = token_create(user=user_a, name="watch", scope="read")
    membership_add(team=team_b, user=user_a, role=Role.VIEWER)
    _, bound_b = token_create(user=user_a, name="B", scope="read", team=team_b.pk)
    expired, expired_raw = token_create(user=user_a, name="old", scope="read", expires_in_days=1)
    ApiToken.objects.filter(pk=expired.pk).update(expires_at=timezone.now() - timedelta(seconds=1))

    app = TokenAuthMiddlewareStack(URLRouter(websocket_urlpatterns))

    async def first(raw: str) -> dict[str, Any]:
        comm = WebsocketCommunicator(app, f"/ws/runs/{run.pk}/?token={raw}")
        connected, _ = await comm.connect()
        assert connected
        message = await comm.receive_output(timeout=5)
        await comm.disconnect()
        return message

    try:
        opened = asyncio.run(first(read))
        assert opened["type"] == "websocket.send" and '"state"' in opened["text"]
        assert asyncio.run(first(bound_b)) == {"type": "websocket.close", "code": 4404}
        assert asyncio.run(first(expired_raw)) == {"type": "websocket.close", "code": 4401}
    finally:
        asyncio.run(database_sync_to_async(connections.close_all)())


# --- one way to ask for a user's teams ----------------------------------------------------------

# Team lookups by user that bypass accounts.selectors.memberships_of would ignore a token's team.
BYPASSES = ("Membership.objects.filter(user=", "memberships__user=", "members=")
ALLOWED = {
    "webapp/accounts/selectors.py",  # memberships_of itself
    "webapp/accounts/services/tokens.py",  # a new token's team: checked against the bound one by hand
}


def test_every_team_lookup_goes_through_memberships_of() -> None:
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    found = []
    for path in sorted((root / "webapp").rglob("*.py")):
        name = path.relative_to(root).as_posix()
        if name in ALLOWED or "/migrations/" in name:
            continue
        text = path.read_text()
        found += [f"{name}: {needle}" for needle in BYPASSES if needle in text]
    assert not found, f"use accounts.selectors memberships_of/team_ids_for_user (a token's team): {found}"
