"""Members and invitations through the API: invite, accept (new account or signed in), single
use, expiry, revoke; roles change at once; a team always keeps an admin; a removed member is out."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core import mail
from django.utils import timezone
from rest_framework.test import APIClient

from webapp.accounts.models import ApiToken, Invitation, Membership, Role

pytestmark = pytest.mark.django_db

STRONG = "a-long-enough-password"


def invite(api: APIClient, team_id: int, **body: str):
    return api.post(f"/api/teams/{team_id}/invitations/", body, format="json")


def test_admin_invites_by_email_and_the_link_is_mailed_once(api_a, team_a):
    response = invite(api_a, team_a.pk, email="new@example.org", role="editor")
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["token"].startswith("nli_")
    assert body["url"] == f"http://testserver/app/invitations/{body['token']}"
    assert body["state"] == "pending" and body["role"] == "editor" and body["mailed"] is True
    assert body["invited_by"] == "alice"
    assert len(mail.outbox) == 1 and mail.outbox[0].to == ["new@example.org"]
    assert body["url"] in mail.outbox[0].body and "Team A" in mail.outbox[0].subject
    # Only the hash is stored; the list never shows the secret.
    assert body["token"] not in str(Invitation.objects.values_list().get())
    listed = api_a.get(f"/api/teams/{team_a.pk}/invitations/").json()
    assert [i["id"] for i in listed] == [body["id"]] and "token" not in listed[0]
    expires = timezone.datetime.fromisoformat(body["expires_at"])
    assert timedelta(days=6, hours=23) < expires - timezone.now() <= timedelta(days=7)


def test_public_view_and_accept_with_a_new_account(api_a, team_a, anon):
    token = invite(api_a, team_a.pk, email="new@example.org", role="editor").json()["token"]
    shown = anon.get(f"/api/invitations/{token}/").json()
    assert shown["team"]["name"] == "Team A" and shown["role"] == "editor"
    assert shown["invited_by"] == "alice" and shown["valid"] is True

    accepted = anon.post(f"/api/invitations/{token}/accept/", {"username": "nora", "password": STRONG},
                         format="json")
    assert accepted.status_code == 201, accepted.content
    assert accepted.json()["team"]["id"] == team_a.pk and accepted.json()["role"] == "editor"
    assert Membership.objects.get(team=team_a, user__username="nora").role == Role.EDITOR

    # The new account signs in and sees the team.
    token_answer = anon.post("/api/auth/token/", {"username": "nora", "password": STRONG}, format="json")
    nora = APIClient()
    nora.credentials(HTTP_AUTHORIZATION=f"Bearer {token_answer.json()['token']}")
    assert nora.get(f"/api/teams/{team_a.pk}/").json()["role"] == "editor"

    # Twice: 410 with the reason; the page says why too.
    again = anon.post(f"/api/invitations/{token}/accept/", {"username": "nora2", "password": STRONG},
                      format="json")
    assert again.status_code == 410
    assert again.json()["error"]["code"] == "invitation_accepted"
    assert "already been used" in again.json()["error"]["message"]
    assert anon.get(f"/api/invitations/{token}/").json()["valid"] is False
    assert api_a.get(f"/api/teams/{team_a.pk}/invitations/").json() == []


def test_new_account_errors_name_the_field(api_a, team_a, anon):
    token = invite(api_a, team_a.pk, email="new@example.org").json()["token"]
    short = anon.post(f"/api/invitations/{token}/accept/", {"username": "nora", "password": "pw"},
                      format="json")
    assert short.status_code == 400
    assert "password" in short.json()["error"]["fields"]
    taken = anon.post(f"/api/invitations/{token}/accept/", {"username": "alice", "password": STRONG},
                      format="json")
    assert taken.status_code == 400 and "username" in taken.json()["error"]["fields"]
    nothing = anon.post(f"/api/invitations/{token}/accept/", {}, format="json")
    assert nothing.status_code == 400 and set(nothing.json()["error"]["fields"]) == {"username", "password"}
    assert not Membership.objects.filter(user__username="nora").exists()  # nothing half-made
    assert anon.get(f"/api/invitations/{token}/").json()["valid"] is True


def test_expired_and_revoked_invitations_are_410(api_a, team_a, anon):
    expired = invite(api_a, team_a.pk, email="late@example.org").json()
    Invitation.objects.filter(pk=expired["id"]).update(expires_at=timezone.now() - timedelta(seconds=1))
    response = anon.post(f"/api/invitations/{expired['token']}/accept/", {"username": "late", "password": STRONG},
                         format="json")
    assert response.status_code == 410 and response.json()["error"]["code"] == "invitation_expired"
    assert response.json()["error"]["reason"] == "expired"

    revoked = invite(api_a, team_a.pk, email="gone@example.org").json()
    assert api_a.delete(f"/api/teams/{team_a.pk}/invitations/{revoked['id']}/").status_code == 204
    response = anon.post(f"/api/invitations/{revoked['token']}/accept/", {"username": "gone", "password": STRONG},
                         format="json")
    assert response.status_code == 410 and response.json()["error"]["code"] == "invitation_revoked"
    assert anon.get(f"/api/invitations/{revoked['token']}/").json()["state"] == "revoked"
    assert anon.get("/api/invitations/nli_nothing/").status_code == 404


def test_accept_as_the_signed_in_user_and_by_username(api_a, team_a, user_b, client_for):
    created = invite(api_a, team_a.pk, username="bob", role="viewer").json()
    assert created["mailed"] is False  # bob has no e-mail address: the admin shares the link
    bob = client_for(user_b)
    accepted = bob.post(f"/api/invitations/{created['token']}/accept/", {}, format="json")
    assert accepted.status_code == 201, accepted.content
    assert accepted.json()["user"]["username"] == "bob"
    assert bob.get(f"/api/teams/{team_a.pk}/").json()["role"] == "viewer"


def test_an_invitation_by_username_is_for_that_user(api_a, team_a, make_user, client_for):
    make_user("carol")
    mallory = make_user("mallory")
    token = invite(api_a, team_a.pk, username="carol").json()["token"]
    response = client_for(mallory).post(f"/api/invitations/{token}/accept/", {}, format="json")
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "invitation_for_someone_else"


def test_inviting_a_member_is_409_and_bad_bodies_are_400(api_a, team_a, viewer_a):
    response = invite(api_a, team_a.pk, username="victor")
    assert response.status_code == 409 and response.json()["error"]["code"] == "already_member"
    assert "username" in response.json()["error"]["fields"]
    assert invite(api_a, team_a.pk, username="nobody").json()["error"]["fields"].keys() == {"username"}
    both = invite(api_a, team_a.pk, username="victor", email="v@example.org")
    assert both.status_code == 400 and "email" in both.json()["error"]["fields"]
    bad = invite(api_a, team_a.pk, email="not-an-address")
    assert bad.status_code == 400 and "email" in bad.json()["error"]["fields"]
    role = invite(api_a, team_a.pk, email="x@example.org", role="owner")
    assert role.status_code == 400 and "role" in role.json()["error"]["fields"]


def test_only_admins_invite_and_see_invitations(api_viewer_a, team_a, api_b):
    assert invite(api_viewer_a, team_a.pk, email="x@example.org").status_code == 403
    assert api_viewer_a.get(f"/api/teams/{team_a.pk}/invitations/").status_code == 403
    assert invite(api_b, team_a.pk, email="x@example.org").status_code == 404


def test_demotion_takes_effect_at_once(api_a, team_a, make_user, client_for):
    eve = make_user("eve", team_a, Role.EDITOR)
    api_eve = client_for(eve)
    assert api_eve.post("/api/graphs/", {"team": team_a.pk, "name": "before"}, format="json").status_code == 201
    changed = api_a.patch(f"/api/teams/{team_a.pk}/members/{eve.pk}/", {"role": "viewer"}, format="json")
    assert changed.status_code == 200 and changed.json() == {"id": eve.pk, "username": "eve", "role": "viewer"}
    denied = api_eve.post("/api/graphs/", {"team": team_a.pk, "name": "after"}, format="json")
    assert denied.status_code == 403
    assert api_eve.get("/api/graphs/").status_code == 200  # a viewer still reads


def test_the_last_admin_cannot_be_demoted_or_removed(api_a, team_a, user_a, make_user, client_for):
    for response in (
        api_a.patch(f"/api/teams/{team_a.pk}/members/{user_a.pk}/", {"role": "editor"}, format="json"),
        api_a.delete(f"/api/teams/{team_a.pk}/members/{user_a.pk}/"),
    ):
        assert response.status_code == 409
        assert response.json()["error"]["code"] == "last_admin"
        assert "at least one admin" in response.json()["error"]["message"]
    second = make_user("sam", team_a, Role.ADMIN)
    assert api_a.patch(f"/api/teams/{team_a.pk}/members/{user_a.pk}/", {"role": "editor"},
                       format="json").status_code == 200
    # Now sam is the last admin, and alice (an editor) may not change roles any more.
    assert api_a.patch(f"/api/teams/{team_a.pk}/members/{second.pk}/", {"role": "viewer"},
                       format="json").status_code == 403
    assert client_for(second).patch(f"/api/teams/{team_a.pk}/members/{second.pk}/", {"role": "viewer"},
                                    format="json").status_code == 409


def test_patch_needs_admin_and_a_known_role(api_a, api_viewer_a, team_a, viewer_a, user_a):
    assert api_viewer_a.patch(f"/api/teams/{team_a.pk}/members/{viewer_a.pk}/", {"role": "admin"},
                              format="json").status_code == 403
    bad = api_a.patch(f"/api/teams/{team_a.pk}/members/{viewer_a.pk}/", {"role": "owner"}, format="json")
    assert bad.status_code == 400 and "role" in bad.json()["error"]["fields"]
    assert api_a.patch(f"/api/teams/{team_a.pk}/members/999999/", {"role": "viewer"},
                       format="json").status_code == 404


def test_a_removed_member_gets_404_on_the_team_at_once(api_a, team_a, make_user, client_for):
    eve = make_user("eve", team_a, Role.EDITOR)
    api_eve = client_for(eve)
    graph = api_eve.post("/api/graphs/", {"team": team_a.pk, "name": "g"}, format="json").json()
    assert api_eve.get(f"/api/teams/{team_a.pk}/").status_code == 200  # the token lookup is now kept
    assert api_a.delete(f"/api/teams/{team_a.pk}/members/{eve.pk}/").status_code == 204
    assert api_eve.get(f"/api/teams/{team_a.pk}/").status_code == 404
    assert api_eve.get(f"/api/graphs/{graph['id']}/").status_code == 404
    assert api_eve.get("/api/auth/me/").json()["teams"] == []
    assert ApiToken.objects.filter(user=eve, revoked_at__isnull=True).exists()  # the token lives on


def test_password_change(user_a, client_for):
    api = client_for(user_a)
    wrong = api.post("/api/auth/password/", {"old_password": "nope", "new_password": STRONG}, format="json")
    assert wrong.status_code == 400 and "old_password" in wrong.json()["error"]["fields"]
    weak = api.post("/api/auth/password/", {"old_password": "pw", "new_password": "x"}, format="json")
    assert weak.status_code == 400 and "new_password" in weak.json()["error"]["fields"]
    assert api.post("/api/auth/password/", {"old_password": "pw", "new_password": STRONG},
                    format="json").status_code == 204
    user_a.refresh_from_db()
    assert user_a.check_password(STRONG)


def test_password_change_keeps_this_session_and_ends_others(user_a):
    this, other = APIClient(enforce_csrf_checks=False), APIClient()
    this.force_login(user_a)
    other.force_login(user_a)
    assert this.post("/api/auth/password/", {"old_password": "pw", "new_password": STRONG},
                     format="json").status_code == 204
    assert this.get("/api/auth/me/").status_code == 200
    assert other.get("/api/auth/me/").status_code in (401, 403)


def test_pending_invitations_are_bounded(api_a, team_a, monkeypatch):
    from webapp.accounts.services import invitations

    monkeypatch.setattr(invitations, "MAX_PENDING_INVITATIONS", 2)
    made = [invite(api_a, team_a.pk, email=f"p{i}@example.org").json() for i in range(2)]
    refused = invite(api_a, team_a.pk, email="p2@example.org")
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "too_many_invitations"
    assert refused.json()["error"]["limit"] == 2
    api_a.delete(f"/api/teams/{team_a.pk}/invitations/{made[0]['id']}/")
    assert invite(api_a, team_a.pk, email="p2@example.org").status_code == 201
