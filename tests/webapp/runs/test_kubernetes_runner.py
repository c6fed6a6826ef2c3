"""NETLOOM_RUNNER=kubernetes: a run as a Kubernetes Job, created, watched, cancelled and deleted
through the Kubernetes API by the worker (workers/kubernetes.py).

No kube-apiserver can be installed on this machine (not on PyPI, npm or Debian), so the API is a
stand-in (tests/webapp/runs/k8s_standin.py) that validates every posted object strictly against
the Kubernetes 1.33 schemas, and whose "kubelet" runs each pod's exact command as a local process:
the training is real, the ranks rendezvous over loopback and report through the shared folder.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("kubernetes_validate")  # the stand-in's check (a dev dependency)

from tests.webapp.runs.k8s_standin import KUEUE_PENDING, StandInCluster  # noqa: E402

pytestmark = pytest.mark.django_db(transaction=True)

CONFIG = {"epochs": 2, "batch_size": 16, "log_every": 1, "device": "cpu", "seed": 3}


@pytest.fixture
def cluster(settings: Any, tmp_path: Any) -> Any:
    """The stand-in API, and this deployment pointed at it (runs in tmp, tasks to memory)."""
    from webapp.celery import app

    standin = StandInCluster(namespace="netloom")
    settings.NETLOOM_RUNNER = "kubernetes"
    settings.NETLOOM_K8S_API_URL = standin.url
    settings.NETLOOM_K8S_NAMESPACE = "netloom"
    settings.NETLOOM_K8S_RUN_POD = {"cpu": "2", "memory": "4Gi"}
    settings.NETLOOM_DEVICES = ["auto"]  # the cluster's nodes, whatever they have
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.RUNS_LEASE_SECONDS = 30.0
    settings.RUNS_K8S_POLL_SECONDS = 0.1
    settings.RUNS_K8S_STOP_GRACE_SECONDS = 60.0
    previous = app.conf.broker_url
    app.conf.broker_url = "memory://"
    app._pool = None
    yield standin
    standin.close()
    app.conf.broker_url = previous
    app._pool = None


def create(api: Any, graph: Any, dataset: Any, **config: Any) -> dict[str, Any]:
    answer = api.post("/api/runs/", {"graph": graph.pk, "revision": 1, "dataset": dataset.pk,
                                      "config": {**CONFIG, **config}}, format="json")
    assert answer.status_code == 201, answer.content
    return answer.json()


class Runner:
    """The runs.kubernetes task's work on a thread of its own (the worker's), as Celery would run it."""

    def __init__(self, run_id: int) -> None:
        from django.db import connection

        from workers.kubernetes import run_on_kubernetes

        self.outcome: list[str] = []

        def work() -> None:
            try:
                self.outcome.append(run_on_kubernetes(run_id, worker="worker-kubernetes@test"))
            finally:
                connection.close()

        self.thread = threading.Thread(target=work, daemon=True)
        self.thread.start()

    def result(self, timeout: float = 300) -> str:
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "the runner did not end"
        return self.outcome[0]


def until(what: Callable[[], Any], timeout: float = 120, message: str = "") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = what()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {message or what}")


def call(request: Callable[[], Any]) -> Any:
    """An API call made while the worker's threads write: the tests' in-memory SQLite (shared
    cache) answers "table is locked" to a reader meanwhile, which PostgreSQL never does; retried."""
    from django.db import OperationalError

    for _ in range(100):
        try:
            answer = request()
        except OperationalError:  # the test client raises what the view raised
            time.sleep(0.1)
            continue
        if answer.status_code != 500:
            return answer
        time.sleep(0.1)
    raise AssertionError("the database stayed locked")


def locked_retry(write: Callable[[], Any]) -> Any:
    """A write from the test's thread while the worker's threads write (see `call`)."""
    from django.db import OperationalError

    for _ in range(100):
        try:
            return write()
        except OperationalError:
            time.sleep(0.1)
    raise AssertionError("the database stayed locked")


def detail(api: Any, run_id: int) -> dict[str, Any]:
    return call(lambda: api.get(f"/api/runs/{run_id}/")).json()


@pytest.mark.slow
def test_a_two_node_run_waits_for_kueue_then_trains_as_an_indexed_job_and_is_cleaned_up(
        cluster, api_a, graph_a, dataset_a, team_a):
    run = create(api_a, graph_a, dataset_a, nodes=2, processes=1)
    assert run["need"] == {"kind": "cpu", "devices": 2}
    runner = Runner(run["id"])
    name = f"netloom-run-{run['id']}"
    until(lambda: name in cluster.jobs, message="the Job")

    # The Job the worker created: valid for 1.33 (the stand-in refused nothing), two pods of one
    # rank each, in the team's Kueue queue with the run's priority class, suspended until admitted.
    assert cluster.refused == []
    (service,) = [o for o in cluster.posted if o["kind"] == "Service"]
    (job,) = [o for o in cluster.posted if o["kind"] == "Job"]
    assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == f"netloom-team-{team_a.pk}"
    assert job["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] == "netloom-priority-0"
    assert job["spec"]["suspend"] is True and job["spec"]["completions"] == 2
    assert service["spec"]["clusterIP"] == "None"
    pod = job["spec"]["template"]["spec"]
    assert pod["automountServiceAccountToken"] is False
    (container,) = pod["containers"]
    assert not container.get("envFrom"), "the pods get no settings or secrets: they report through files"
    assert container["resources"]["limits"] == {"cpu": "2", "memory": "4Gi"}

    # While Kueue holds it, the run says why, in Kueue's words.
    def waiting() -> Any:
        found = detail(api_a, run["id"])
        return found if found["queue"] and found["queue"]["waiting_for"] == "kueue" and \
            KUEUE_PENDING in found["queue"]["detail"] else None

    waits = until(waiting, message="the Workload's message on the run")
    assert waits["status"] == "queued" and waits["queue"]["position"] == 1
    listed = call(lambda: api_a.get("/api/queue/")).json()
    assert [(q["id"], q["waiting_for"]) for q in listed] == [(run["id"], "kueue")]

    cluster.admit(name)
    assert runner.result() == "succeeded", cluster.logs(name)
    done = detail(api_a, run["id"])
    assert done["status"] == "succeeded", (done["error"], cluster.logs(name))
    assert done["device"] == "kubernetes: 2 pods x 1 cpu"
    assert done["final_metrics"] and done["progress"]["step"] > 0
    # Rank 0's metric points reached the run's metric store through the worker's tail.
    series = call(lambda: api_a.get(f"/api/runs/{run['id']}/metrics/")).json()
    assert series, series
    assert call(lambda: api_a.get(f"/api/runs/{run['id']}/export/?format=safetensors")).status_code == 200
    # Cleaned up: the Job with its pods (foreground) and the Service.
    assert ("Job", name, "Foreground") in cluster.deletes and ("Service", name, None) in cluster.deletes
    assert name not in cluster.jobs and not cluster.pods


def test_cancelling_a_run_kueue_holds_deletes_its_job(cluster, api_a, graph_a, dataset_a):
    run = create(api_a, graph_a, dataset_a)
    runner = Runner(run["id"])
    name = f"netloom-run-{run['id']}"
    until(lambda: cluster.workloads, message="the Workload")
    assert call(lambda: api_a.post(f"/api/runs/{run['id']}/cancel/")).status_code in (200, 202)
    assert runner.result() == "cancelled"
    assert detail(api_a, run["id"])["status"] == "cancelled"
    assert ("Job", name, "Foreground") in cluster.deletes
    assert not cluster.jobs and not cluster.services and not cluster.workloads


@pytest.mark.slow
def test_cancelling_a_training_run_stops_its_ranks_at_a_step_then_deletes_the_job(
        cluster, api_a, graph_a, dataset_a, settings):
    settings.RUNS_STEP_DELAY_SECONDS = 0.3
    run = create(api_a, graph_a, dataset_a, epochs=50)  # one process: a single-process run is a Job too
    runner = Runner(run["id"])
    name = f"netloom-run-{run['id']}"
    until(lambda: name in cluster.jobs, message="the Job")
    cluster.admit(name)
    until(lambda: detail(api_a, run["id"])["progress"]["step"] > 0, timeout=180, message="a step")
    assert call(lambda: api_a.post(f"/api/runs/{run['id']}/cancel/")).status_code in (200, 202)
    assert runner.result() == "cancelled", cluster.logs(name)
    done = detail(api_a, run["id"])
    assert done["status"] == "cancelled" and 0 < done["progress"]["step"] < 50 * 8, done
    assert ("Job", name, "Foreground") in cluster.deletes


@pytest.mark.slow
def test_a_draining_worker_stops_its_jobs_at_a_step_and_the_next_job_resumes_there(
        cluster, api_a, graph_a, dataset_a, settings):
    """worker-kubernetes scaled down or rolled (SIGTERM): as a training worker's drain."""
    import json

    from webapp.runs import conf
    from webapp.runs.scheduling.workers import worker_drain

    settings.RUNS_STEP_DELAY_SECONDS = 0.3
    run = create(api_a, graph_a, dataset_a, epochs=50)
    runner = Runner(run["id"])
    name = f"netloom-run-{run['id']}"
    until(lambda: name in cluster.jobs, message="the Job")
    cluster.admit(name)
    until(lambda: detail(api_a, run["id"])["progress"]["step"] > 0, timeout=180, message="a step")
    assert locked_retry(lambda: worker_drain(hostname="worker-kubernetes@test")) == [run["id"]]
    assert runner.result() == "requeued: worker shut down", cluster.logs(name)
    queued = detail(api_a, run["id"])
    assert queued["status"] == "queued" and queued["attempts"] == 0, queued
    assert ("Job", name, "Foreground") in cluster.deletes and name not in cluster.jobs

    again = Runner(run["id"])
    until(lambda: name in cluster.jobs, message="the second Job")
    job = json.loads((conf.run_dir(run["id"]) / "ranks" / "job.json").read_text())
    assert job["resume_from"], "the new Job resumes from the checkpoint the drain wrote"
    assert call(lambda: api_a.post(f"/api/runs/{run['id']}/cancel/")).status_code in (200, 202)
    assert again.result() == "cancelled"


