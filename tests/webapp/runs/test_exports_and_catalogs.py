"""Engine catalogs for the browser's forms, export readiness (queued once), progress on the stream.

Tasks go to the in-memory broker (conftest.py) after the commit: `commits` runs the on-commit
callbacks that the test's own transaction would otherwise hold back.
"""

from __future__ import annotations

from typing import Any

import pytest

from webapp.jobs.models import Job
from webapp.runs.models import Run, RunEvent, RunStatus


def _export_jobs(run: Run) -> list[Job]:
    """The run's "runs.export" jobs, oldest first (its export status is the latest one's)."""
    return list(Job.objects.filter(kind="runs.export", subject_id=run.pk).order_by("created_at", "id"))


def _export_sent(run: Run) -> list[tuple[str, str]]:
    """What sending the run's export jobs puts on the short queue: jobs.run with each job's id."""
    return [("jobs.run", f"[{job.pk}]") for job in _export_jobs(run)]


def _finish_export(run_id: int, error: str = "") -> None:
    """A worker claims the run's queued export job and records its outcome (ready, or failed)."""
    from webapp.jobs.services import job_claim, job_error, job_finish

    job = Job.objects.filter(kind="runs.export", subject_id=run_id, state="queued").get()
    claimed = job_claim(job_id=job.pk)
    assert claimed is not None
    assert job_finish(job_id=job.pk, attempt=claimed.attempts, error=job_error(error) if error else None)


def _short_queue_tasks() -> list[tuple[str, str]]:
    """(task name, args) of every message waiting on the in-memory broker's "short" queue (drained)."""
    from webapp.celery import app
    from webapp.queues import SHORT_QUEUE

    found: list[tuple[str, str]] = []
    with app.connection_for_read() as conn:
        channel = conn.default_channel
        while (message := channel.basic_get(SHORT_QUEUE, no_ack=True)) is not None:
            found.append((message.headers["task"], message.headers.get("argsrepr", "")))
    return found


@pytest.fixture
def commits(django_capture_on_commit_callbacks: Any) -> Any:
    """Context manager: run what the services queue on commit when the block ends."""
    return lambda: django_capture_on_commit_callbacks(execute=True)


@pytest.fixture
def trained_run(run_a: Any, valid_spec: dict[str, Any]) -> Run:
    """run_a marked succeeded, with a real export folder (safetensors, model.py, JSON; no ONNX yet)."""
    from engine.build import build
    from engine.export import export_dir
    from webapp.runs.selectors import run_export_dir

    Run.objects.filter(pk=run_a.pk).update(status=RunStatus.SUCCEEDED)
    run_a.refresh_from_db()
    export_dir(build(run_a.graph_revision.spec, seed=0), run_a.graph_revision.spec, run_a.config, {},
               run_export_dir(run_a), onnx=False)
    _short_queue_tasks()  # start from an empty queue
    return run_a


def test_config_schema_is_the_engines_with_its_defaults(api_a: Any, api_b: Any, anon: Any) -> None:
    from engine.train import TrainConfig

    answer = api_a.get("/api/runs/config-schema/")
    assert answer.status_code == 200
    body = answer.json()
    assert body["schema"] == TrainConfig.model_json_schema()
    assert body["defaults"] == TrainConfig().model_dump(mode="json")
    assert body["defaults"]["epochs"] == 10 and body["schema"]["properties"]["optimizer"]
    assert api_b.get("/api/runs/config-schema/").json() == body  # no team data in it
    assert anon.get("/api/runs/config-schema/").status_code == 401


def test_explanation_methods_are_the_engines(api_a: Any, anon: Any) -> None:
    from engine.explain import METHODS

    answer = api_a.get("/api/explanations/methods/")
    assert answer.status_code == 200
    methods = answer.json()["methods"]
    assert methods == METHODS
    assert {"integrated_gradients", "saliency"} <= {m["name"] for m in methods}
    assert all(set(m) >= {"name", "label", "has_delta", "needs_layer", "help"} for m in methods)
    assert anon.get("/api/explanations/methods/").status_code == 401


