"""Second-person approval of production moves: a team setting, requests, approve/reject, stale."""

from __future__ import annotations

from typing import Any

import pytest

from webapp.registry.models import ModelVersion, RegisteredModel

pytestmark = pytest.mark.django_db


@pytest.fixture
def flowers(team_a: Any, user_a: Any) -> RegisteredModel:
    """A model of team A with versions 1..3 (rows only: approvals never read the files)."""
    model = RegisteredModel.objects.create(team=team_a, name="flowers", created_by=user_a)
    for n, accuracy in ((1, 0.9), (2, 0.95), (3, 0.97)):
        ModelVersion.objects.create(model=model, number=n, source={"run": None}, metrics={"val/accuracy": accuracy},
                                    created_by=user_a)
    return model


def _approvals(api: Any, model: RegisteredModel, status: str = "") -> list[dict[str, Any]]:
    answer = api.get(f"/api/models/{model.pk}/approvals/" + (f"?status={status}" if status else ""))
    assert answer.status_code == 200, answer.content
    return answer.json()


def test_team_admins_turn_approval_on(api_a: Any, make_user: Any, client_for: Any, team_a: Any, api_b: Any) -> None:
    assert api_a.get(f"/api/teams/{team_a.pk}/").json()["production_needs_approval"] is False
    editor = client_for(make_user("ed", team_a, "editor"))
    refused = editor.patch(f"/api/teams/{team_a.pk}/", {"production_needs_approval": True}, format="json")
    assert refused.status_code == 403
    assert api_b.patch(f"/api/teams/{team_a.pk}/", {"production_needs_approval": True}, format="json").status_code == 404
    bad = api_a.patch(f"/api/teams/{team_a.pk}/", {"production_needs_approval": "maybe"}, format="json")
    assert bad.status_code == 400 and "production_needs_approval" in bad.json()["error"]["fields"]
    unknown = api_a.patch(f"/api/teams/{team_a.pk}/", {"name": "renamed"}, format="json")
    assert unknown.status_code == 400 and "name" in unknown.json()["error"]["fields"]
    on = api_a.patch(f"/api/teams/{team_a.pk}/", {"production_needs_approval": True}, format="json")
    assert on.status_code == 200 and on.json()["production_needs_approval"] is True
    assert on.json()["name"] == "Team A"


def test_a_second_admin_approves_and_the_history_names_both(
    api_a: Any, make_user: Any, client_for: Any, team_a: Any, flowers: RegisteredModel
) -> None:
    team_a.production_needs_approval = True
    team_a.save()
    editor = client_for(make_user("ed", team_a, "editor"))
    second = client_for(make_user("sam", team_a, "admin"))
    viewer = client_for(make_user("vi", team_a, "viewer"))
    url = f"/api/models/{flowers.pk}/aliases/production/"

    assert viewer.put(url, {"version": 1}, format="json").status_code == 403
    asked = editor.put(url, {"version": 1, "note": "first one"}, format="json")
    assert asked.status_code == 202, asked.content
    request = asked.json()["approval"]
    assert (request["alias"], request["version"], request["from_version"], request["status"]) == (
        "production", 1, None, "pending")
    assert request["requested_by"] == "ed" and request["note"] == "first one" and request["stale"] is False
    assert api_a.get(f"/api/models/{flowers.pk}/").json()["aliases"] == {}  # nothing moved yet
    # Asking again for the same move answers the same request.
    assert editor.put(url, {"version": 1}, format="json").json()["approval"]["id"] == request["id"]

    approve = f"/api/models/{flowers.pk}/approvals/{request['id']}/approve/"
    assert editor.post(approve).json()["error"]["code"] == "same_person"
    assert viewer.post(approve).status_code == 403
    done = api_a.post(approve)
    assert done.status_code == 200, done.content
    assert done.json()["approval"]["status"] == "approved" and done.json()["approval"]["decided_by"] == "alice"
    detail = api_a.get(f"/api/models/{flowers.pk}/").json()
    assert detail["aliases"] == {"production": 1} and detail["production_needs_approval"] is True
    move = detail["history"][0]
    assert (move["actor"], move["approved_by"], move["to_version"], move["note"]) == ("ed", "alice", 1, "first one")
    again = api_a.post(approve)
    assert again.status_code == 409 and again.json()["error"]["code"] == "approval_decided"
    # Asking for the version production already names files nothing.
    same = editor.put(url, {"version": 1}, format="json")
    assert same.status_code == 200 and same.json()["aliases"] == {"production": 1}
    assert _approvals(api_a, flowers, "pending") == []

    # An admin's own move is a request too, approved by another admin, never by themself.
    mine = api_a.put(url, {"version": 2}, format="json").json()["approval"]
    own = api_a.post(f"/api/models/{flowers.pk}/approvals/{mine['id']}/approve/")
    assert own.status_code == 403 and own.json()["error"]["code"] == "same_person"
    assert second.post(f"/api/models/{flowers.pk}/approvals/{mine['id']}/approve/").status_code == 200
    assert api_a.get(f"/api/models/{flowers.pk}/").json()["history"][0]["approved_by"] == "sam"
    # Staging moves stay direct.
    assert editor.put(f"/api/models/{flowers.pk}/aliases/staging/", {"version": 3}, format="json").status_code == 200
    # Dropping production stays an admin's direct act.
    assert editor.delete(url).status_code == 403
    assert api_a.delete(url + "?note=retired").status_code == 204
    assert api_a.get(f"/api/models/{flowers.pk}/").json()["aliases"] == {"staging": 3}


