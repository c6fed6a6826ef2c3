"""The audit log: every change the app makes is one entry (actor, action, object, before -> after),
written in the change's own transaction; team admins read it, filtered, as pages or JSON lines."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone

from tests.webapp.runs.conftest import _memory_broker, run_a  # noqa: F401 - fixtures: an in-memory broker, a queued run
from webapp.accounts.models import Membership, Role
from webapp.audit.models import AuditEntry
from webapp.audit.services import AuditOutsideTransaction, audit_record


def _entries(team: Any = None, **filters: Any) -> list[AuditEntry]:
    rows = AuditEntry.objects.filter(**filters)
    if team is not None:
        rows = rows.filter(team=team)
    return list(rows.order_by("id"))


def _one(action: str, **filters: Any) -> AuditEntry:
    found = _entries(action=action, **filters)
    assert len(found) == 1, (action, [(e.action, e.object_id) for e in AuditEntry.objects.order_by("id")])
    return found[0]


def _fake_trained(run: Any) -> None:
    """Mark a queued run succeeded with an export folder on disk (what a real training leaves)."""
    from webapp.runs.models import Run, RunStatus
    from webapp.runs.selectors import run_export_dir

    Run.objects.filter(pk=run.pk).update(status=RunStatus.SUCCEEDED, finished_at=timezone.now())
    folder = run_export_dir(run)
    folder.mkdir(parents=True)
    for name in ("model.safetensors", "model.py", "config.json"):
        (folder / name).write_bytes(b"{}")
    (folder / "export.json").write_text(json.dumps({"checkpoint": None}))
    run.refresh_from_db()


@pytest.mark.django_db(transaction=True)  # each service's own transaction, not the test's, holds its entry
def test_each_change_through_the_api_writes_one_entry(
    api_a: Any, user_a: Any, team_a: Any, make_user: Any, valid_spec: dict[str, Any], settings: Any
) -> None:
    settings.RUNS_LEASE_SECONDS = 30.0
    bob = make_user("bob")
    A = team_a.pk

    graph = api_a.post("/api/graphs/", {"team": A, "name": "mlp", "spec": valid_spec}, format="json").json()
    assert api_a.patch(f"/api/graphs/{graph['id']}/", {"name": "mlp-2"}, format="json").status_code == 200
    dataset = api_a.post("/api/datasets/", {"team": A, "name": "iris", "builtin": "iris"}, format="json").json()
    assert api_a.patch(f"/api/datasets/{dataset['id']}/", {"name": "flowers"}, format="json").status_code == 200
    run = api_a.post("/api/runs/", {"graph": graph["id"], "revision": 1, "dataset": dataset["id"],
                                    "config": {"epochs": 1}}, format="json")
    assert run.status_code == 201, run.content
    run_id = run.json()["id"]
    assert api_a.patch(f"/api/runs/{run_id}/", {"name": "first"}, format="json").status_code == 200
    assert api_a.post(f"/api/runs/{run_id}/cancel/").status_code == 200

    assert api_a.post(f"/api/teams/{A}/members/", {"username": "bob", "role": "editor"}, format="json").status_code == 201
    assert api_a.post(f"/api/teams/{A}/members/", {"username": "bob", "role": "viewer"}, format="json").status_code == 200
    assert api_a.delete(f"/api/teams/{A}/members/{bob.pk}/").status_code == 204

    token = api_a.post("/api/auth/tokens/", {"name": "ci"}, format="json").json()
    assert api_a.delete(f"/api/auth/tokens/{token['id']}/").status_code == 204

    # Refused deletes (runs use them) change nothing and record nothing.
    assert api_a.delete(f"/api/graphs/{graph['id']}/").status_code == 409
    assert api_a.delete(f"/api/datasets/{dataset['id']}/").status_code == 409
    spare = api_a.post("/api/graphs/", {"team": A, "name": "spare"}, format="json").json()
    assert api_a.delete(f"/api/graphs/{spare['id']}/").status_code == 204
    spare_data = api_a.post("/api/datasets/", {"team": A, "name": "spare", "builtin": "iris"}, format="json").json()
    assert api_a.delete(f"/api/datasets/{spare_data['id']}/").status_code == 204

    from webapp.runs.models import Run

    trained = Run.objects.get(pk=api_a.post("/api/runs/", {"graph": graph["id"], "revision": 1, "dataset": dataset["id"],
                                                           "config": {"epochs": 1}}, format="json").json()["id"])
    _fake_trained(trained)
    assert api_a.get(f"/api/runs/{trained.pk}/export/?format=config").status_code == 200
    model = api_a.post("/api/models/", {"team": A, "name": "flowers"}, format="json").json()
    assert api_a.post(f"/api/models/{model['id']}/versions/", {"run": trained.pk}, format="json").status_code == 201
    assert api_a.put(f"/api/models/{model['id']}/aliases/staging/", {"version": 1}, format="json").status_code == 200
    assert api_a.delete(f"/api/models/{model['id']}/aliases/staging/?note=done").status_code == 204

    mine = {"actor": user_a}
    g = _one("graph.created", object_id=str(graph["id"]), **mine)
    assert (g.team_id, g.object_type, g.object_repr, g.before, g.after) == (A, "graph", "mlp", None, {"name": "mlp"})
    g = _one("graph.renamed", **mine)
    assert (g.before, g.after) == ({"name": "mlp"}, {"name": "mlp-2"})
    assert _one("graph.deleted", **mine).object_id == str(spare["id"])
    assert _one("dataset.created", object_id=str(dataset["id"])).after["name"] == "iris"
    d = _one("dataset.renamed", **mine)
    assert (d.before, d.after) == ({"name": "iris"}, {"name": "flowers"})
    assert _one("dataset.deleted", **mine).object_id == str(spare_data["id"])
    r = _one("run.created", object_id=str(run_id), **mine)
    assert r.after["graph"] == graph["id"] and r.after["dataset"] == dataset["id"]
    r = _one("run.renamed", **mine)
    assert (r.object_type, r.object_id, r.before, r.after) == ("run", str(run_id), {"name": ""}, {"name": "first"})
    r = _one("run.cancelled", **mine)
    assert (r.before, r.after) == ({"status": "queued"}, {"status": "cancelled"})
    e = _one("run.exported", **mine)
    assert (e.object_id, e.after) == (str(trained.pk), {"format": "config", "checkpoint": None})

    m = _one("member.added", object_id=str(bob.pk), **mine)
    assert (m.object_type, m.object_repr, m.before, m.after) == ("member", "bob", None, {"role": "editor"})
    m = _one("member.role_changed", **mine)
    assert (m.before, m.after) == ({"role": "editor"}, {"role": "viewer"})
    assert _one("member.removed", **mine).before == {"role": "viewer"}

    t = _one("token.created", object_id=str(token["id"]))
    assert t.team is None and t.actor == user_a  # a personal token is a site-level entry
    assert t.after == {"name": "ci", "prefix": token["prefix"], "expires_at": None, "scope": "write", "team": None}
    assert token["token"] not in json.dumps([t.before, t.after, t.object_repr])
    assert _one("token.revoked", **mine).before == {"revoked_at": None}

    assert _one("model.created", **mine).after == {"name": "flowers", "description": ""}
    v = _one("model.version_registered", **mine)
    assert (v.object_type, v.object_id, v.after["version"], v.after["run"]) == ("model", str(model["id"]), 1, trained.pk)
    assert _one("model.alias_moved", **mine).after["version"] == 1
    dropped = _one("model.alias_dropped", **mine)
    assert dropped.before == {"alias": "staging", "version": 1} and dropped.after["version"] is None

    # What the admin reads: the same entries, newest first, with the actor's name.
    page = api_a.get(f"/api/teams/{A}/audit/?page_size=500").json()
    actions = [row["action"] for row in page["results"]]
    assert actions[0] == "model.alias_dropped" and "graph.created" in actions and "token.created" not in actions
    assert page["results"][0]["actor_name"] == "alice"
    assert page["count"] == AuditEntry.objects.filter(team=team_a).count()


@pytest.mark.django_db(transaction=True)
def test_a_team_an_upload_its_options_and_a_runs_other_fields_are_recorded(
    api_a: Any, user_a: Any, team_a: Any, iris_csv_bytes: bytes, run_a: Any  # noqa: F811
) -> None:
    from django.core.files.uploadedfile import SimpleUploadedFile

    made = api_a.post("/api/teams/", {"name": "Second"}, format="json").json()
    t = _one("team.created", actor=user_a)
    assert (t.team_id, t.object_type, t.object_id, t.after) == (made["id"], "team", str(made["id"]), {"name": "Second"})

    uploaded = api_a.post("/api/datasets/upload/", {"team": team_a.pk, "kind": "csv", "options": json.dumps({}),
                                                    "file": SimpleUploadedFile("iris.csv", iris_csv_bytes)},
                          format="multipart")
    assert uploaded.status_code in (201, 202), uploaded.content
    d = _one("dataset.created", object_id=str(uploaded.json()["id"]))
    assert d.actor == user_a and d.after["original_filename"] == "iris.csv" and d.after["kind"] == "csv"
    changed = api_a.patch(f"/api/datasets/{uploaded.json()['id']}/", {"options": {"target": "species"}}, format="json")
    assert changed.status_code == 200, changed.content
    o = _one("dataset.options_changed", actor=user_a)
    assert o.before == {"options": {}} and o.after == {"options": {"target": "species"}}

    updated = api_a.patch(f"/api/runs/{run_a.pk}/", {"tags": ["baseline"], "priority": 3}, format="json")
    assert updated.status_code == 200, updated.content
    r = _one("run.updated", actor=user_a)
    assert (r.object_id, r.before, r.after) == (str(run_a.pk), {"priority": 0, "tags": []},
                                                {"priority": 3, "tags": ["baseline"]})
    assert not AuditEntry.objects.filter(action="run.renamed").exists()


@pytest.mark.django_db(transaction=True)
def test_an_entry_lives_and_dies_with_its_change(team_a: Any, user_a: Any, make_user: Any) -> None:
    # Outside any transaction the entry could outlive a failed change: refused.
    with pytest.raises(AuditOutsideTransaction):
        audit_record(action="graph.renamed", actor=user_a, team=team_a, object_type="graph", object_id=1)
    before = AuditEntry.objects.count()

    # A change that fails after its entry was written (a constraint broken later in the same
    # block) takes the entry with it.
    with pytest.raises(IntegrityError), transaction.atomic():
        audit_record(action="member.added", actor=user_a, team=team_a, object_type="member", object_id=user_a.pk,
                     after={"role": "viewer"})
        Membership.objects.create(team=team_a, user=user_a, role=Role.VIEWER)  # alice is already a member
    assert AuditEntry.objects.count() == before

    # A service that refuses after recording (the last admin may not leave) leaves none either.
    from webapp.accounts.services.memberships import membership_add, membership_remove
    from webapp.errors import DomainError

    with pytest.raises(DomainError):
        membership_remove(team=team_a, user=user_a, actor=user_a)
    assert not AuditEntry.objects.filter(action="member.removed").exists()
    # ... and one that succeeds commits its entry with it.
    carol = make_user("carol")
    membership_add(team=team_a, user=carol, role=Role.EDITOR, actor=user_a)
    assert AuditEntry.objects.filter(action="member.added", object_id=str(carol.pk), actor=user_a).count() == 1


def test_secrets_never_reach_an_entry(team_a: Any, user_a: Any) -> None:
    with transaction.atomic():
        entry = audit_record(action="token.created", actor=user_a, team=None, object_type="token", object_id=1,
                             after={"name": "x", "password": "hunter2", "nested": {"api_key": "k"},
                                    "note": "nl_" + "a" * 43, "at": timezone.now()})
    entry.refresh_from_db()
    assert entry.after["password"] == "[REDACTED]" and entry.after["nested"]["api_key"] == "[REDACTED]"
    assert "a" * 43 not in entry.after["note"] and isinstance(entry.after["at"], str)


@pytest.fixture
def log(team_a: Any, user_a: Any, make_user: Any) -> dict[str, Any]:
    """A few entries of team A at known times, by alice and dora, and one of team B."""
    dora = make_user("dora", team_a, Role.EDITOR)
    now = timezone.now()
    rows = [
        ("member.added", user_a, "member", dora.pk, now - timedelta(days=3)),
        ("graph.created", dora, "graph", 7, now - timedelta(days=2)),
        ("graph.renamed", dora, "graph", 7, now - timedelta(days=1)),
        ("run.cancelled", user_a, "run", 42, now - timedelta(hours=1)),
    ]
    AuditEntry.objects.filter(team=team_a).delete()
    with transaction.atomic():
        for action, actor, kind, object_id, at in rows:
            entry = audit_record(action=action, actor=actor, team=team_a, object_type=kind, object_id=object_id)
            AuditEntry.objects.filter(pk=entry.pk).update(at=at)
    return {"now": now, "dora": dora}


def _actions(api: Any, team: Any, query: str = "") -> list[str]:
    answer = api.get(f"/api/teams/{team.pk}/audit/{query}")
    assert answer.status_code == 200, answer.content
    return [row["action"] for row in answer.json()["results"]]


def test_filters(api_a: Any, team_a: Any, log: dict[str, Any]) -> None:
    assert _actions(api_a, team_a) == ["run.cancelled", "graph.renamed", "graph.created", "member.added"]
    assert _actions(api_a, team_a, "?actor=dora") == ["graph.renamed", "graph.created"]
    assert _actions(api_a, team_a, "?action=graph.") == ["graph.renamed", "graph.created"]
    assert _actions(api_a, team_a, "?action=graph.created") == ["graph.created"]
    assert _actions(api_a, team_a, "?object=graph:7&actor=dora") == ["graph.renamed", "graph.created"]
    assert _actions(api_a, team_a, "?object=run") == ["run.cancelled"]
    since = (log["now"] - timedelta(days=2, hours=1)).isoformat()
    until = (log["now"] - timedelta(hours=12)).isoformat()
    assert _actions(api_a, team_a, f"?since={since.replace('+', '%2B')}&until={until.replace('+', '%2B')}") == [
        "graph.renamed", "graph.created"]
    # A date alone: `until` keeps that whole day.
    # An offset PostgreSQL would refuse (ISO-8601 allows up to 23:59) reads as the same moment in UTC.
    assert _actions(api_a, team_a, "?since=0070-04-22T15:49:29%2B23:26") == _actions(api_a, team_a, "")
    day = (log["now"] - timedelta(days=2)).date().isoformat()
    assert _actions(api_a, team_a, f"?until={day}") == ["graph.created", "member.added"]
    paged = api_a.get(f"/api/teams/{team_a.pk}/audit/?page_size=2").json()
    assert paged["count"] == 4 and len(paged["results"]) == 2 and paged["next"]


@pytest.mark.parametrize(("query", "field"), [
    ("?since=yesterday", "since"),
    ("?until=2026-13-01", "until"),
    ("?object=run:", "object"),
    ("?since=2026-02-01&until=2026-01-01", "until"),
    ("?acter=alice", "acter"),
    ("?page_size=0", "page_size"),
    # PostgreSQL refuses NUL in a text value: refused before the export starts streaming.
    ("?actor=%00", "actor"),
    ("?action=" + "a" * 201, "action"),
])
def test_bad_parameters_are_400_naming_them(api_a: Any, team_a: Any, query: str, field: str) -> None:
    for path in ("", "export/"):
        if field == "page_size" and path:
            continue
        answer = api_a.get(f"/api/teams/{team_a.pk}/audit/{path}{query}")
        assert answer.status_code == 400, (path, answer.content)
        assert field in answer.json()["error"]["fields"]


def test_only_the_team_admins_read_it(api_a: Any, api_viewer_a: Any, api_b: Any, anon: Any, client_for: Any,
                                      make_user: Any, team_a: Any) -> None:
    editor = client_for(make_user("eddie", team_a, Role.EDITOR))
    for path in ("", "export/"):
        url = f"/api/teams/{team_a.pk}/audit/{path}"
        assert api_a.get(url).status_code == 200
        assert api_viewer_a.get(url).status_code == 403
        assert editor.get(url).status_code == 403
        assert api_b.get(url).status_code == 404
        assert anon.get(url).status_code == 401
        assert api_a.post(url, {}, format="json").status_code == 405
        assert api_a.delete(url).status_code == 405


def test_json_lines_export_streams_the_filtered_entries(api_a: Any, team_a: Any, log: dict[str, Any]) -> None:
    answer = api_a.get(f"/api/teams/{team_a.pk}/audit/export/?action=graph.")
    assert answer.status_code == 200 and answer.streaming
    assert answer["Content-Type"].startswith("application/jsonl")
    assert answer["Content-Disposition"] == f'attachment; filename="audit-team{team_a.pk}.jsonl"'
    lines = b"".join(answer.streaming_content).decode().splitlines()
    rows = [json.loads(line) for line in lines]
    # Each line is the object the paged list answers.
    assert rows == api_a.get(f"/api/teams/{team_a.pk}/audit/?action=graph.").json()["results"]
    assert [(r["action"], r["actor_name"], r["object_type"], r["object_id"]) for r in rows] == [
        ("graph.renamed", "dora", "graph", "7"), ("graph.created", "dora", "graph", "7")]


def test_the_django_admin_only_reads_entries(client: Any, team_a: Any, log: dict[str, Any],
                                             django_user_model: Any) -> None:
    client.force_login(django_user_model.objects.create_superuser("root", "root@example.com", "pw"))
    entry = AuditEntry.objects.filter(team=team_a).first()
    assert client.get("/admin/audit/auditentry/").status_code == 200
    assert client.get(f"/admin/audit/auditentry/{entry.pk}/change/").status_code == 200  # a view, no form
    assert client.get("/admin/audit/auditentry/add/").status_code == 403
    assert client.post(f"/admin/audit/auditentry/{entry.pk}/delete/", {"post": "yes"}).status_code == 403
    assert AuditEntry.objects.filter(pk=entry.pk).exists()


@pytest.mark.django_db(transaction=True)
def test_invitations_and_role_changes_from_the_app_are_recorded_with_their_actor(api_a, team_a, user_a, anon):
    from webapp.audit.models import AuditEntry

    made = api_a.post(f"/api/teams/{team_a.pk}/invitations/", {"email": "nora@example.org", "role": "editor"},
                      format="json")
    assert made.status_code == 201, made.content
    entry = AuditEntry.objects.get(action="invitation.created")
    assert entry.actor == user_a and entry.team == team_a and entry.after["role"] == "editor"
    assert made.json()["token"] not in json.dumps([entry.before, entry.after, entry.object_repr])
    accepted = anon.post(f"/api/invitations/{made.json()['token']}/accept/",
                         {"username": "nora", "password": "a-long-enough-pw-42"}, format="json")
    assert accepted.status_code == 201, accepted.content
    nora = AuditEntry.objects.get(action="invitation.accepted").actor
    assert nora.username == "nora"
    assert AuditEntry.objects.filter(action="member.added", object_id=str(nora.pk), actor=nora).count() == 1
    changed = api_a.patch(f"/api/teams/{team_a.pk}/members/{nora.pk}/", {"role": "viewer"}, format="json")
    assert changed.status_code == 200, changed.content
    role = AuditEntry.objects.get(action="member.role_changed", object_id=str(nora.pk))
    assert (role.actor, role.before, role.after) == (user_a, {"role": "editor"}, {"role": "viewer"})
    second = api_a.post(f"/api/teams/{team_a.pk}/invitations/", {"email": "x@example.org", "role": "viewer"},
                        format="json").json()
    assert api_a.delete(f"/api/teams/{team_a.pk}/invitations/{second['id']}/").status_code == 204
    assert AuditEntry.objects.get(action="invitation.revoked").actor == user_a
