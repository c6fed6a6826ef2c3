"""A multi-node run as Kubernetes objects: an indexed Job whose pods run PyTorch's elastic launcher.

One function renders them, `multinode_job`: a headless Service (the pods' stable names, pod 0's
is the c10d rendezvous endpoint) and an Indexed Job of `nodes` pods, each running

    python -m torch.distributed.run --nnodes N --nproc-per-node P --rdzv-backend c10d
        --rdzv-endpoint <job>-0.<service>:29400 --rdzv-id run-<id> --max-restarts 0
        -m engine.train.distributed <job folder>/job.json

the entry point the worker's own launcher starts on one node (engine/train/distributed.py), so the
same code trains either way. Every pod reads the same job folder on the shared media volume; each
rank writes its own `rank-N.json`/`.safetensors` there and rank 0 the events the worker tails.

`multinode_job` is pure data: `make k8s-manifests` writes an example beside the chart's objects,
and tests/test_k8s.py validates it and runs its pods' exact commands and environment as local
processes. With NETLOOM_RUNNER=kubernetes every run is such a Job (one node of one process too):
`run_objects` renders a run's with its team's Kueue LocalQueue and priority class, `ClusterApi`
is the few calls the runner makes through the Kubernetes API (the official client), and
`job_state` / `workload_waiting` read what the cluster says into a run's words
(workers/kubernetes.py drives them; docs/decisions/0022-kubernetes-runner-and-kueue.md).

The pods get no database or Redis credentials: they write rank 0's events, the checkpoints and each
rank's outcome as files in the run's folder on the shared media volume, and the worker that created
the Job tails them into the run, as it tails its own ranks on one node.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

RDZV_PORT = 29400
MEDIA_MOUNT = "/data/media"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
KUEUE_API = "kueue.x-k8s.io/v1beta2"


def run_object_name(run_id: int) -> str:
    """The name of a run's Job and headless Service."""
    return f"netloom-run-{run_id}"


def team_queue_name(team_id: int) -> str:
    """The Kueue LocalQueue (and ClusterQueue) of a team: by id, so a renamed team keeps its queue."""
    return f"netloom-team-{team_id}"


def priority_class_name(priority: int) -> str:
    """The WorkloadPriorityClass of a run's priority (-10..10): netloom-priority-3, -minus-2."""
    return f"netloom-priority-{priority}" if priority >= 0 else f"netloom-priority-minus-{-priority}"


