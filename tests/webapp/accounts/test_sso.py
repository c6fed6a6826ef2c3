"""Single sign-on's own rules, without a provider: the team map, the account and memberships a
sign-in's claims give, the sign-in page's config, password sign-in switched off, and an
unreachable provider. The whole flow against a real provider: tests/e2e/test_oidc.py."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from webapp.accounts import oidc
from webapp.accounts.models import Membership, OidcIdentity, Role, Team
from webapp.accounts.services.memberships import membership_add
from webapp.accounts.services.sso import sso_sign_in
from webapp.accounts.services.teams import team_create
from webapp.errors import DomainError
from webapp.settings import oidc_team_map

ISSUER = "https://id.example.org"
TEAM_MAP = oidc_team_map("ml-team=Vision:editor,ml-admins=Vision:admin,ml-team=Audio:viewer")


def _sign_in(claims: dict, *, create_users: bool = True, team_map=TEAM_MAP):
    return sso_sign_in(issuer=ISSUER, claims=claims, groups_claim="groups", team_map=team_map,
                       create_users=create_users)


def _roles(user) -> dict[str, str]:
    return {m.team.name: m.role for m in Membership.objects.filter(user=user).select_related("team")}


def test_team_map_reads_both_forms():
    assert oidc_team_map("ml-team=Vision:editor, ml-admins=Vision:admin") == {
        "ml-team": [("Vision", "editor")], "ml-admins": [("Vision", "admin")]}
    assert oidc_team_map('{"ml": ["Vision:viewer", {"team": "Audio", "role": "Admin"}]}') == {
        "ml": [("Vision", "viewer"), ("Audio", "admin")]}
    # A team name may hold a colon: the role is what follows the last one.
    assert oidc_team_map("g=Team: one:viewer") == {"g": [("Team: one", "viewer")]}
    assert oidc_team_map("") == {}


@pytest.mark.parametrize("text, named", [
    ("ml-team=Vision:owner", "'ml-team'"), ("ml-team", "'ml-team'"), ("g=:editor", "'g'"),
    ("{not json", "not valid JSON"),
])
def test_a_bad_team_map_entry_is_named(text, named):
    with pytest.raises(RuntimeError, match="NETLOOM_OIDC_TEAM_MAP") as error:
        oidc_team_map(text)
    assert named in str(error.value)


@pytest.mark.django_db
def test_first_sign_in_creates_the_account_in_the_mapped_teams():
    user = _sign_in({"sub": "u-1", "preferred_username": "alice", "email": "alice@example.org",
                     "email_verified": True, "groups": ["ml-team", "other"]})
    assert user.username == "alice" and user.email == "alice@example.org"
    assert not user.has_usable_password()
    assert _roles(user) == {"Vision": "editor", "Audio": "viewer"}
    assert OidcIdentity.objects.get(user=user).subject == "u-1"
    # Again: the same account, found by (issuer, sub), not a second one.
    assert _sign_in({"sub": "u-1", "preferred_username": "alice", "groups": ["ml-team"]}) == user
    assert get_user_model().objects.count() == 1


@pytest.mark.django_db
def test_groups_set_the_role_at_every_sign_in_and_only_in_mapped_teams():
    other = team_create(name="Other")
    user = _sign_in({"sub": "u-2", "preferred_username": "bob", "groups": ["ml-team"]})
    membership_add(team=other, user=user, role=Role.EDITOR)  # given in the app, not by the map
    # The highest role the groups grant wins; a team no group grants any more is left.
    _sign_in({"sub": "u-2", "groups": ["ml-team", "ml-admins"]})
    assert _roles(user) == {"Vision": "admin", "Audio": "viewer", "Other": "editor"}
    colleague = _sign_in({"sub": "u-3", "preferred_username": "carol", "groups": ["ml-admins"]})
    _sign_in({"sub": "u-2", "groups": "ml-admins"})  # one group as a plain string
    assert _roles(user) == {"Vision": "admin", "Other": "editor"}
    _sign_in({"sub": "u-2", "groups": []})
    assert _roles(user) == {"Other": "editor"}
    assert _roles(colleague) == {"Vision": "admin"}


@pytest.mark.django_db
def test_the_last_admin_keeps_the_team_and_still_signs_in():
    user = _sign_in({"sub": "u-4", "preferred_username": "dora", "groups": ["ml-admins"]})
    again = _sign_in({"sub": "u-4", "groups": ["ml-team"]})
    assert again == user
    assert _roles(user)["Vision"] == "admin"


@pytest.mark.django_db
def test_a_verified_email_links_an_existing_account_and_an_unverified_one_does_not():
    User = get_user_model()
    existing = User.objects.create_user("erin", email="erin@example.org", password="pw-123456")
    taken = User.objects.create_user("frank", email="frank@example.org", password="pw-123456")
    linked = _sign_in({"sub": "u-5", "email": "ERIN@example.org", "email_verified": True})
    assert linked == existing and linked.has_usable_password()
    # An e-mail the provider did not verify matches nobody; the username "frank" is taken too.
    stranger = _sign_in({"sub": "u-6", "preferred_username": "frank", "email": "frank@example.org"})
    assert stranger != taken and stranger.username == "frank-2"


@pytest.mark.django_db
def test_no_account_is_created_when_creation_is_off():
    with pytest.raises(DomainError) as error:
        _sign_in({"sub": "u-7", "preferred_username": "gus", "groups": ["ml-team"]}, create_users=False)
    assert error.value.code == "sso_no_account"
    assert not get_user_model().objects.filter(username="gus").exists()
    assert not Team.objects.exists()  # nothing half-written


@pytest.mark.django_db
def test_a_disabled_account_and_a_missing_subject_are_refused():
    user = _sign_in({"sub": "u-8", "preferred_username": "hal"})
    user.is_active = False
    user.save()
    for claims, code in (({"sub": "u-8"}, "sso_inactive"), ({"email": "x@example.org"}, "sso_claims")):
        with pytest.raises(DomainError) as error:
            _sign_in(claims)
        assert error.value.code == code


@pytest.mark.django_db
def test_the_sign_in_page_learns_what_is_enabled(settings):
    config = APIClient().get("/api/auth/config/").json()
    assert config == {"password_sign_in": True, "sso": None}
    settings.NETLOOM_OIDC_ENABLED = True
    settings.NETLOOM_OIDC_NAME = "Keycloak"
    settings.NETLOOM_LOCAL_PASSWORDS = False
    config = APIClient().get("/api/auth/config/").json()
    assert config == {"password_sign_in": False,
                      "sso": {"name": "Keycloak", "login_url": "/auth/oidc/authenticate/"}}


@pytest.mark.django_db
def test_password_sign_in_off_is_a_403_naming_sso(settings):
    get_user_model().objects.create_user("ida", password="pw-123456")
    settings.NETLOOM_LOCAL_PASSWORDS = False
    settings.NETLOOM_OIDC_NAME = "Keycloak"
    client = APIClient(enforce_csrf_checks=True)
    client.get("/api/auth/csrf/")
    csrf = client.cookies["csrftoken"].value
    for path in ("/api/auth/login/", "/api/auth/token/"):
        response = client.post(path, {"username": "ida", "password": "pw-123456"}, format="json",
                                HTTP_X_CSRFTOKEN=csrf)
        assert response.status_code == 403, path
        error = response.json()["error"]
        assert error["code"] == "password_sign_in_off"
        assert "sign in with Keycloak" in error["message"]
    response = client.post("/admin/login/", {"username": "ida", "password": "pw-123456",
                                              "csrfmiddlewaretoken": csrf})
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "password_sign_in_off"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.django_db
def test_an_unreachable_provider_is_a_message_on_the_sign_in_page(settings):
    issuer = f"http://127.0.0.1:{_closed_port()}"
    settings.NETLOOM_OIDC_ENABLED = True
    settings.NETLOOM_OIDC_ISSUER = issuer
    settings.OIDC_TIMEOUT = 2
    with pytest.raises(oidc.ProviderUnavailable, match=f"{issuer}/.well-known/openid-configuration"):
        oidc.discovery()
    response = APIClient().get("/auth/oidc/authenticate/")
    assert response.status_code == 302
    assert response["Location"] == "/app/login?sso_error=sso_unavailable"
    assert [m.id for m in oidc.provider_reachable()] == ["netloom.E017"]


@pytest.mark.django_db
def test_sso_routes_are_absent_when_not_set_up():
    assert APIClient().get("/auth/oidc/authenticate/").status_code == 404
    assert APIClient().get("/auth/oidc/callback/?code=x&state=y").status_code == 404


@pytest.mark.parametrize("env, named", [
    ({"NETLOOM_OIDC_ISSUER": "https://id.example.org"}, "NETLOOM_OIDC_CLIENT_ID"),
    ({"NETLOOM_LOCAL_PASSWORDS": "0"}, "NETLOOM_LOCAL_PASSWORDS=0 without NETLOOM_OIDC_ISSUER"),
    ({"NETLOOM_OIDC_TEAM_MAP": "ml=Vision:owner"}, "NETLOOM_OIDC_TEAM_MAP"),
])
def test_a_setting_that_cannot_work_stops_the_start_with_its_name(env, named):
    clean = {k: v for k, v in os.environ.items() if not k.startswith("NETLOOM_OIDC_")}
    done = subprocess.run([sys.executable, "-c", "import webapp.settings"], env={**clean, **env},
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode != 0
    assert named in done.stderr
