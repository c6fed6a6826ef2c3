"""The run tasks called in-process: training records, leases, the reaper, cancel, explanations."""

from __future__ import annotations

import itertools
import threading
import time
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from webapp.metrics.series import metric_series_read
from webapp.runs.models import Run, RunStatus
from webapp.runs.stream.events import events_since, flatten

pytestmark = pytest.mark.django_db(transaction=True)


def test_train_task_stores_every_point_once_and_exports(iris_run: Any) -> None:
    from workers.runs import train_run

    run = iris_run(epochs=2)
    assert train_run(run.pk) == "succeeded"
    run.refresh_from_db()
    assert run.status == RunStatus.SUCCEEDED, run.error
    assert run.step == run.total_steps > 0
    assert run.lease_token is None
    losses = metric_series_read(series=[(run.pk, "train/loss")])[(run.pk, "train/loss")]
    assert [step for step, _, _ in losses] == list(range(1, run.total_steps + 1))
    assert "val/loss" in run.final_metrics and "test/accuracy" in run.final_metrics
    statuses = [e["status"] for e in flatten(events_since(run_id=run.pk)) if e["type"] == "status"]
    assert statuses == ["queued", "running", "succeeded"]
    seqs = [e["seq"] for e in flatten(events_since(run_id=run.pk))]
    assert seqs == sorted(set(seqs))
    from webapp.runs.selectors import run_export_dir

    assert (run_export_dir(run) / "model.safetensors").is_file()
    assert run.checkpoints.count() >= 2


def test_a_second_delivery_cannot_take_a_held_lease(iris_run: Any) -> None:
    from webapp.runs.scheduling.leases import run_lease_take
    from workers.runs import train_run

    run = iris_run()
    token = run_lease_take(run_id=run.pk, worker="first")
    assert token
    assert train_run(run.pk) == "leased elsewhere"
    run.refresh_from_db()
    assert run.lease_token == token and run.worker == "first" and run.attempts == 1


