"""Accounts API: tokens, browser session with CSRF, the current user, teams and members."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone
from rest_framework.test import APIClient

from webapp.accounts.models import ApiToken, Membership, Role, Team

pytestmark = pytest.mark.django_db


def test_token_is_shown_once_and_authenticates(user_a):
    anon = APIClient()
    response = anon.post(
        "/api/auth/token/", {"username": "alice", "password": "pw", "name": "laptop"}, format="json"
    )
    assert response.status_code == 201
    raw = response.json()["token"]
    assert raw.startswith("nl_") and response.json()["prefix"] == raw[:11]

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert client.get("/api/auth/me/").json()["username"] == "alice"

    listed = client.get("/api/auth/tokens/").json()["results"]
    assert [t["name"] for t in listed] == ["laptop"]
    assert "token" not in listed[0]
    assert raw not in str(ApiToken.objects.values_list().get())  # only the hash is stored


def test_revoked_and_expired_tokens_get_401(user_a, client_for):
    client = client_for(user_a)
    token_id = client.get("/api/auth/tokens/").json()["results"][0]["id"]
    assert client.delete(f"/api/auth/tokens/{token_id}/").status_code == 204
    response = client.get("/api/auth/me/")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "token_revoked"

    client = client_for(user_a)
    ApiToken.objects.filter(revoked_at__isnull=True).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    expired = client.get("/api/auth/me/")
    assert expired.status_code == 401
    assert expired.json()["error"]["code"] == "token_expired"


def test_wrong_password_is_a_clear_400(user_a):
    response = APIClient().post(
        "/api/auth/token/", {"username": "alice", "password": "nope"}, format="json"
    )
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_credentials"


def test_anonymous_gets_401_with_an_authenticate_header(anon):
    response = anon.get("/api/graphs/")
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert response.json() == {
        "error": {
            "code": "not_authenticated",
            "message": "Authentication credentials were not provided.",
            "fields": {},
        }
    }


def test_cannot_revoke_someone_elses_token(user_a, user_b, client_for):
    theirs = client_for(user_b).get("/api/auth/tokens/").json()["results"][0]["id"]
    assert client_for(user_a).delete(f"/api/auth/tokens/{theirs}/").status_code == 404


def test_browser_session_needs_csrf_for_login_and_writes(user_a, team_a):
    browser = APIClient(enforce_csrf_checks=True)
    assert (
        browser.post(
            "/api/auth/login/", {"username": "alice", "password": "pw"}, format="json"
        ).status_code
        == 403
    )

    csrf = browser.get("/api/auth/csrf/")
    token = browser.cookies["csrftoken"].value
    assert csrf.status_code == 200
    login = browser.post(
        "/api/auth/login/",
        {"username": "alice", "password": "pw"},
        format="json",
        HTTP_X_CSRFTOKEN=token,
    )
    assert login.status_code == 200
    assert login.json()["teams"] == [{"id": team_a.id, "name": "Team A", "role": "admin"}]
    token = browser.cookies["csrftoken"].value  # rotated at login

    body = {"team": team_a.id, "name": "g"}
    assert browser.post("/api/graphs/", body, format="json").status_code == 403
    assert (
        browser.post("/api/graphs/", body, format="json", HTTP_X_CSRFTOKEN=token).status_code == 201
    )

    assert browser.post("/api/auth/logout/", HTTP_X_CSRFTOKEN=token).status_code == 204
    assert browser.get("/api/auth/me/").status_code == 401


def test_team_creator_becomes_admin_and_adds_members(api_a, user_a, make_user):
    response = api_a.post("/api/teams/", {"name": "Vision"}, format="json")
    assert response.status_code == 201
    team_id = response.json()["id"]
    assert response.json()["role"] == "admin"

    carol = make_user("carol")
    added = api_a.post(
        f"/api/teams/{team_id}/members/", {"username": "carol", "role": "editor"}, format="json"
    )
    assert added.status_code == 201
    assert added.json() == {"id": carol.id, "username": "carol", "role": "editor"}

    detail = api_a.get(f"/api/teams/{team_id}/").json()
    assert {m["username"]: m["role"] for m in detail["members"]} == {
        "alice": "admin",
        "carol": "editor",
    }
    assert [t["name"] for t in api_a.get("/api/teams/").json()["results"]] == ["Team A", "Vision"]


def test_only_team_admins_manage_members(api_viewer_a, team_a, user_a, make_user):
    make_user("carol")
    response = api_viewer_a.post(
        f"/api/teams/{team_a.id}/members/", {"username": "carol"}, format="json"
    )
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "permission_denied"
    assert api_viewer_a.delete(f"/api/teams/{team_a.id}/members/{user_a.id}/").status_code == 403


def test_last_admin_cannot_leave(api_a, team_a, user_a):
    response = api_a.delete(f"/api/teams/{team_a.id}/members/{user_a.id}/")
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "last_admin"
    assert Membership.objects.filter(team=team_a, user=user_a).exists()


def test_a_member_may_leave(api_viewer_a, team_a, viewer_a):
    assert api_viewer_a.delete(f"/api/teams/{team_a.id}/members/{viewer_a.id}/").status_code == 204
    assert api_viewer_a.get(f"/api/teams/{team_a.id}/").status_code == 404


def test_unknown_member_and_duplicate_team_are_field_errors(api_a, team_a):
    response = api_a.post(f"/api/teams/{team_a.id}/members/", {"username": "ghost"}, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["fields"] == {"username": ["No such user."]}
    response = api_a.post("/api/teams/", {"name": "team a"}, format="json")
    assert response.status_code == 400
    assert "name" in response.json()["error"]["fields"]


def test_createuser_and_demo_commands_are_idempotent(db, capsys):
    call_command("createuser", "erin", "--password", "s3cret", "--team", "Lab", "--role", "editor")
    call_command("createuser", "erin", "--password", "s3cret2", "--team", "Lab", "--role", "editor")
    assert Membership.objects.get(user__username="erin").role == Role.EDITOR

    call_command("demo")
    call_command("demo")
    assert "username demo / password demo" in capsys.readouterr().out
    assert Team.objects.filter(name="Demo").count() == 1
    assert Membership.objects.get(user__username="demo", team__name="Demo").role == Role.ADMIN
    token = APIClient().post(
        "/api/auth/token/", {"username": "demo", "password": "demo"}, format="json"
    )
    assert token.status_code == 201
