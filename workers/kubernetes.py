"""Runs as Kubernetes Jobs (NETLOOM_RUNNER=kubernetes): the runs.kubernetes task.

Every run, one process or `config.nodes` pods of `config.processes` ranks, is the Indexed Job that
webapp/runs/scheduling/kubernetes.py renders, created through the Kubernetes API in its team's
Kueue LocalQueue. The task that gets the run's token (on the "kubernetes" queue):

1. writes the ranks' job.json into the run's folder on the shared media volume and creates the
   Job and its headless Service (a suspended Job of an earlier delivery is kept: it holds the run's
   place in Kueue; one that had started is deleted first, its pods may still write);
2. while Kueue holds the Job (suspended) or its pods wait for a node, records why on the run
   (`waiting_detail`: the Workload's QuotaReserved/Admitted message, the pods' scheduling), and
   stamps `queued_sent_at` so the reaper sends no second token; a cancel deletes the Job;
3. once a pod runs, takes the run's lease (the run is `running`) and trains it through
   workers/training.py as any run: `train_run_kubernetes` tails rank 0's events.jsonl into the
   recorder, turns a cancel into the ranks' stop file (they stop at one step, with a checkpoint),
   reads the Job's conditions and pods (a failed pod or an image that cannot be pulled fails the
   run with the cluster's words), and gives rank 0's result to the same export and finish;
4. deletes the Job with its pods and the Service when the run ends.

A worker killed meanwhile: its lease runs out, the reaper queues the run again, and the next
delivery deletes the started Job and creates a new one that resumes from the last checkpoint.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

from django.db import DatabaseError
from django.db.models import F
from django.utils import timezone

from engine.train.distributed import JOB_FILE, EventTail, job_outcome, job_write
from webapp.celery import app
from webapp.queues import RUNS_KUBERNETES
from webapp.runs import conf
from webapp.runs.models import TERMINAL_STATUSES, Run, RunStatus
from webapp.runs.scheduling.devices import host_name
from webapp.runs.scheduling.kubernetes import (
    ClusterApi,
    ClusterError,
    JobState,
    job_state,
    run_object_name,
    run_objects,
    team_queue_name,
    workload_waiting,
)
from webapp.runs.scheduling.leases import run_lease_take
from webapp.runs.selectors import run_data_recipe
from webapp.runs.services import run_cancel, run_finish
from workers.recorder import RunRecorder
from workers.training import rank_events, rank_job, stop_check, train_claimed

logger = logging.getLogger(__name__)


@app.task(name=RUNS_KUBERNETES, bind=True, acks_late=True, reject_on_worker_lost=True)
def kubernetes_run(self: Any, run_id: int) -> str:
    """Run `run_id` as a Kubernetes Job: create, wait for Kueue, train (watch), clean up."""
    return run_on_kubernetes(run_id, worker=self.request.hostname or host_name())


def run_on_kubernetes(run_id: int, *, worker: str, cluster: ClusterApi | None = None) -> str:
    """The task's work; the outcome's name."""
    run = Run.objects.select_related("graph_revision", "dataset").filter(pk=run_id).first()
    if run is None:
        return "missing"
    cluster = cluster or ClusterApi.from_settings()
    name = run_object_name(run_id)
    if run.status in TERMINAL_STATUSES:
        _delete(cluster, name)
        return "done"
    if run.status == RunStatus.RUNNING and run.lease_expires_at and run.lease_expires_at > timezone.now():
        return "leased elsewhere"
    if run.cancel_requested and run.status in (RunStatus.QUEUED, RunStatus.INTERRUPTED):
        run_cancel(run=run)
        _delete(cluster, name)
        return "cancelled"
    try:
        _job_submit(run, cluster)
        waited = _admission_wait(run, cluster)
    except ClusterError as exc:
        if exc.status in (0, 409) or exc.status >= 500:
            # Unreachable or busy: the run stays queued; the reaper sends its token again.
            logger.warning("run %s: the Kubernetes API failed (%s); it stays queued", run_id, exc)
            return "cluster unreachable"
        _delete(cluster, name)  # the Service made before the Job was refused
        return _refused(run, worker=worker, error=exc)
    if waited != "admitted":
        return waited
    # Also a `running` run whose lease ran out before the reaper's pass (its watcher died): the
    # lease's own condition keeps a live watcher's run.
    token = run_lease_take(run_id=run_id, worker=worker, device=_placement(run))
    if token is None:
        return "leased elsewhere"
    Run.objects.filter(pk=run_id).update(waiting_detail="")
    run.refresh_from_db()
    recorder = RunRecorder(run_id, token)
    recorder.progress(step=run.step, epoch=run.epoch, total_steps=run.total_steps)
    recorder.start()
    outcome = train_claimed(run, token=token, recorder=recorder, runner=train_run_kubernetes)
    if outcome != "lease lost":  # then another delivery owns the run and its Job
        _delete(cluster, name)
    return outcome


def _placement(run: Run) -> str:
    """What the run trains on, for its `device`: "kubernetes: 2 pods x 4 cuda"."""
    config = run.config or {}
    nodes, processes = int(config.get("nodes") or 1), int(config.get("processes") or 1)
    kind = "cuda" if run.need_kind == "gpu" else "cpu"
    return f"kubernetes: {nodes} pod{'s' if nodes != 1 else ''} x {processes} {kind}"


def _job_submit(run: Run, cluster: ClusterApi) -> None:
    """Create the run's Job and Service, after the ranks' job.json; keep a Job of an earlier
    delivery that Kueue still holds, delete one that had started."""
    name = run_object_name(run.pk)
    job = cluster.job(name)
    if job is not None and not (job.get("spec") or {}).get("suspend"):
        logger.warning("run %s: deleting its earlier Job, which had started, before a new attempt", run.pk)
        cluster.delete(name)
        deadline = time.monotonic() + float(conf.get("RUNS_K8S_STOP_GRACE_SECONDS"))
        while cluster.job(name) is not None and time.monotonic() < deadline:
            time.sleep(float(conf.get("RUNS_K8S_POLL_SECONDS")))
        job = None
    if job is not None:
        return
    folder = conf.run_dir(run.pk) / "ranks"
    job_file = job_write(folder, rank_job(run=run, recipe=run_data_recipe(run)))
    cluster.create(run_objects(run=run, job_file=str(job_file)))


def _admission_wait(run: Run, cluster: ClusterApi) -> str:
    """Wait while Kueue holds the Job or its pods wait for a node, saying why on the run;
    "admitted" once a pod runs (or the Job already ended), "cancelled" when the run was."""
    name = run_object_name(run.pk)
    queue = team_queue_name(run.team_id)
    while True:
        row = Run.objects.filter(pk=run.pk).values_list("status", "cancel_requested").first()
        if row is None or row[0] in TERMINAL_STATUSES or row[1]:
            if row is not None and row[0] in (RunStatus.QUEUED, RunStatus.INTERRUPTED):
                run_cancel(run=run)
            _delete(cluster, name)
            return "cancelled"
        job = cluster.job(name)
        if job is None:
            _job_submit(run, cluster)  # deleted outside Netloom while it waited: submit it again
            continue
        state = job_state(job, cluster.pods(name))
        if state.phase in ("running", "succeeded", "failed"):
            return "admitted"
        if (job.get("spec") or {}).get("suspend"):
            why = workload_waiting(cluster.workload(job), queue=queue)
        else:
            why = state.message
        try:
            _waiting_record(run.pk, why)
        except DatabaseError as exc:  # a busy or restarting database: the next poll writes it
            logger.warning("run %s: could not record why it waits: %s", run.pk, exc)
        time.sleep(float(conf.get("RUNS_K8S_POLL_SECONDS")))


def _waiting_record(run_id: int, why: str) -> None:
    """Record why a queued run waits (its detail shows it) and that its watcher is alive: the
    reaper re-sends a token only for a run whose `queued_sent_at` went stale."""
    now = timezone.now()
    waiting = Run.objects.filter(pk=run_id, status=RunStatus.QUEUED)
    if not waiting.exclude(waiting_detail=why[:1000]).update(waiting_detail=why[:1000], queued_sent_at=now):
        # Unchanged: only the stamp, which the run's detail does not show (its version stays).
        waiting.update(queued_sent_at=now, version=F("version"))


def _refused(run: Run, *, worker: str, error: ClusterError) -> str:
    """The Kubernetes API refused the run's objects (invalid, forbidden): fail the run, saying so."""
    token = run_lease_take(run_id=run.pk, worker=worker)
    if token is None:
        return "leased elsewhere"
    run_finish(run_id=run.pk, lease_token=token, status=RunStatus.FAILED, detail="the cluster refused the run",
               error=f"The Kubernetes API refused the run's Job (HTTP {error.status}): {error}")
    return "failed"