def multinode_job(
    *,
    run_id: int,
    job_file: str,
    nodes: int,
    processes_per_node: int,
    image: str,
    gpus_per_node: int = 0,
    media_claim: str = "netloom-media",
    namespace: str = "netloom",
    resources: dict[str, Any] | None = None,
    node_selector: dict[str, str] | None = None,
    tolerations: list[dict[str, Any]] | None = None,
    queue: str | None = None,
    priority_class: str | None = None,
    media_mount: str = MEDIA_MOUNT,
) -> list[dict[str, Any]]:
    """[headless Service, Indexed Job] training run `run_id` on `nodes` pods of `processes_per_node`
    ranks each. `job_file` is the job's `job.json` as the pods see it (under `media_mount`, where
    the media volume is mounted: the workers' MEDIA_ROOT, so the paths in job.json hold). `queue`:
    a Kueue LocalQueue's name, as the `kueue.x-k8s.io/queue-name` label (the Job then starts
    suspended until Kueue admits it); `priority_class`: a Kueue WorkloadPriorityClass."""
    if nodes < 1 or processes_per_node < 1:
        raise ValueError(f"nodes ({nodes}) and processes_per_node ({processes_per_node}) must be at least 1")
    name = run_object_name(run_id)
    labels = {"app.kubernetes.io/name": "netloom", "app.kubernetes.io/component": "run", "netloom.dev/run": str(run_id)}
    job_labels = {**labels, **({QUEUE_LABEL: queue} if queue else {}),
                  **({PRIORITY_LABEL: priority_class} if queue and priority_class else {})}
    limits = dict((resources or {}).get("limits") or {"cpu": "4", "memory": "16Gi"})
    requests = dict((resources or {}).get("requests") or {"cpu": "2", "memory": "8Gi"})
    if gpus_per_node:
        limits["nvidia.com/gpu"] = requests["nvidia.com/gpu"] = gpus_per_node
    command = [
        "python", "-m", "torch.distributed.run",
        "--nnodes", str(nodes), "--nproc-per-node", str(processes_per_node),
        "--rdzv-backend", "c10d", "--rdzv-endpoint", f"{name}-0.{name}:{RDZV_PORT}",
        "--rdzv-id", f"run-{run_id}", "--max-restarts", "0",
        "-m", "engine.train.distributed", job_file,
    ]
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "clusterIP": "None",
            "selector": {"job-name": name},
            "ports": [{"name": "rendezvous", "port": RDZV_PORT}],
            # Pod 0 must be reachable by name before it is ready: it is the rendezvous.
            "publishNotReadyAddresses": True,
        },
    }
    pod = {
        "subdomain": name,
        "restartPolicy": "Never",
        # The ranks run a user's graph: no token for the Kubernetes API, no settings, no secrets.
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "securityContext": {"runAsNonRoot": True, "runAsUser": 10001, "runAsGroup": 10001, "fsGroup": 10001},
        "containers": [{
            "name": "ranks",
            "image": image,
            "command": command,
            "env": [{"name": "PYTHONUNBUFFERED", "value": "1"}],
            "ports": [{"name": "rendezvous", "containerPort": RDZV_PORT}],
            "resources": {"requests": requests, "limits": limits},
            "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
            "volumeMounts": [{"name": "media", "mountPath": media_mount}, {"name": "shm", "mountPath": "/dev/shm"}],
        }],
        "volumes": [
            {"name": "media", "persistentVolumeClaim": {"claimName": media_claim}},
            {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "2Gi"}},
        ],
    }
    if node_selector:
        pod["nodeSelector"] = node_selector
    if tolerations:
        pod["tolerations"] = tolerations
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "labels": job_labels},
        "spec": {
            "completionMode": "Indexed",
            "completions": nodes,
            "parallelism": nodes,
            # One failed pod fails the run: the worker queues it again from its last checkpoint.
            "backoffLimit": 0,
            "suspend": bool(queue),
            "ttlSecondsAfterFinished": 3600,
            "template": {"metadata": {"labels": dict(labels)}, "spec": pod},
        },
    }
    return [service, job]


# --- a run as that Job, through the Kubernetes API (NETLOOM_RUNNER=kubernetes) -----------------


def run_objects(*, run: Any, job_file: str) -> list[dict[str, Any]]:
    """A run's [Service, Job] with this deployment's settings: its `config.nodes` pods of
    `config.processes` ranks, in its team's LocalQueue with its priority's class; GPUs per pod are
    its processes when its device is cuda (NETLOOM_K8S_RUN_POD shapes the pods)."""
    from django.conf import settings

    config = run.config or {}
    nodes, processes = int(config.get("nodes") or 1), int(config.get("processes") or 1)
    gpu = run.need_kind == "gpu"
    pod = dict(settings.NETLOOM_K8S_RUN_POD or {})
    resources = None
    if pod.get("cpu") or pod.get("memory"):
        shape = {"cpu": str(pod.get("cpu") or "2"), "memory": str(pod.get("memory") or "8Gi")}
        resources = {"requests": dict(shape), "limits": dict(shape)}
    node_selector = dict(pod.get("nodeSelector") or {})
    if gpu:
        node_selector.update(pod.get("gpuNodeSelector") or {})
    return multinode_job(
        run_id=run.pk, job_file=job_file, nodes=nodes, processes_per_node=processes, image=settings.NETLOOM_IMAGE,
        gpus_per_node=processes if gpu else 0, media_claim=settings.NETLOOM_MEDIA_CLAIM,
        namespace=settings.NETLOOM_K8S_NAMESPACE, media_mount=str(settings.MEDIA_ROOT), resources=resources, node_selector=node_selector or None,
        tolerations=list(pod.get("tolerations") or []) or None, queue=team_queue_name(run.team_id),
        priority_class=priority_class_name(int(run.priority or 0)),
    )