def test_a_queued_run_offers_no_downloads(api_a: Any, run_a: Any) -> None:
    exports = api_a.get(f"/api/runs/{run_a.pk}/").json()["exports"]
    assert exports == {"status": "none", "safetensors": False, "python": False, "config": False,
                       "zip": False, "onnx": False, "note": ""}


def test_two_pending_onnx_requests_queue_one_export(api_a: Any, trained_run: Run, commits: Any) -> None:
    url = f"/api/runs/{trained_run.pk}/export/?format=onnx"
    before = api_a.get(f"/api/runs/{trained_run.pk}/").json()["exports"]
    assert before["safetensors"] and before["python"] and before["zip"] and before["onnx"] is False

    with commits():
        first = api_a.get(url)
    with commits():
        second = api_a.get(url)
    assert first.status_code == second.status_code == 409
    assert first.json()["error"]["code"] == second.json()["error"]["code"] == "export_pending"
    assert second.json()["error"]["exports"]["onnx"] == "pending"
    jobs = _export_jobs(trained_run)
    assert [job.state for job in jobs] == ["queued"]  # pending, asked for once
    assert _short_queue_tasks() == _export_sent(trained_run)
    assert api_a.get(f"/api/runs/{trained_run.pk}/").json()["exports"]["onnx"] == "pending"


def test_a_failed_export_is_shown_and_asking_again_queues_it_again(api_a: Any, trained_run: Run, commits: Any) -> None:
    from webapp.runs.inference.exports import run_export_request

    with commits():
        assert run_export_request(run=trained_run) is True
        assert run_export_request(run=trained_run) is False
    _finish_export(trained_run.pk, error="export failed: disk full")
    exports = api_a.get(f"/api/runs/{trained_run.pk}/").json()["exports"]
    assert exports["status"] == "failed" and exports["onnx"] == "unavailable" and "disk full" in exports["note"]
    event = RunEvent.objects.filter(run=trained_run, type="export").get()
    assert event.data["exports"]["onnx"] == "unavailable"

    with commits():
        assert api_a.get(f"/api/runs/{trained_run.pk}/export/?format=onnx").status_code == 409
    assert [job.state for job in _export_jobs(trained_run)] == ["failed", "queued"]  # pending again
    assert _short_queue_tasks() == _export_sent(trained_run)


def test_a_finished_export_offers_the_onnx_file(api_a: Any, trained_run: Run, commits: Any) -> None:
    from webapp.runs.inference.exports import run_export_request
    from webapp.runs.selectors import run_export_dir

    with commits():
        run_export_request(run=trained_run)
    (run_export_dir(trained_run) / "model.onnx").write_bytes(b"onnx bytes")
    _finish_export(trained_run.pk)
    exports = api_a.get(f"/api/runs/{trained_run.pk}/").json()["exports"]
    assert exports["status"] == "ready" and exports["onnx"] is True
    download = api_a.get(f"/api/runs/{trained_run.pk}/export/?format=onnx")
    assert download.status_code == 200 and b"".join(download.streaming_content) == b"onnx bytes"
    assert _short_queue_tasks() == _export_sent(trained_run)  # only the one asked for
    assert len(_export_jobs(trained_run)) == 1


def test_the_python_source_downloads_under_a_name_of_its_run_that_imports(
    api_a: Any, trained_run: Run, tmp_path: Any
) -> None:
    import importlib.util

    answer = api_a.get(f"/api/runs/{trained_run.pk}/export/?format=python")
    assert answer.status_code == 200
    name = f"mlp_run{trained_run.pk}.py"
    assert answer["Content-Disposition"].endswith(f'filename="{name}"')
    path = tmp_path / name
    path.write_bytes(b"".join(answer.streaming_content))
    assert path.stem.isidentifier()  # `from mlp_run<id> import Net`
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    import torch

    assert any(isinstance(v, type) and issubclass(v, torch.nn.Module) for v in vars(module).values())


