"""The run tasks called in-process: training records, leases, the reaper, cancel, explanations."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from webapp.runs.events import events_since, flatten
from webapp.runs.models import MetricPoint, Run, RunStatus

pytestmark = pytest.mark.django_db(transaction=True)


def test_train_task_stores_every_point_once_and_exports(iris_run: Any) -> None:
    from workers.runs import train_run

    run = iris_run(epochs=2)
    assert train_run(run.pk) == "succeeded"
    run.refresh_from_db()
    assert run.status == RunStatus.SUCCEEDED, run.error
    assert run.step == run.total_steps > 0
    assert run.lease_token is None
    losses = MetricPoint.objects.filter(run=run, key="train/loss").order_by("step")
    assert [p.step for p in losses] == list(range(1, run.total_steps + 1))
    assert "val/loss" in run.final_metrics and "test/accuracy" in run.final_metrics
    statuses = [e["status"] for e in flatten(events_since(run_id=run.pk)) if e["type"] == "status"]
    assert statuses == ["queued", "running", "succeeded"]
    seqs = [e["seq"] for e in flatten(events_since(run_id=run.pk))]
    assert seqs == sorted(set(seqs))
    from webapp.runs.selectors import run_export_dir

    assert (run_export_dir(run) / "model.safetensors").is_file()
    assert run.checkpoints.count() >= 2


def test_a_second_delivery_cannot_take_a_held_lease(iris_run: Any) -> None:
    from webapp.runs.services import run_lease_take
    from workers.runs import train_run

    run = iris_run()
    token = run_lease_take(run_id=run.pk, worker="first")
    assert token
    assert train_run(run.pk) == "leased elsewhere"
    run.refresh_from_db()
    assert run.lease_token == token and run.worker == "first" and run.attempts == 1


def test_reaper_interrupts_a_silent_run_and_requeues_it(iris_run: Any) -> None:
    from webapp.runs.services import run_lease_take, run_reap

    run = iris_run()
    run_lease_take(run_id=run.pk, worker="lost")
    Run.objects.filter(pk=run.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    assert run_reap() == [run.pk]
    run.refresh_from_db()
    assert run.status == RunStatus.QUEUED and run.lease_token is None
    statuses = [e["status"] for e in flatten(events_since(run_id=run.pk)) if e["type"] == "status"]
    assert statuses == ["queued", "running", "interrupted", "queued"]
    assert run_reap() == []


def test_reaper_fails_a_run_that_lost_its_worker_too_often(iris_run: Any) -> None:
    from webapp.runs.services import run_lease_take, run_reap

    run = iris_run()
    Run.objects.filter(pk=run.pk).update(max_attempts=1)
    run_lease_take(run_id=run.pk, worker="lost")
    Run.objects.filter(pk=run.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    run_reap()
    run.refresh_from_db()
    assert run.status == RunStatus.FAILED and "lost 1 times" in run.error


def test_resume_starts_from_the_last_recorded_checkpoint_so_no_step_is_missing(iris_run: Any) -> None:
    """A worker killed after writing a checkpoint but before storing the points before it."""
    from webapp.runs.models import Checkpoint
    from webapp.runs.services import run_lease_take, run_reap
    from workers.runs import train_run

    run = iris_run(epochs=3)
    assert train_run(run.pk) == "succeeded"
    total = Run.objects.get(pk=run.pk).total_steps
    first_epoch = total // 3
    # The database only got as far as epoch 1; the later checkpoint folders are still on disk.
    Checkpoint.objects.filter(run=run, step__gt=first_epoch).delete()
    MetricPoint.objects.filter(run=run, step__gt=first_epoch).delete()
    Run.objects.filter(pk=run.pk).update(status=RunStatus.QUEUED, finished_at=None)
    run_lease_take(run_id=run.pk, worker="doomed")
    Run.objects.filter(pk=run.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    run_reap()
    assert train_run(run.pk) == "succeeded"
    run.refresh_from_db()
    assert run.attempts == 3  # the first run, the doomed worker, the resume
    steps = list(MetricPoint.objects.filter(run=run, key="train/loss").order_by("step").values_list("step", flat=True))
    assert steps == list(range(1, total + 1))
    logs = [e for e in flatten(events_since(run_id=run.pk)) if e["type"] == "log"]
    assert [e["step"] for e in logs if "resumed from the checkpoint" in e["message"]] == [first_epoch]


def test_cancel_of_a_queued_run_is_immediate_and_the_task_then_does_nothing(iris_run: Any) -> None:
    from webapp.runs.services import run_cancel
    from workers.runs import train_run

    run = iris_run()
    run = run_cancel(run=run)
    assert run.status == RunStatus.CANCELLED
    assert train_run(run.pk) == "done"


def test_explanation_task_gives_attributions_and_a_png(iris_run: Any, user_a: Any) -> None:
    from webapp.runs.models import Explanation
    from webapp.runs.services import explanation_create
    from workers.runs import explain_run, export_run

    run = iris_run()
    train_run_result = __import__("workers.runs", fromlist=["train_run"]).train_run(run.pk)
    assert train_run_result == "succeeded"
    run.refresh_from_db()
    explanation = explanation_create(run=run, user=user_a, index=0, method="saliency")
    assert explain_run(explanation.pk) == "succeeded"
    explanation = Explanation.objects.get(pk=explanation.pk)
    assert explanation.result["prediction"] in (0, 1, 2)
    assert len(explanation.result["attributions"]) == 4
    assert open(explanation.png_path, "rb").read(8) == b"\x89PNG\r\n\x1a\n"
    assert explain_run(explanation.pk) == "done"  # a redelivery does nothing
    assert export_run(run.pk) == "exported"
