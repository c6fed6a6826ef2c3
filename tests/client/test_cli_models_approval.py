"""`netloom models approve` against the real service (Django's live server, a real database): an
editor asks to move production, the request is listed, the editor cannot approve it, an admin
does, and `models show` names both people."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from netloom.cli import main

pytestmark = pytest.mark.django_db(transaction=True)


def test_an_editor_asks_and_an_admin_approves(
    live_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from django.contrib.auth import get_user_model

    from webapp.accounts.services.memberships import membership_add
    from webapp.accounts.services.teams import team_create, team_update
    from webapp.accounts.services.tokens import token_create
    from webapp.registry.models import ModelVersion, RegisteredModel

    team = team_create(name="Team A")
    team_update(team=team, production_needs_approval=True)
    tokens = {}
    for name, role in (("alice", "admin"), ("ed", "editor")):
        user = get_user_model().objects.create_user(username=name, password="pw")
        membership_add(team=team, user=user, role=role)
        tokens[name] = token_create(user=user, name="cli")[1]
    model = RegisteredModel.objects.create(team=team, name="flowers")
    ModelVersion.objects.create(model=model, number=1, source={}, metrics={"val/accuracy": 0.9})
    monkeypatch.delenv("NETLOOM_CONFIG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("NETLOOM_URL", live_server.url)

    monkeypatch.setenv("NETLOOM_TOKEN", tokens["ed"])
    assert main(["models", "alias", str(model.pk), "production", "1", "--note", "ship it"]) == 0
    asked = capsys.readouterr().out
    assert "production - -> 1 asked by ed: pending" in asked and "another admin of the team approves it" in asked
    assert main(["models", "approvals", str(model.pk)]) == 0
    listed = capsys.readouterr().out
    approval = int(listed.split("request ")[1].split(":")[0])
    assert main(["models", "approve", str(model.pk), str(approval)]) == 1
    assert "another admin of the team approves it" in capsys.readouterr().err

    monkeypatch.setenv("NETLOOM_TOKEN", tokens["alice"])
    assert main(["models", "approve", str(model.pk), str(approval)]) == 0
    assert "approved by alice" in capsys.readouterr().out
    assert main(["models", "show", str(model.pk)]) == 0
    shown = capsys.readouterr().out
    assert "production - -> 1 by ed, approved by alice (ship it)" in shown and "[production]" in shown
    assert main(["models", "approvals", str(model.pk)]) == 0
    assert "no pending requests" in capsys.readouterr().out