def test_the_offered_downloads_follow_the_export_folders_files(api_a: Any, trained_run: Run) -> None:
    """Each answer reads the folder again (a kept detail included): a file gone is no longer
    offered, a folder under a file's name is not that file, a link to a file is one."""
    from webapp.runs.selectors import run_export_dir

    folder = run_export_dir(trained_run)

    def exports() -> dict[str, Any]:
        return api_a.get(f"/api/runs/{trained_run.pk}/").json()["exports"]

    assert exports()["safetensors"] and exports()["python"] and exports()["config"]  # the second one kept
    (folder / "model.safetensors").unlink()
    (folder / "model.safetensors").mkdir()
    (folder / "model.onnx").symlink_to(folder / "model.py")
    after = exports()
    assert after["safetensors"] is False and after["python"] is True and after["onnx"] is True
    for name in ("model.py", "config.json"):
        (folder / name).unlink()
    after = exports()
    assert after["python"] is False and after["config"] is False and after["onnx"] is False  # a dangling link


def test_finishing_a_run_queues_its_export_once_and_status_events_carry_progress(api_a: Any, run_a: Any,
                                                                                 commits: Any) -> None:
    from webapp.runs.inference.exports import run_export_request
    from webapp.runs.scheduling.leases import run_heartbeat, run_lease_take
    from webapp.runs.services import run_finish
    from webapp.runs.stream.events import events_since, flatten

    token = run_lease_take(run_id=run_a.pk, worker="w")
    assert token
    run_heartbeat(run_id=run_a.pk, lease_token=token,
                  run_fields={"step": 20, "epoch": 2.0, "total_steps": 20, "eta_seconds": 0.0})
    _short_queue_tasks()
    with commits():
        assert run_finish(run_id=run_a.pk, lease_token=token, status=RunStatus.SUCCEEDED,
                          final_metrics={"test/accuracy": 0.9})
        assert [job.state for job in _export_jobs(run_a)] == ["queued"]  # pending, asked for once
        assert run_export_request(run=run_a) is False  # the page asking too does not queue a second one
    assert len(_export_jobs(run_a)) == 1
    assert _short_queue_tasks() == _export_sent(run_a)

    statuses = [e for e in flatten(events_since(run_id=run_a.pk)) if e["type"] == "status"]
    assert [e["status"] for e in statuses] == ["queued", "running", "succeeded"]
    assert statuses[0]["progress"] == {"epoch": 0.0, "step": 0, "total_steps": None, "fraction": None, "eta_seconds": None}
    assert statuses[-1]["progress"] == {"epoch": 2.0, "step": 20, "total_steps": 20, "fraction": 1.0, "eta_seconds": None}
    assert statuses[-1]["final_metrics"] == {"test/accuracy": 0.9}
    assert statuses[-1]["exports"]["onnx"] == "pending"


@pytest.mark.django_db(transaction=True)
def test_the_workers_live_metric_events_carry_progress(run_a: Any, settings: Any) -> None:
    from asgiref.sync import async_to_sync
    from channels.layers import get_channel_layer

    from webapp.runs.scheduling.leases import run_lease_take
    from webapp.runs.stream.events import run_group
    from workers.recorder import RunRecorder

    settings.RUNS_FLUSH_SECONDS = 0.01
    layer = get_channel_layer()
    channel = async_to_sync(layer.new_channel)()
    async_to_sync(layer.group_add)(run_group(run_a.pk), channel)
    token = run_lease_take(run_id=run_a.pk, worker="w")
    recorder = RunRecorder(run_a.pk, token)
    recorder.progress(step=0, epoch=0.0, total_steps=8)
    recorder.start()
    for step in (1, 2, 3, 4):
        recorder.progress(step=step, epoch=step / 4)
        recorder.log(step, step / 4, {"train/loss": 1.0 / step})
    recorder.close()

    published: list[dict[str, Any]] = []
    while len([e for e in published if e["type"] == "metric"]) < 4:
        published += async_to_sync(layer.receive)(channel)["events"]
    metrics = [e for e in published if e["type"] == "metric"]
    assert [e["progress"]["step"] for e in metrics] == [1, 2, 3, 4]
    assert all(e["progress"]["total_steps"] == 8 for e in metrics)
    assert metrics[-1]["progress"]["fraction"] == 0.5 and metrics[-1]["progress"]["epoch"] == 1.0
    assert set(metrics[-1]["progress"]) == {"epoch", "step", "total_steps", "fraction", "eta_seconds"}
    running = [e for e in published if e["type"] == "status"]
    assert all("progress" in e for e in running)
