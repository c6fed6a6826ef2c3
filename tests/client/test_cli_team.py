"""`netloom team ...` against the real service (Django's live server, a real database): an admin
invites, the invitee accepts, the admin changes the role and removes them; the last admin stays."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from netloom.cli import main

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def admin(live_server: Any, settings: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    import uuid

    from django.contrib.auth import get_user_model

    from webapp.accounts.services.memberships import membership_add
    from webapp.accounts.services.teams import team_create
    from webapp.accounts.services.tokens import token_create
    from webapp.settings import caches

    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    settings.CACHES = caches("redis", settings.REDIS_URL, f"test-{uuid.uuid4().hex}")
    settings.EMAIL_BACKEND = "django.core.mail.backends.filebased.EmailBackend"
    settings.EMAIL_FILE_PATH = tmp_path / "mail"
    team = team_create(name="Team A")
    user = get_user_model().objects.create_user(username="alice", password="pw")
    membership_add(team=team, user=user, role="admin")
    _, token = token_create(user=user, name="cli")
    monkeypatch.delenv("NETLOOM_CONFIG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("NETLOOM_URL", live_server.url)
    monkeypatch.setenv("NETLOOM_TOKEN", token)
    return live_server


def run(capsys: Any, *argv: str) -> tuple[int, Any]:
    code = main(["--json", *argv])
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip() else None


def test_invite_members_role_remove(admin: Any, capsys: Any, tmp_path: Path) -> None:
    code, made = run(capsys, "team", "invite", "nora@example.org", "--role", "editor")
    assert code == 0 and made["role"] == "editor" and made["mailed"] is True
    mailed = "".join(p.read_text() for p in (tmp_path / "mail").iterdir())
    assert made["url"] in mailed  # the file backend kept the mail with the link
    code, pending = run(capsys, "team", "invitations")
    assert [i["email"] for i in pending] == ["nora@example.org"]

    accepted = httpx.post(f"{admin.url}/api/invitations/{made['token']}/accept/",
                          json={"username": "nora", "password": "a-long-enough-password"})
    assert accepted.status_code == 201, accepted.text
    code, members = run(capsys, "team", "members")
    assert {m["username"]: m["role"] for m in members} == {"alice": "admin", "nora": "editor"}

    code, member = run(capsys, "team", "role", "nora", "viewer")
    assert code == 0 and member["role"] == "viewer"
    assert main(["team", "role", "alice", "editor"]) == 1  # the last admin
    assert "at least one admin" in capsys.readouterr().err
    code, _ = run(capsys, "team", "remove", "nora")
    assert code == 0
    code, members = run(capsys, "team", "members")
    assert [m["username"] for m in members] == ["alice"]
