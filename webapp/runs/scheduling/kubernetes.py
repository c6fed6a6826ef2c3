"""A multi-node run as Kubernetes objects: an indexed Job whose pods run PyTorch's elastic launcher.

One function renders them, `multinode_job`: a headless Service (the pods' stable names, pod 0's
is the c10d rendezvous endpoint) and an Indexed Job of `nodes` pods, each running

    python -m torch.distributed.run --nnodes N --nproc-per-node P --rdzv-backend c10d
        --rdzv-endpoint <job>-0.<service>:29400 --rdzv-id run-<id> --max-restarts 0
        -m engine.train.distributed <job folder>/job.json

the entry point the worker's own launcher starts on one node (engine/train/distributed.py), so the
same code trains either way. Every pod reads the same job folder on the shared media volume; each
rank writes its own `rank-N.json`/`.safetensors` there and rank 0 the events the worker tails.

Pure data, no Django and no Kubernetes client: `make k8s-manifests` writes an example beside the
chart's objects, and tests/test_k8s.py validates it and runs its pods' exact commands and
environment as local processes. Nothing here creates objects on a cluster yet (docs/deploy.md).
"""

from __future__ import annotations

from typing import Any

RDZV_PORT = 29400
MEDIA_MOUNT = "/data/media"


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
    settings_config_map: str = "netloom-netloom",
    secret: str = "netloom-netloom",
    resources: dict[str, Any] | None = None,
    node_selector: dict[str, str] | None = None,
    tolerations: list[dict[str, Any]] | None = None,
    queue: str | None = None,
) -> list[dict[str, Any]]:
    """[headless Service, Indexed Job] training run `run_id` on `nodes` pods of `processes_per_node`
    ranks each. `job_file` is the job's `job.json` as the pods see it (under MEDIA_MOUNT). `queue`:
    a Kueue LocalQueue's name, as the `kueue.x-k8s.io/queue-name` label (the Job then starts
    suspended until Kueue admits it)."""
    if nodes < 1 or processes_per_node < 1:
        raise ValueError(f"nodes ({nodes}) and processes_per_node ({processes_per_node}) must be at least 1")
    name = f"netloom-run-{run_id}"
    labels = {"app.kubernetes.io/name": "netloom", "app.kubernetes.io/component": "run", "netloom.dev/run": str(run_id)}
    job_labels = {**labels, **({"kueue.x-k8s.io/queue-name": queue} if queue else {})}
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
        "securityContext": {"runAsNonRoot": True, "runAsUser": 10001, "runAsGroup": 10001, "fsGroup": 10001},
        "containers": [{
            "name": "ranks",
            "image": image,
            "command": command,
            "envFrom": [{"configMapRef": {"name": settings_config_map}}, {"secretRef": {"name": secret}}],
            "env": [{"name": "PYTHONUNBUFFERED", "value": "1"}],
            "ports": [{"name": "rendezvous", "containerPort": RDZV_PORT}],
            "resources": {"requests": requests, "limits": limits},
            "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
            "volumeMounts": [{"name": "media", "mountPath": MEDIA_MOUNT}, {"name": "shm", "mountPath": "/dev/shm"}],
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
