"""`netloom datasets versions|upload-version|diff` against the real service (Django's live server):
upload a CSV, a second version with five rows fewer, list both, the diff says five removed, the
same bytes again are refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from netloom.cli import main
from tests.webapp.conftest import iris_like_csv

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def editor(live_server: Any, settings: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    import uuid

    from django.contrib.auth import get_user_model

    from webapp.accounts.services.memberships import membership_add
    from webapp.accounts.services.teams import team_create
    from webapp.accounts.services.tokens import token_create
    from webapp.settings import caches

    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    settings.CACHES = caches("redis", settings.REDIS_URL, f"test-{uuid.uuid4().hex}")
    settings.NETLOOM_DATASET_PROCESSING = "sync"
    settings.MEDIA_ROOT = str(tmp_path / "media")
    team = team_create(name="Team A")
    user = get_user_model().objects.create_user(username="alice", password="pw")
    membership_add(team=team, user=user, role="editor")
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


def test_versions_upload_version_and_diff(editor: Any, capsys: Any, tmp_path: Path) -> None:
    first, second = tmp_path / "v1.csv", tmp_path / "v2.csv"
    first.write_bytes(iris_like_csv(60))
    second.write_bytes(iris_like_csv(55))
    code, dataset = run(capsys, "datasets", "upload", str(first), "--target", "species")
    assert code == 0 and dataset["status"] == "ready"
    code, version = run(capsys, "datasets", "upload-version", str(dataset["id"]), str(second))
    assert code == 0 and version["number"] == 2
    code, versions = run(capsys, "datasets", "versions", str(dataset["id"]))
    assert [v["number"] for v in versions] == [1, 2] and versions[0]["digest"] != versions[1]["digest"]
    code, diff = run(capsys, "datasets", "diff", str(dataset["id"]), "1", "2")
    assert code == 0 and diff["rows"]["removed"] == 5
    code = main(["datasets", "upload-version", str(dataset["id"]), str(first)])
    err = capsys.readouterr().err
    assert code != 0 and "Version 1" in err