def test_a_pod_whose_image_cannot_be_pulled_fails_the_run_in_the_clusters_words(cluster, api_a, graph_a, dataset_a):
    cluster.image_pull_fails = True
    run = create(api_a, graph_a, dataset_a)
    runner = Runner(run["id"])
    name = f"netloom-run-{run['id']}"
    until(lambda: name in cluster.jobs, message="the Job")
    cluster.admit(name)
    assert runner.result() == "failed"
    done = detail(api_a, run["id"])
    assert done["status"] == "failed" and "ErrImagePull" in done["error"], done["error"]
    assert ("Job", name, "Foreground") in cluster.deletes


def test_a_job_the_api_refuses_fails_the_run_with_the_apis_message(cluster, api_a, graph_a, dataset_a, settings):
    settings.NETLOOM_K8S_RUN_POD = {"cpu": "2", "memory": "4Gi", "nodeSelector": {"pool": 7}}  # not a string
    run = create(api_a, graph_a, dataset_a)
    assert Runner(run["id"]).result() == "failed"
    done = detail(api_a, run["id"])
    assert done["status"] == "failed" and "HTTP 422" in done["error"] and "nodeSelector" in done["error"], done["error"]
    assert cluster.refused and not cluster.jobs and not cluster.services  # nothing half-made is left