def _delete(cluster: ClusterApi, name: str) -> None:
    try:
        cluster.delete(name)
    except ClusterError as exc:
        logger.warning("could not delete %s (the Job's ttlSecondsAfterFinished removes it): %s", name, exc)


def train_run_kubernetes(*, run: Run, recorder: RunRecorder, monitor: Any) -> Any:
    """Watch a run's admitted Job to its end and return rank 0's result (the runner this module's
    task hands to workers/training.py's train_claimed).

    Rank 0's events come from events.jsonl on the shared volume, through the same handler as the
    ranks of one node; a cancel or a lost lease creates the stop file (every rank stops at the same
    step, with a checkpoint), and a Job still running RUNS_K8S_STOP_GRACE_SECONDS later is deleted.
    """
    from engine.train.state import TrainResult

    cluster = ClusterApi.from_settings()
    name = run_object_name(run.pk)
    folder = conf.run_dir(run.pk) / "ranks"
    job = json.loads((folder / JOB_FILE).read_text(encoding="utf-8"))
    tail = EventTail(folder, rank_events(recorder, monitor), stop_check(recorder, monitor))
    poll = float(conf.get("RUNS_K8S_POLL_SECONDS"))
    stopped_at: float | None = None
    while True:
        tail.poll()
        if tail.handler_error is not None:
            break
        state = _state(cluster, name)
        if state.phase in ("succeeded", "failed", "missing"):
            break
        if tail.stopped:
            stopped_at = stopped_at or time.monotonic()
            if time.monotonic() - stopped_at > float(conf.get("RUNS_K8S_STOP_GRACE_SECONDS")):
                _delete(cluster, name)
                state = JobState("failed", "stopped, and its pods did not end in time: deleted")
                break
        time.sleep(poll)
    tail.poll()
    if tail.handler_error is not None:
        _delete(cluster, name)
        raise tail.handler_error
    if tail.stopped and tail.result is None:
        # Stopped before rank 0 trained a step (its pods never started): nothing to keep.
        return TrainResult(status="cancelled", metrics={}, steps=int(run.step), epochs=0, task="")
    return job_outcome(job, folder, tail, failure=None if state.phase == "succeeded" else state.message)


def _state(cluster: ClusterApi, name: str) -> JobState:
    """The Job's state; an unreachable API reads as still running (the next poll asks again)."""
    try:
        return cluster.state(name)
    except ClusterError as exc:
        logger.warning("reading Job %s failed: %s", name, exc)
        return JobState("running")
