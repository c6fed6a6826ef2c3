"""Small pieces of the client: config storage, --set parsing, error text, upload kinds."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from netloom.cli import main
from netloom.cli.common import parse_set
from netloom.config import config_path, login_load, login_save
from netloom.errors import ApiError, describe_location
from netloom.resources.datasets import upload_kind


def test_the_login_is_stored_readable_by_the_user_only_and_the_environment_overrides_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NETLOOM_URL", raising=False)
    monkeypatch.delenv("NETLOOM_TOKEN", raising=False)
    monkeypatch.delenv("NETLOOM_CONFIG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert config_path() == tmp_path / "netloom" / "config.json"
    assert login_load() is None

    path = login_save(url="http://example.test:8000", token="nl_first")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert login_save(url="http://example.test:8000", token="nl_second") == path  # replaced whole
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert json.loads(path.read_text()) == {"url": "http://example.test:8000", "token": "nl_second"}
    assert [p.name for p in path.parent.iterdir()] == ["config.json"]

    stored = login_load()
    assert stored is not None and (stored.url, stored.token) == (
        "http://example.test:8000",
        "nl_second",
    )
    monkeypatch.setenv("NETLOOM_URL", "https://ci.example.test/")
    monkeypatch.setenv("NETLOOM_TOKEN", "nl_from_ci")
    override = login_load()
    assert override is not None and (override.url, override.token) == (
        "https://ci.example.test",
        "nl_from_ci",
    )


def test_set_assignments_become_nested_config_fields_read_as_json() -> None:
    assert parse_set(
        [
            "optimizer.lr=0.01",
            "epochs=3",
            "optimizer.name=sgd",
            "early_stopping=null",
            "scheduler.name=cosine",
            "compile=true",
        ]
    ) == {
        "optimizer": {"lr": 0.01, "name": "sgd"},
        "epochs": 3,
        "early_stopping": None,
        "scheduler": {"name": "cosine"},
        "compile": True,
    }


def test_a_command_without_a_login_says_how_to_log_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("NETLOOM_URL", "NETLOOM_TOKEN", "NETLOOM_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert main(["teams"]) == 1
    assert "netloom login URL" in capsys.readouterr().err
    assert main(["runs", "start", "--graph", "1", "--dataset", "1", "--set", "epochs"]) == 1
    assert "--set takes KEY=VALUE" in capsys.readouterr().err


def test_an_api_error_prints_its_message_fields_and_node_keyed_problems() -> None:
    body = {
        "error": {
            "code": "invalid_spec",
            "message": "The spec has 2 problems.",
            "fields": {"config.epochs": ["Must be at least 1."]},
            "errors": [
                {
                    "node": "fc1",
                    "field": "out_features",
                    "code": "bad_param",
                    "message": "must be >= 1",
                },
                {"node": "x9", "field": None, "code": "unknown_op", "message": "no op X"},
            ],
        }
    }
    error = ApiError.from_response(400, body)
    assert error.lines() == [
        "error: The spec has 2 problems. (invalid_spec, HTTP 400)",
        "  config.epochs: Must be at least 1.",
        "  node fc1.out_features: must be >= 1 [bad_param]",
        "  node x9: no op X [unknown_op]",
    ]
    assert error.as_json()["error"]["errors"][1]["node"] == "x9"
    proxy = ApiError.from_response(502, None, "<html>Bad Gateway</html>")
    assert proxy.code == "http_502" and "Bad Gateway" in proxy.message


def test_a_located_data_error_names_its_row_and_column() -> None:
    assert describe_location(
        {"message": "not a number: 'abc'", "row": 8, "column": "sepal_width"}
    ) == ("row 8, column \"sepal_width\": not a number: 'abc'")


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("a.csv", "csv"),
        ("cats.zip", "images"),
        ("x.npz", "tensors"),
        ("t.safetensors", "tensors"),
        ("data.tsv", "csv"),
    ],
)
def test_the_upload_kind_follows_the_file_name(name: str, kind: str) -> None:
    assert upload_kind(Path(name)) == kind


def test_the_generated_types_resolve_and_name_every_stream_frame() -> None:
    import typing

    from netloom import api_types

    for name in api_types.__all__:
        value = getattr(api_types, name)
        if isinstance(value, type):
            typing.get_type_hints(value)  # every annotation names something that exists
    frame_types = {
        typing.get_type_hints(member)["type"].__args__[0]
        for member in typing.get_args(api_types.RunStreamFrame)
    }
    assert frame_types == {
        "state",
        "replayed",
        "metric",
        "status",
        "log",
        "checkpoint",
        "explanation",
        "export",
    }
