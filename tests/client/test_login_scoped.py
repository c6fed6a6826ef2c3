"""`netloom login --scope read --team NAME --expires 30d` against the real service (Django's live
server): the stored token reads, is refused a write with the service's reason, sees one team,
and `netloom tokens` shows its limits."""

from __future__ import annotations

import io
import json
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from netloom.cli import main
from netloom.cli.account import expiry_time

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def service(live_server: Any, settings: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """alice (admin of Team A and of Team B) and the live server; no login stored yet."""
    from django.contrib.auth import get_user_model

    from webapp.accounts.services.memberships import membership_add
    from webapp.accounts.services.teams import team_create
    from webapp.settings import caches

    settings.CACHES = caches("redis", settings.REDIS_URL, f"test-{uuid.uuid4().hex}")
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    user = get_user_model().objects.create_user(username="alice", password="pw")
    teams = [team_create(name="Team A"), team_create(name="Team B")]
    for team in teams:
        membership_add(team=team, user=user, role="admin")
    for name in ("NETLOOM_CONFIG", "NETLOOM_URL", "NETLOOM_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    return {"url": live_server.url, "teams": teams}


def test_login_with_a_read_scope_a_team_and_an_expiry(
    service: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("alice\npw\n"))
    argv = ["login", service["url"], "--scope", "read", "--team", "Team B", "--expires", "30d", "--json"]
    assert main(argv) == 0, capsys.readouterr()
    login = json.loads(capsys.readouterr().out)
    team_b = service["teams"][1]
    assert (login["scope"], login["team"]) == ("read", team_b.pk)
    expires = datetime.fromisoformat(login["expires_at"])
    assert timedelta(days=29) < expires - datetime.now(UTC) <= timedelta(days=30)

    assert main(["teams"]) == 0  # reads with the stored token: one team
    assert [line.split()[1:3] for line in capsys.readouterr().out.splitlines()[1:]] == [["Team", "B"]]

    assert main(["graphs", "push", str(_spec(tmp_path)), "--team", str(team_b.pk)]) == 1
    refused = capsys.readouterr().err
    assert "token_scope" in refused and "read" in refused

    assert main(["tokens"]) == 0
    header, row = capsys.readouterr().out.splitlines()
    assert header.split()[:6] == ["ID", "NAME", "PREFIX", "SCOPE", "TEAM", "EXPIRES_AT"]
    assert " read " in row and "Team B" in row


def test_a_team_not_of_the_user_is_named(service: Any, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("alice\npw\n"))
    assert main(["login", service["url"], "--team", "Team Z"]) == 1
    assert "team" in capsys.readouterr().err


def _spec(folder: Path) -> Path:
    path = folder / "mlp.json"
    path.write_text(json.dumps({
        "version": 1, "inputs": [{"id": "x", "shape": [4], "dtype": "float32"}],
        "nodes": [{"id": "fc", "op": "Linear", "params": {"out_features": 3}, "inputs": ["x"]}],
        "outputs": ["fc"],
    }))
    return path


@pytest.mark.parametrize(("value", "after"), [
    ("30d", timedelta(days=30)), ("12h", timedelta(hours=12)), ("90m", timedelta(minutes=90)),
    ("2w", timedelta(weeks=2)),
])
def test_expiry_spans(value: str, after: timedelta) -> None:
    now = datetime(2030, 1, 1, tzinfo=UTC)
    assert expiry_time(value, now=now) == now + after


def test_expiry_dates_and_nonsense() -> None:
    import argparse

    assert expiry_time("2030-01-31") == datetime(2030, 1, 31, tzinfo=UTC)
    assert expiry_time("2030-01-31T12:00:00+01:00").utcoffset() == timedelta(hours=1)
    with pytest.raises(argparse.ArgumentTypeError, match="30d"):
        expiry_time("soon")
