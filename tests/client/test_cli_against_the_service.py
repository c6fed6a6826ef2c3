"""The `netloom` command against the real service: Django's live HTTP server, a real database, runs
trained by the real training task in process, an explanation computed by the real job.

Walks what a newcomer met with the client: two runs' Python sources exported into one folder, a
run list that names the runs, a cancelled run's export pointing at its kept checkpoints, and an
explanation that names the class it predicted.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from netloom.cli import main

pytestmark = pytest.mark.django_db(transaction=True)

SPEC = {
    "version": 1,
    "inputs": [{"id": "x", "shape": [4], "dtype": "float32"}],
    "nodes": [
        {"id": "fc1", "op": "Linear", "params": {"out_features": 16}, "inputs": ["x"]},
        {"id": "act", "op": "ReLU", "inputs": ["fc1"]},
        {"id": "fc2", "op": "Linear", "params": {"out_features": 3}, "inputs": ["act"]},
    ],
    "outputs": ["fc2"],
}


@pytest.fixture
def service(live_server: Any, settings: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A signed-in `netloom` (NETLOOM_URL/NETLOOM_TOKEN) against the live server; team A's iris."""
    import uuid

    from django.contrib.auth import get_user_model

    from webapp.accounts.services.memberships import membership_add
    from webapp.accounts.services.teams import team_create
    from webapp.accounts.services.tokens import token_create
    from webapp.celery import app
    from webapp.datasets.services import dataset_builtin_create
    from webapp.settings import caches

    settings.MEDIA_ROOT = tmp_path / "media"
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    settings.NETLOOM_DATASET_PROCESSING = "sync"
    settings.CACHES = caches("redis", settings.REDIS_URL, f"test-{uuid.uuid4().hex}")
    settings.RUNS_LEASE_SECONDS = 30.0
    previous = app.conf.broker_url
    app.conf.broker_url = "memory://"  # what the service queues stays in this process
    app._pool = None
    team = team_create(name="Team A")
    user = get_user_model().objects.create_user(username="alice", password="pw")
    membership_add(team=team, user=user, role="admin")
    _, token = token_create(user=user, name="cli")
    for name in ("NETLOOM_CONFIG",):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("NETLOOM_URL", live_server.url)
    monkeypatch.setenv("NETLOOM_TOKEN", token)
    dataset = dataset_builtin_create(team=team, name="iris", builtin="iris", options={}, created_by=user)
    yield SimpleNamespace(team=team, user=user, dataset=dataset)
    app.conf.broker_url = previous
    app._pool = None


def trained(service: Any, *, name: str, graph: str = "iris mlp") -> Any:
    """A run trained for real (2 epochs, in process), as a worker would."""
    from webapp.graphs.services import graph_create
    from webapp.runs.models import Run
    from webapp.runs.services import run_create
    from workers.runs import train_run

    revision = graph_create(team=service.team, name=graph, spec=SPEC, created_by=service.user).revisions.get()
    run = run_create(user=service.user, team=service.team, graph_revision=revision, dataset=service.dataset,
                     config={"epochs": 2, "device": "cpu"}, name=name)
    assert train_run(run.pk) == "succeeded"
    return Run.objects.get(pk=run.pk)


def test_two_runs_python_exports_land_side_by_side_and_the_list_names_the_runs(
    service: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second = trained(service, name="narrow one"), trained(service, name="second try")
    out = tmp_path / "exports"
    for run in (first, second):
        assert main(["export", str(run.pk), "--format", "python", "--out", str(out)]) == 0, capsys.readouterr()
    written = sorted(path.name for path in out.iterdir())
    assert written == sorted([f"iris_mlp_run{first.pk}.py", f"iris_mlp_run{second.pk}.py"])
    capsys.readouterr()

    assert main(["runs", "list"]) == 0
    header, *rows = capsys.readouterr().out.splitlines()
    assert header.split()[:3] == ["ID", "NAME", "TEAM"]
    assert any(row.startswith(f"{second.pk}") and "second try" in row for row in rows)
    assert any("narrow one" in row for row in rows)


def test_a_cancelled_runs_export_points_at_its_kept_checkpoint(
    service: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from webapp.runs.models import Run, RunStatus

    run = trained(service, name="stopped")
    # Stopped after its epochs were kept: the run has checkpoints but no export of its own.
    Run.objects.filter(pk=run.pk).update(status=RunStatus.CANCELLED)
    assert main(["export", str(run.pk), "--out", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "has not succeeded (cancelled)" in err and "run_not_trained" in err
    hint = next(line for line in err.splitlines() if line.startswith("hint:"))
    name = hint.split("--checkpoint ")[1].split()[0]
    assert name in {"best", "epoch-0002"}, hint
    assert main(["export", str(run.pk), "--checkpoint", name, "--out", str(tmp_path)]) == 0
    assert f"-run{run.pk}-{name}.safetensors" in capsys.readouterr().out


def test_explain_names_the_predicted_class(
    service: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from webapp.jobs.models import Job
    from workers.jobs import job_execute

    run = trained(service, name="for explaining")

    def worker_turn(seconds: float) -> None:
        """While the command waits, the explanation's job runs (here, in the test's own thread)."""
        for job in Job.objects.filter(kind="runs.explain", state="queued"):
            job_execute(job.pk)

    monkeypatch.setattr("netloom.resources.jobs.time.sleep", worker_turn)
    assert main(["explain", str(run.pk), "--index", "0", "--method", "saliency"]) == 0
    out = capsys.readouterr().out
    prediction = next(line for line in out.splitlines() if "prediction:" in line)
    assert any(f"{name} (class " in prediction for name in ("setosa", "versicolor", "virginica")), out


def test_models_formats_builds_pt2_and_int8_and_prints_their_figures(
    service: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    import yaml

    from netloom.client import Client
    from webapp.jobs.models import Job
    from webapp.registry.services import model_create, version_create
    from workers.jobs import job_execute

    run = trained(service, name="for formats")
    model = model_create(team=service.team, name="flowers", created_by=service.user)
    version_create(model=model, run=run, created_by=service.user)

    def worker_turn(seconds: float) -> None:
        """While the command waits, the formats' job runs (here, in the test's own thread)."""
        for job in Job.objects.filter(kind="registry.formats", state="queued"):
            job_execute(job.pk)

    monkeypatch.setattr("netloom.resources.jobs.time.sleep", worker_turn)
    assert main(["models", "formats", str(model.pk), "1"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("pt2: model.pt2 ") and "\nint8: model.int8.pt2 " in out and "vs fp32" in out, out
    assert main(["models", "kserve", str(model.pk), "1"]) == 0
    manifest = yaml.safe_load(capsys.readouterr().out)
    assert manifest["kind"] == "InferenceService"
    import os

    with Client(os.environ["NETLOOM_URL"], os.environ["NETLOOM_TOKEN"]) as client:
        path = client.model_download(model.pk, 1, format="int8", out=tmp_path / "got")
    assert path.name == "flowers-v1-model.int8.pt2" and path.stat().st_size > 0