def test_reaper_interrupts_a_silent_run_and_requeues_it(iris_run: Any) -> None:
    from webapp.runs.scheduling.leases import run_lease_take
    from webapp.runs.scheduling.reaper import run_reap

    run = iris_run()
    run_lease_take(run_id=run.pk, worker="lost")
    Run.objects.filter(pk=run.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    assert run_reap() == [run.pk]
    run.refresh_from_db()
    assert run.status == RunStatus.QUEUED and run.lease_token is None
    statuses = [e["status"] for e in flatten(events_since(run_id=run.pk)) if e["type"] == "status"]
    assert statuses == ["queued", "running", "interrupted", "queued"]
    assert run_reap() == []


def test_a_workers_reaper_never_takes_back_the_run_its_own_process_trains(iris_run: Any, settings: Any) -> None:
    """A whole process stalled past the lease (a busy host): when it wakes, its reaper thread may
    run before its recorder's heartbeat. It must leave that run alone; a run nobody here holds
    is still reaped, and once the recorder is closed its run is reaped like any other."""
    from webapp.runs.scheduling.leases import run_lease_take
    from workers.recorder import RunRecorder
    from workers.runs import reap_runs

    settings.RUNS_HEARTBEAT_SECONDS = 3600.0  # the recorder renews nothing while the test looks
    trained, lost = iris_run(), iris_run()
    recorder = RunRecorder(trained.pk, run_lease_take(run_id=trained.pk, worker="here")).start()
    run_lease_take(run_id=lost.pk, worker="gone")
    expire = Run.objects.filter(pk__in=[trained.pk, lost.pk])
    try:
        expire.update(lease_expires_at=timezone.now() - timedelta(seconds=1))
        assert reap_runs() == [lost.pk]
        assert Run.objects.get(pk=trained.pk).status == RunStatus.RUNNING
    finally:
        recorder.close()
    expire.update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    assert reap_runs() == [trained.pk]
    assert Run.objects.get(pk=trained.pk).status == RunStatus.QUEUED


def test_a_reaper_that_woke_late_waits_one_pass_for_the_heartbeats(iris_run: Any) -> None:
    """The host stood still (the reaper's 1 s sleep took 10 s): a lease that ran out meanwhile gets
    one more pass for its holder's heartbeat, which renews it; one that is still out then is reaped."""
    from webapp.runs.scheduling.leases import run_heartbeat, run_lease_take
    from workers.runs import reaper_pass

    renewed, lost = iris_run(), iris_run()
    token = run_lease_take(run_id=renewed.pk, worker="frozen too")
    run_lease_take(run_id=lost.pk, worker="gone")
    Run.objects.filter(pk__in=[renewed.pk, lost.pk]).update(lease_expires_at=timezone.now() - timedelta(seconds=1))

    assert reaper_pass(slept=10.0, interval=1.0, skipped=False) is True
    assert set(Run.objects.filter(pk__in=[renewed.pk, lost.pk]).values_list("status", flat=True)) == {"running"}
    assert run_heartbeat(run_id=renewed.pk, lease_token=token)  # its holder wakes too
    # The next pass reaps, late or not: a host that is always late still reaps.
    assert reaper_pass(slept=10.0, interval=1.0, skipped=True) is False
    assert Run.objects.get(pk=lost.pk).status == RunStatus.QUEUED
    assert Run.objects.get(pk=renewed.pk).status == RunStatus.RUNNING
    assert reaper_pass(slept=1.0, interval=1.0, skipped=False) is False


def test_a_reaper_waits_a_pass_while_its_process_claims_a_run(iris_run: Any) -> None:
    """A lease is stamped before the claim commits (a lock wait, a slow fsync): until the claiming
    task's recorder has started and renewed it, the reaper of the same process leaves it."""
    from webapp.runs.scheduling.leases import run_lease_take
    from workers import runs as worker_runs

    run = iris_run()
    run_lease_take(run_id=run.pk, worker="claiming")
    Run.objects.filter(pk=run.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    worker_runs._claiming.set()
    try:
        assert worker_runs.reaper_pass(slept=1.0, interval=1.0, skipped=False) is True
        assert Run.objects.get(pk=run.pk).status == RunStatus.RUNNING
        assert worker_runs.reaper_pass(slept=1.0, interval=1.0, skipped=True) is False  # never two in a row
    finally:
        worker_runs._claiming.clear()
    assert Run.objects.get(pk=run.pk).status == RunStatus.QUEUED


def test_a_claimed_runs_recorder_renews_its_lease_at_once(iris_run: Any, settings: Any) -> None:
    """The recorder's first heartbeat comes when it starts, not a heartbeat interval later."""
    from webapp.runs.scheduling.leases import run_lease_take
    from workers.recorder import RunRecorder

    settings.RUNS_HEARTBEAT_SECONDS = 3600.0
    run = iris_run()
    recorder = RunRecorder(run.pk, run_lease_take(run_id=run.pk, worker="here"))
    Run.objects.filter(pk=run.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    recorder.start()
    try:
        deadline = timezone.now() + timedelta(seconds=30)
        while Run.objects.get(pk=run.pk).lease_expires_at < timezone.now():
            assert timezone.now() < deadline, "the lease was never renewed"
            time.sleep(0.05)
    finally:
        recorder.close()


def test_a_lease_taken_after_waiting_for_a_lock_counts_from_when_it_was_taken(iris_run: Any, settings: Any) -> None:
    """A claim whose UPDATE waited for another transaction's lock longer than a lease commits a
    lease that runs from when it was taken, not one already run out that a reaper would take back."""
    from django.db import connection, connections, transaction

    from webapp.runs.scheduling.leases import run_lease_take

    if connection.vendor != "postgresql":
        pytest.skip("a row lock held by a second connection (the PostgreSQL pass); SQLite's test database is in memory")
    settings.RUNS_LEASE_SECONDS = 1.0
    run = iris_run()
    locked, released = threading.Event(), {}

    def hold_the_row() -> None:
        try:
            with transaction.atomic():
                Run.objects.select_for_update().get(pk=run.pk)
                locked.set()
                time.sleep(1.5)
                released["at"] = timezone.now()
        finally:
            connections.close_all()

    holder = threading.Thread(target=hold_the_row)
    holder.start()
    assert locked.wait(30)
    token = run_lease_take(run_id=run.pk, worker="here")
    holder.join()
    taken = Run.objects.get(pk=run.pk)
    assert token is not None and taken.lease_token == token
    assert taken.lease_expires_at >= released["at"] + timedelta(seconds=1.0)


def test_reaper_fails_a_run_that_lost_its_worker_too_often(iris_run: Any) -> None:
    from webapp.runs.scheduling.leases import run_lease_take
    from webapp.runs.scheduling.reaper import run_reap

    run = iris_run()
    Run.objects.filter(pk=run.pk).update(max_attempts=1)
    run_lease_take(run_id=run.pk, worker="lost")
    Run.objects.filter(pk=run.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    run_reap()
    run.refresh_from_db()
    assert run.status == RunStatus.FAILED and "lost 1 times" in run.error


def test_resume_starts_from_the_last_recorded_checkpoint_so_no_step_is_missing(iris_run: Any) -> None:
    """A worker killed after writing checkpoint folders but before recording them: the resume
    starts from the last recorded one and trains every step after it again."""
    from webapp.runs.models import Checkpoint
    from webapp.runs.scheduling.leases import run_lease_take
    from webapp.runs.scheduling.reaper import run_reap
    from workers.runs import train_run

    run = iris_run(epochs=3)
    assert train_run(run.pk) == "succeeded"
    total = Run.objects.get(pk=run.pk).total_steps
    first_epoch = total // 3
    # The database only recorded epoch 1's checkpoint; the later folders are still on disk.
    Checkpoint.objects.filter(run=run, step__gt=first_epoch).delete()
    before = Run.objects.get(pk=run.pk).event_seq  # what the resume writes comes after this
    Run.objects.filter(pk=run.pk).update(status=RunStatus.QUEUED, finished_at=None)
    run_lease_take(run_id=run.pk, worker="doomed")
    Run.objects.filter(pk=run.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    run_reap()
    assert train_run(run.pk) == "succeeded"
    run.refresh_from_db()
    assert run.attempts == 3  # the first run, the doomed worker, the resume
    # The resume trained every step after the checkpoint again: each got a new point.
    redone = [e["step"] for e in flatten(events_since(run_id=run.pk, since=before))
              if e["type"] == "metric" and "train/loss" in e["values"]]
    assert redone == list(range(first_epoch + 1, total + 1))
    stored = metric_series_read(series=[(run.pk, "train/loss")])[(run.pk, "train/loss")]
    assert [step for step, _, _ in stored] == list(range(1, total + 1))
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
    from webapp.jobs.models import Job
    from webapp.runs.inference.explanations import explanation_create
    from webapp.runs.models import Explanation
    from workers.jobs import job_execute

    run = iris_run()
    train_run_result = __import__("workers.runs", fromlist=["train_run"]).train_run(run.pk)
    assert train_run_result == "succeeded"
    run.refresh_from_db()
    explanation = explanation_create(run=run, user=user_a, index=0, method="saliency")
    job = Job.objects.get(kind="runs.explain", subject_id=explanation.pk)
    assert job_execute(job.pk) == "done"
    explanation = Explanation.objects.get(pk=explanation.pk)
    assert explanation.result["prediction"] in (0, 1, 2)
    assert len(explanation.result["attributions"]) == 4
    assert open(explanation.png_path, "rb").read(8) == b"\x89PNG\r\n\x1a\n"
    assert job_execute(job.pk) == "not queued"  # a redelivery does nothing
    export = Job.objects.get(kind="runs.export", subject_id=run.pk)  # created as the run succeeded
    assert job_execute(export.pk) == "done"


def sent_train_messages() -> list[list[Any]]:
    """Take every runs.train token off the (in-memory) train queues; their args."""
    from webapp.celery import app
    from webapp.queues import TRAIN_QUEUES

    sent = []
    with app.connection_for_read() as conn:
        channel = conn.default_channel
        for queue in TRAIN_QUEUES:
            while (message := channel.basic_get(queue, no_ack=True)) is not None:
                assert message.headers["task"] == "runs.train"
                sent.append(message.decode()[0])
    return sent


def test_reaper_sends_a_long_queued_run_again_once_per_interval(iris_run: Any, settings: Any) -> None:
    from webapp.runs.scheduling.reaper import run_reap
    from webapp.runs.services import run_cancel

    settings.RUNS_REQUEUE_QUEUED_SECONDS = 120.0
    fresh = iris_run()
    old = iris_run()
    cancelled = iris_run()
    run_cancel(run=cancelled)
    sent_train_messages()  # what run_create queued
    now = timezone.now()
    long_ago = now - timedelta(seconds=121)
    Run.objects.filter(pk__in=[old.pk, cancelled.pk]).update(queued_sent_at=long_ago)

    assert run_reap(now=now) == []  # nothing was interrupted
    assert sent_train_messages() == [[old.pk]], "only the run queued longer than the interval"
    old.refresh_from_db()
    assert old.status == RunStatus.QUEUED and old.queued_sent_at == now
    logs = [e for e in flatten(events_since(run_id=old.pk)) if e["type"] == "log"]
    assert len(logs) == 1 and logs[0]["level"] == "warning" and "sent again" in logs[0]["message"]
    assert "121 s" in logs[0]["message"]
    assert not [e for e in flatten(events_since(run_id=fresh.pk)) if e["type"] == "log"]

    run_reap(now=now + timedelta(seconds=60))
    assert sent_train_messages() == [], "at most once per interval"
    run_reap(now=now + timedelta(seconds=121))
    assert sorted(sent_train_messages()) == sorted([[old.pk], [fresh.pk]])

    # A token trains the fairest queued run (old: its higher priority), not necessarily the one it
    # names; tokens are interchangeable, and a surplus one finds nothing (test_cancel_...: "done").
    from workers.runs import train_run

    Run.objects.filter(pk=old.pk).update(priority=1)
    assert train_run(fresh.pk) == "succeeded"
    assert Run.objects.get(pk=old.pk).status == RunStatus.SUCCEEDED
    run_reap(now=now + timedelta(seconds=400))
    assert sent_train_messages() == [[fresh.pk]], "a run that left the queue is never sent again"


def test_a_run_older_than_the_sent_field_counts_from_its_creation(iris_run: Any) -> None:
    from webapp.runs.scheduling.reaper import run_resend_queued

    run = iris_run()
    sent_train_messages()
    Run.objects.filter(pk=run.pk).update(queued_sent_at=None)
    assert run_resend_queued() == []
    assert run_resend_queued(now=timezone.now() + timedelta(seconds=121)) == [run.pk]
    assert sent_train_messages() == [[run.pk]]


def test_re_sends_back_off_so_a_run_waiting_behind_a_long_one_gets_few_duplicates(
    iris_run: Any, settings: Any
) -> None:
    from webapp.runs.scheduling.reaper import run_resend_queued

    settings.RUNS_REQUEUE_QUEUED_SECONDS = 120.0
    run = iris_run()
    sent_train_messages()
    start = Run.objects.get(pk=run.pk).created_at
    sends = [t for t in range(0, 7200, 10) if run_resend_queued(now=start + timedelta(seconds=t))]
    # Each send waits as long again as the run had waited at the previous one (10 s probes).
    assert sends[0] == 120 and all(b >= 2 * a - 10 for a, b in itertools.pairwise(sends)), sends
    assert len(sends) <= 7, "two hours in the queue cost only a handful of duplicate messages"
    assert len(sent_train_messages()) == len(sends)


def test_a_run_whose_volume_stays_full_fails_naming_it_after_its_attempts(
    iris_run: Any, settings: Any, tmp_path: Any
) -> None:
    """runs.train in this process with its runs folder on a full 1 MiB tmpfs: queued again while it
    has attempts left (the reason on its stream), then failed with that reason."""
    from tests.stack.faults import fill_volume, mount_tmpfs, unmount
    from workers.runs import train_run

    volume = tmp_path / "runs"
    not_mounted = mount_tmpfs(volume, mib=1)
    if not_mounted:
        pytest.skip(f"mounting a small tmpfs is not permitted here: {not_mounted}")
    try:
        settings.RUNS_ROOT = str(volume)
        settings.RUNS_SPACE_WAIT_SECONDS = 0.0
        fill_volume(volume, leave=0)
        run = iris_run(epochs=1)
        Run.objects.filter(pk=run.pk).update(max_attempts=2)
        assert train_run(run.pk) == "requeued: volume full"
        run.refresh_from_db()
        assert run.status == RunStatus.QUEUED and run.lease_token is None
        details = [e.get("detail", "") for e in flatten(events_since(run_id=run.pk)) if e["type"] == "status"]
        assert f"No space left on the volume {volume}" in details[-1] and "(attempt 2 of 2)" in details[-1]
        assert train_run(run.pk) == "failed"
        run.refresh_from_db()
        assert run.status == RunStatus.FAILED
        assert run.error.startswith(f"No space left on the volume {volume}") and "gave up after 2 attempts" in run.error
    finally:
        unmount(volume)