def test_a_stale_request_is_refused_and_a_rejected_one_moves_nothing(
    api_a: Any, make_user: Any, client_for: Any, team_a: Any, flowers: RegisteredModel
) -> None:
    team_a.production_needs_approval = True
    team_a.save()
    editor = client_for(make_user("ed", team_a, "editor"))
    second = client_for(make_user("sam", team_a, "admin"))
    url = f"/api/models/{flowers.pk}/aliases/production/"
    to_two = editor.put(url, {"version": 2}, format="json").json()["approval"]
    to_three = editor.put(url, {"version": 3}, format="json").json()["approval"]
    assert second.post(f"/api/models/{flowers.pk}/approvals/{to_three['id']}/approve/").status_code == 200
    # v2's request was judged against "nothing in production"; production now names v3.
    listed = {a["id"]: a for a in _approvals(api_a, flowers, "pending")}
    assert listed[to_two["id"]]["stale"] is True and listed[to_two["id"]]["current_version"] == 3
    stale = api_a.post(f"/api/models/{flowers.pk}/approvals/{to_two['id']}/approve/")
    assert stale.status_code == 409 and stale.json()["error"]["code"] == "approval_stale"
    assert api_a.get(f"/api/models/{flowers.pk}/").json()["aliases"] == {"production": 3}

    # The one who asked may withdraw; another editor may not reject; an admin may.
    other = client_for(make_user("eve", team_a, "editor"))
    assert other.post(f"/api/models/{flowers.pk}/approvals/{to_two['id']}/reject/").status_code == 403
    rejected = editor.post(f"/api/models/{flowers.pk}/approvals/{to_two['id']}/reject/")
    assert rejected.status_code == 200 and rejected.json()["approval"]["status"] == "rejected"
    assert _approvals(api_a, flowers, "pending") == []
    assert [a["status"] for a in _approvals(api_a, flowers)] == ["approved", "rejected"]
    assert api_a.get(f"/api/models/{flowers.pk}/approvals/?status=nope").status_code == 400
    missing = api_a.post(f"/api/models/{flowers.pk}/approvals/999/approve/")
    assert missing.status_code == 404
    assert editor.put(url, {"version": 9}, format="json").json()["error"]["code"] == "version_missing"


def test_without_the_setting_production_moves_at_once(api_a: Any, flowers: RegisteredModel) -> None:
    moved = api_a.put(f"/api/models/{flowers.pk}/aliases/production/", {"version": 2}, format="json")
    assert moved.status_code == 200 and moved.json()["aliases"] == {"production": 2}
    assert moved.json()["history"][0]["approved_by"] is None
