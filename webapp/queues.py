"""Names of the Celery queues and tasks: the one place the web side and the workers read them.

The webapp queues work by task name (it never imports `workers`); the workers register their
tasks under the same names; `webapp.celery` routes each task to its queue from `TASK_QUEUES`;
`make run` (webapp/devserver.py) starts a worker on `QUEUES`. No imports: any process can read it.

Training is routed by what a run needs: `train.<kind>.<devices>` (kind "cpu", "gpu", or "any"
for `device: auto`; devices 1..MAX_DEVICES, the run's processes). A worker is started with
`-Q train`; at start it swaps that name for the queues its own devices fit
(`train_queues_for`: its kind and "any", 1..its capacity), so only fitting workers consume them.
A message on a train queue is a token, not an order: the worker that takes it claims the fairest
fitting queued run (webapp/runs/scheduling/leases.py::run_claim).
"""

from __future__ import annotations

# What a training worker is started with (`-Q train`); it consumes the train queues it fits.
TRAIN_QUEUE = "train"
# Explanations, exports, the reaper: seconds each, never behind a long run.
SHORT_QUEUE = "short"
# Processing an upload (the check and summary of a dataset): up to tens of seconds for a large
# archive, so it has a queue and a worker of its own and never holds anyone's explanation.
DATASETS_QUEUE = "datasets"
QUEUES = (TRAIN_QUEUE, SHORT_QUEUE, DATASETS_QUEUE)
# With NETLOOM_RUNNER=kubernetes every run trains as a Kubernetes Job: its token goes here, to the
# worker that creates, watches and cleans up Jobs (workers/kubernetes.py; the chart's
# worker-kubernetes). Kueue, not the claim loop, decides which Job starts when.
KUBERNETES_QUEUE = "kubernetes"

# Kinds of worker, and of what a run needs ("any": `device: auto`, taken by either kind).
WORKER_KINDS = ("cpu", "gpu")
NEED_KINDS = ("cpu", "gpu", "any")
# Most devices (processes) one run may ask for.
MAX_DEVICES = 8


def train_queue(kind: str, devices: int) -> str:
    """The queue of runs that need `devices` devices of `kind` ("cpu", "gpu", "any")."""
    return f"{TRAIN_QUEUE}.{kind}.{min(max(int(devices), 1), MAX_DEVICES)}"


def train_queues_for(kind: str, capacity: int) -> list[str]:
    """The train queues a worker of `kind` with `capacity` devices consumes (what it fits)."""
    top = min(max(int(capacity), 1), MAX_DEVICES)
    return [train_queue(need, n) for need in (kind, "any") for n in range(1, top + 1)]


# Every train queue (declared on the broker, with its own exchange: webapp/celery.py).
TRAIN_QUEUES = tuple(train_queue(kind, n) for kind in NEED_KINDS for n in range(1, MAX_DEVICES + 1))
ALL_QUEUES = (TRAIN_QUEUE, *TRAIN_QUEUES, SHORT_QUEUE, DATASETS_QUEUE, KUBERNETES_QUEUE)

RUNS_TRAIN = "runs.train"
RUNS_REAP = "runs.reap"
# A run as a Kubernetes Job (NETLOOM_RUNNER=kubernetes): args [run_id], on KUBERNETES_QUEUE.
RUNS_KUBERNETES = "runs.kubernetes"
# Every job (webapp/jobs) of any kind: one task, args [job_id], on the queue its kind names.
JOBS_RUN = "jobs.run"
# Job kinds (run by jobs.run, not tasks of their own): an explanation, a run's ONNX and zip, an
# evaluation asked for asynchronously (on SHORT_QUEUE), an upload's processing (on DATASETS_QUEUE).
RUNS_EXPLAIN = "runs.explain"
RUNS_EXPORT = "runs.export"
RUNS_EVALUATE = "runs.evaluate"
# A registered version's formats for other runtimes (.pt2, int8), built and measured (SHORT_QUEUE).
REGISTRY_FORMATS = "registry.formats"
# What an older server sent for an upload; the worker still takes it (workers/datasets.py).
DATASETS_PROCESS = "datasets.process"

# runs.train names its queue at each send (train_queue of the run's need); this is the fallback.
TASK_QUEUES: dict[str, str] = {
    RUNS_TRAIN: train_queue("any", 1),
    RUNS_REAP: SHORT_QUEUE,
    RUNS_KUBERNETES: KUBERNETES_QUEUE,
    JOBS_RUN: SHORT_QUEUE,
    DATASETS_PROCESS: DATASETS_QUEUE,
}
