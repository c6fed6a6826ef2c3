"""Migrations datasets 0003 and runs 0014: every existing dataset gets version 1 from its current
file (left where it is, digest of its bytes; a built-in's of its data) and every run pins it."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from tests.webapp.runs.conftest import _memory_broker, run_a  # noqa: F401 - fixtures

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("_memory_broker")]

BEFORE = [("runs", "0013_run_drain_requested"), ("datasets", "0002_dataset_progress")]


def migrate(target: list[tuple[str, str]]) -> Any:
    executor = MigrationExecutor(connection)
    executor.migrate(target)
    return executor.loader.project_state(target).apps


@pytest.fixture(autouse=True)
def latest_schema_after() -> Any:
    yield
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())


def test_existing_datasets_become_version_1_and_runs_pin_it(request: Any, settings: Any) -> None:
    from engine.data.builtin import builtin_digest

    run = request.getfixturevalue("run_a")  # a queued run on the built-in iris (the runs tests' fixture)

    old = migrate(BEFORE)
    Dataset = old.get_model("datasets", "Dataset")
    content = b"a,b\n1,x\n2,y\n"
    folder = Path(settings.MEDIA_ROOT) / "datasets" / "old"
    folder.mkdir(parents=True)
    (folder / "data.csv").write_bytes(content)
    table = Dataset.objects.create(team_id=run.team_id, name="old table", kind="csv", status="ready",
                                   options={"target": "b"}, file="datasets/old/data.csv", size=len(content))
    Dataset.objects.create(team_id=run.team_id, name="broken", kind="csv", status="failed")

    new = migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
    Version = new.get_model("datasets", "DatasetVersion")
    Run = new.get_model("runs", "Run")
    first = Version.objects.get(dataset_id=table.pk)
    assert (first.number, first.digest, first.file) == (1, hashlib.sha256(content).hexdigest(), "datasets/old/data.csv")
    assert first.options == {"target": "b"}
    iris = Version.objects.get(dataset_id=run.dataset_id)
    assert iris.number == 1 and iris.digest == builtin_digest("iris")
    assert Run.objects.get(pk=run.pk).dataset_version_id == iris.pk
    assert not Version.objects.filter(dataset__name="broken").exists()  # nothing to version