@dataclass(frozen=True)
class JobState:
    """Where a run's Job stands, in the run's words: phase "missing" | "waiting" (suspended by
    Kueue, or its pods not scheduled yet) | "running" | "succeeded" | "failed"; message says why."""

    phase: str
    message: str = ""


# A container that waits for one of these never starts: the run fails with the kubelet's message.
_NEVER_STARTS = {"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "CreateContainerConfigError",
                 "CreateContainerError"}


def job_state(job: dict[str, Any] | None, pods: list[dict[str, Any]]) -> JobState:
    """Read a Job and its pods: its conditions (Complete, Failed), a failed pod (the ranks' exit,
    an image that cannot be pulled), suspension and scheduling."""
    if job is None:
        return JobState("missing", "the Job is gone (deleted outside Netloom?)")
    status = job.get("status") or {}
    conditions = {c.get("type"): c for c in status.get("conditions") or [] if c.get("status") == "True"}
    if "Complete" in conditions:
        return JobState("succeeded")
    for pod in pods:
        name = (pod.get("metadata") or {}).get("name", "a pod")
        for container in (pod.get("status") or {}).get("containerStatuses") or []:
            waiting = (container.get("state") or {}).get("waiting") or {}
            if waiting.get("reason") in _NEVER_STARTS:
                return JobState("failed", f"pod {name} cannot start: {waiting['reason']}: {waiting.get('message', '')}".rstrip(": "))
            ended = (container.get("state") or {}).get("terminated") or {}
            if ended and ended.get("exitCode", 0) != 0:
                why = ended.get("reason") or "Error"
                return JobState("failed", f"pod {name} ended with exit code {ended['exitCode']} ({why})")
    if "Failed" in conditions:
        failed = conditions["Failed"]
        return JobState("failed", f"the Job failed: {failed.get('reason', '')} {failed.get('message', '')}".strip())
    if (job.get("spec") or {}).get("suspend"):
        return JobState("waiting", "suspended until Kueue admits it")
    if int(status.get("active") or 0) and any((p.get("status") or {}).get("phase") == "Running" for p in pods):
        return JobState("running")
    for pod in pods:
        for condition in (pod.get("status") or {}).get("conditions") or []:
            if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
                return JobState("waiting", f"admitted; its pods wait for a node: {condition.get('message', '')}".rstrip(": "))
    return JobState("waiting", "admitted; its pods are starting")


def workload_waiting(workload: dict[str, Any] | None, *, queue: str) -> str:
    """Why Kueue has not admitted a Workload yet, from its conditions (QuotaReserved, Admitted,
    Evicted: Kueue's own message, e.g. "couldn't assign flavors to pod set main: insufficient
    quota for nvidia.com/gpu ..."); "" once admitted."""
    if workload is None:
        return f"waiting for Kueue to take it into queue {queue}"
    conditions = {c.get("type"): c for c in (workload.get("status") or {}).get("conditions") or []}
    if (conditions.get("Admitted") or {}).get("status") == "True":
        return ""
    for kind in ("Evicted", "QuotaReserved", "Admitted"):
        condition = conditions.get(kind) or {}
        if condition.get("message") and (kind != "Evicted" or condition.get("status") == "True"):
            return f"Kueue ({queue}): {condition['message']}"
    return f"Kueue ({queue}): pending"


