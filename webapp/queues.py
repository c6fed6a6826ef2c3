"""Names of the Celery queues and tasks: the one place the web side and the workers read them.

The webapp queues work by task name (it never imports `workers`); the workers register their
tasks under the same names; `webapp.celery` routes each task to its queue from `TASK_QUEUES`;
`make run` (webapp/devserver.py) starts a worker on `QUEUES`. No imports: any process can read it.
"""

from __future__ import annotations

# Long GPU/CPU training; one worker process per device.
TRAIN_QUEUE = "train"
# Explanations, exports, dataset checks, the reaper: seconds each, never behind a long run.
SHORT_QUEUE = "short"
QUEUES = (TRAIN_QUEUE, SHORT_QUEUE)

RUNS_TRAIN = "runs.train"
RUNS_EXPLAIN = "runs.explain"
RUNS_EXPORT = "runs.export"
RUNS_REAP = "runs.reap"
DATASETS_PROCESS = "datasets.process"

TASK_QUEUES: dict[str, str] = {
    RUNS_TRAIN: TRAIN_QUEUE,
    RUNS_EXPLAIN: SHORT_QUEUE,
    RUNS_EXPORT: SHORT_QUEUE,
    RUNS_REAP: SHORT_QUEUE,
    DATASETS_PROCESS: SHORT_QUEUE,
}
