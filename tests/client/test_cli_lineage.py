"""`netloom runs reproduce` and `netloom runs lineage` against the real service (live server, real database)."""

from __future__ import annotations

import argparse
import json
from typing import Any

import pytest

from netloom.cli import main
from tests.client.test_cli_against_the_service import service, trained  # noqa: F401 - fixture

pytestmark = pytest.mark.django_db(transaction=True)


def test_reproduce_then_lineage(service: Any, capsys: Any) -> None:  # noqa: F811
    run = trained(service, name="base")
    assert main(["runs", "reproduce", str(run.pk), "--deterministic"]) == 0
    out = capsys.readouterr().out
    assert f"reproducing run {run.pk}" in out and "'base (reproduction)'" in out

    assert main(["runs", "lineage", str(run.pk), "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    kinds = {node["kind"] for node in answer["nodes"]}
    assert {"dataset", "run"} <= kinds
    reproduction = [e for e in answer["edges"] if e["kind"] == "reproduced_by"]
    assert len(reproduction) == 1 and reproduction[0]["source"] == f"run:{run.pk}"

    assert main(["runs", "lineage", str(run.pk)]) == 0
    text = capsys.readouterr().out
    assert "dataset" in text and "iris" in text and "(reproduced_by)" in text and "<- this" in text


def test_which_runs_used_a_dataset_version(service: Any, capsys: Any) -> None:  # noqa: F811
    from netloom.cli import _client

    run = trained(service, name="on iris v1")
    assert main(["datasets", "lineage", str(service.dataset.pk), "1", "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["root"] == f"dataset:{service.dataset.pk}@1"
    assert (answer["root"], f"run:{run.pk}", "trained_on") in {(e["source"], e["target"], e["kind"]) for e in answer["edges"]}
    assert {f"checkpoint:{run.pk}:best"} <= {node["id"] for node in answer["nodes"]}

    assert main(["datasets", "lineage", str(service.dataset.pk), "1", "--depth", "1"]) == 0
    text = capsys.readouterr().out
    assert "'iris v1'" in text and "<- this" in text and "'on iris v1'" in text and "(trained_on)" in text

    assert main(["datasets", "lineage", str(service.dataset.pk), "7"]) != 0
    assert "no version 7" in capsys.readouterr().err
    with _client(argparse.Namespace(url=None, token=None)) as client:
        assert client.dataset_version_lineage(service.dataset.pk, 1)["root"] == answer["root"]