class ClusterError(Exception):
    """The Kubernetes API refused or could not be reached; `status` is its HTTP status (0: unreached)."""

    def __init__(self, message: str, *, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


class ClusterApi:
    """The calls the runner makes, through the official client's ApiClient (its configuration,
    authentication and TLS), with JSON in and out: create a run's objects, read its Job, pods and
    Kueue Workload, delete them (the Job with its pods)."""

    def __init__(self, *, namespace: str, url: str = "") -> None:
        from kubernetes import client, config

        if url:
            configuration = client.Configuration()
            configuration.host = url.rstrip("/")
        else:
            try:
                config.load_incluster_config()
            except config.ConfigException:
                config.load_kube_config()
            configuration = client.Configuration.get_default_copy()
        self._client = client.ApiClient(configuration)
        self.namespace = namespace

    @classmethod
    def from_settings(cls) -> ClusterApi:
        """The API and namespace of NETLOOM_K8S_API_URL / NETLOOM_K8S_NAMESPACE."""
        from django.conf import settings

        return cls(namespace=settings.NETLOOM_K8S_NAMESPACE, url=settings.NETLOOM_K8S_API_URL)

    def _call(self, method: str, path: str, *, body: Any = None, query: dict[str, str] | None = None,
              missing_ok: bool = False) -> dict[str, Any] | None:
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        headers = {"Accept": "application/json", **({"Content-Type": "application/json"} if body is not None else {})}
        try:
            method, url, headers, data, _ = self._client.param_serialize(
                method=method, resource_path=path, query_params=list((query or {}).items()),
                header_params=headers, body=body, auth_settings=["BearerToken"])
            response = self._client.call_api(method, url, header_params=headers, body=data, _request_timeout=30)
            response.read()
        except ApiException as exc:
            if missing_ok and exc.status == 404:
                return None
            raise ClusterError(_api_message(exc.body) or str(exc.reason), status=int(exc.status or 0)) from None
        except (HTTPError, OSError) as exc:
            raise ClusterError(f"the Kubernetes API is unreachable: {exc}") from None
        if missing_ok and response.status == 404:
            return None
        if response.status >= 300:
            raise ClusterError(_api_message(response.data) or f"HTTP {response.status}", status=response.status)
        return json.loads(response.data or b"{}")

    def _jobs(self) -> str:
        return f"/apis/batch/v1/namespaces/{self.namespace}/jobs"

    def _services(self) -> str:
        return f"/api/v1/namespaces/{self.namespace}/services"

    def create(self, objects: list[dict[str, Any]]) -> bool:
        """Create a run's Service and Job (the server refuses unknown fields); False when the Job
        already existed (an earlier delivery's: the caller decides whether to keep it)."""
        created = True
        for obj in objects:
            path = self._jobs() if obj["kind"] == "Job" else self._services()
            try:
                self._call("POST", path, body=obj, query={"fieldValidation": "Strict"})
            except ClusterError as exc:
                if exc.status != 409:
                    raise
                if obj["kind"] == "Job":
                    created = False
        return created

    def job(self, name: str) -> dict[str, Any] | None:
        """The Job, or None."""
        return self._call("GET", f"{self._jobs()}/{name}", missing_ok=True)

    def pods(self, name: str) -> list[dict[str, Any]]:
        """The Job's pods."""
        found = self._call("GET", f"/api/v1/namespaces/{self.namespace}/pods", query={"labelSelector": f"job-name={name}"})
        return list((found or {}).get("items") or [])

    def state(self, name: str) -> JobState:
        """job_state of the named Job."""
        job = self.job(name)
        return job_state(job, self.pods(name) if job is not None else [])

    def workload(self, job: dict[str, Any]) -> dict[str, Any] | None:
        """The Kueue Workload of a Job (Kueue labels it with the Job's uid), or None."""
        uid = (job.get("metadata") or {}).get("uid")
        if not uid:
            return None
        found = self._call("GET", f"/apis/{KUEUE_API}/namespaces/{self.namespace}/workloads",
                           query={"labelSelector": f"kueue.x-k8s.io/job-uid={uid}"}, missing_ok=True)
        items = list((found or {}).get("items") or [])
        return items[0] if items else None

    def delete(self, name: str) -> None:
        """Delete a run's Job with its pods (propagation Foreground: the pods go first) and its
        Service; nothing to delete is fine."""
        self._call("DELETE", f"{self._jobs()}/{name}", missing_ok=True,
                   body={"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Foreground"})
        self._call("DELETE", f"{self._services()}/{name}", missing_ok=True)


def _api_message(body: Any) -> str:
    """The `message` of a Kubernetes Status answer, else the body as text."""
    if not body:
        return ""
    try:
        return str(json.loads(body).get("message") or "")
    except (ValueError, AttributeError):
        return body.decode(errors="replace")[:500] if isinstance(body, bytes) else str(body)[:500]