def test_several_nodes_need_the_kubernetes_runner(api_a, graph_a, dataset_a, settings):
    settings.NETLOOM_RUNNER = "celery"
    body = {"graph": graph_a.pk, "revision": 1, "dataset": dataset_a.pk, "config": {**CONFIG, "nodes": 2}}
    answer = api_a.post("/api/runs/", body, format="json")
    assert answer.status_code == 400
    assert "config.nodes" in answer.json()["error"]["fields"], answer.json()


@pytest.mark.parametrize(("config", "field"), [
    ({"nodes": 2, "device": "auto"}, "config.nodes"),
    ({"nodes": 3, "processes": 2, "batch_size": 16}, "config.processes"),  # 16 rows over 6 ranks
    ({"nodes": 65}, "config.nodes"),
    ({"nodes": 2, "device": "cuda:1"}, "config.processes"),
])
def test_invalid_node_combinations_are_refused_naming_the_field(cluster, api_a, graph_a, dataset_a, config, field):
    body = {"graph": graph_a.pk, "revision": 1, "dataset": dataset_a.pk, "config": {**CONFIG, **config}}
    answer = api_a.post("/api/runs/", body, format="json")
    assert answer.status_code == 400, answer.content
    assert field in answer.json()["error"]["fields"], answer.json()
    assert not cluster.posted


def test_a_team_limit_counts_every_node(cluster, api_a, graph_a, dataset_a, team_a):
    team_a.max_devices_per_run = 2
    team_a.save()
    body = {"graph": graph_a.pk, "revision": 1, "dataset": dataset_a.pk, "config": {**CONFIG, "nodes": 2, "processes": 2}}
    answer = api_a.post("/api/runs/", body, format="json")
    assert answer.status_code == 400
    assert {"config.nodes", "config.processes"} <= set(answer.json()["error"]["fields"])


# --- reading the cluster: pure functions ---------------------------------------------------------


def test_job_state_reads_conditions_pods_and_suspension():
    from webapp.runs.scheduling.kubernetes import job_state

    assert job_state(None, []).phase == "missing"
    suspended = {"spec": {"suspend": True}, "status": {}}
    assert job_state(suspended, []).phase == "waiting"
    running = {"spec": {"suspend": False}, "status": {"active": 1}}
    pod_running = {"metadata": {"name": "p0"}, "status": {"phase": "Running"}}
    assert job_state(running, [pod_running]).phase == "running"
    unscheduled = {"metadata": {"name": "p0"}, "status": {"phase": "Pending", "conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
         "message": "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."}]}}
    state = job_state(running, [unscheduled])
    assert state.phase == "waiting" and "Insufficient nvidia.com/gpu" in state.message
    crashed = {"metadata": {"name": "p1"}, "status": {"phase": "Failed", "containerStatuses": [
        {"state": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}}]}}
    state = job_state(running, [pod_running, crashed])
    assert state.phase == "failed" and "p1" in state.message and "OOMKilled" in state.message
    complete = {"spec": {}, "status": {"conditions": [{"type": "Complete", "status": "True"}]}}
    assert job_state(complete, []).phase == "succeeded"
    failed = {"spec": {}, "status": {"conditions": [{"type": "Failed", "status": "True", "reason": "DeadlineExceeded"}]}}
    assert job_state(failed, []).phase == "failed"


def test_why_it_waits_is_the_workloads_condition():
    from webapp.runs.scheduling.kubernetes import workload_waiting

    assert "netloom-team-1" in workload_waiting(None, queue="netloom-team-1")
    pending = {"status": {"conditions": [{"type": "QuotaReserved", "status": "False", "message": KUEUE_PENDING}]}}
    assert workload_waiting(pending, queue="q") == f"Kueue (q): {KUEUE_PENDING}"
    admitted = {"status": {"conditions": [{"type": "Admitted", "status": "True", "message": "admitted"}]}}
    assert workload_waiting(admitted, queue="q") == ""
    evicted = {"status": {"conditions": [
        {"type": "QuotaReserved", "status": "False", "message": "pending"},
        {"type": "Evicted", "status": "True", "message": "Preempted to accommodate a higher priority Workload"}]}}
    assert "Preempted" in workload_waiting(evicted, queue="q")


def test_a_gpu_run_over_two_nodes_asks_each_pod_for_its_processes_gpus(cluster, api_a, graph_a, dataset_a, settings):
    import kubernetes_validate

    from webapp.runs.models import Run
    from webapp.runs.scheduling.kubernetes import run_objects

    settings.NETLOOM_K8S_RUN_POD = {"cpu": "8", "memory": "32Gi", "gpuNodeSelector": {"netloom.dev/gpu-pool": "quad"},
                                    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}
    body = {"graph": graph_a.pk, "revision": 1, "dataset": dataset_a.pk, "priority": -3,
            "config": {**CONFIG, "device": "cuda", "nodes": 2, "processes": 4}}
    answer = api_a.post("/api/runs/", body, format="json")
    assert answer.status_code == 201, answer.content
    assert answer.json()["need"] == {"kind": "gpu", "devices": 8}
    run = Run.objects.get(pk=answer.json()["id"])
    service, job = run_objects(run=run, job_file=f"{settings.MEDIA_ROOT}/runs/{run.pk}/ranks/job.json")
    for doc in (service, job):
        kubernetes_validate.validate(doc, "1.33.0", strict=True)
    assert job["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] == "netloom-priority-minus-3"
    pod = job["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["resources"]["limits"] == {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": 4}
    assert pod["nodeSelector"] == {"netloom.dev/gpu-pool": "quad"} and pod["tolerations"][0]["key"] == "nvidia.com/gpu"
    argv = container["command"]
    assert argv[argv.index("--nnodes") + 1] == "2" and argv[argv.index("--nproc-per-node") + 1] == "4"
    assert container["volumeMounts"][0]["mountPath"] == str(settings.MEDIA_ROOT)
