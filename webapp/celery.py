"""The Celery app, configured from Django settings (namespace CELERY) with sensible defaults.

Queue and task names come from `webapp.queues`. Workers: `celery -A webapp.celery worker -Q train -c 1` on training machines (one per device set) and
`celery -A webapp.celery worker -Q short` for explanations, exports and jobs (`jobs.run`: dataset
processing, webapp/jobs), so a two-second job never waits behind a two-hour run. `make run` starts one worker of each.

A worker started with `-Q train` consumes, instead of "train", the per-need train queues its own
devices fit (NETLOOM_DEVICES, else CUDA_VISIBLE_DEVICES, else the CPU: webapp/runs/scheduling/devices.py);
workers/runs.py::_train_queues_for_this_worker makes that swap before the worker consumes anything.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from celery import Celery, signals
from kombu import Exchange, Queue

from webapp.logredact import redact_every_handler
from webapp.process_gc import garbage_collector_settle
from webapp.queues import ALL_QUEUES, RUNS_REAP, SHORT_QUEUE, TASK_QUEUES

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
logger = logging.getLogger(__name__)

app = Celery("netloom", include=["workers.runs", "workers.kubernetes", "workers.jobs", "workers.datasets", "workers.inference",
                                 "workers.registry"])

DEFAULTS = {
    # One exchange per queue: a bare Queue("train") would bind to the default exchange with
    # the default routing key, and a message for "short" would land in both queues.
    "task_queues": tuple(Queue(name, Exchange(name), routing_key=name) for name in ALL_QUEUES),
    "task_default_queue": SHORT_QUEUE,
    "task_routes": {task: {"queue": queue} for task, queue in TASK_QUEUES.items()},
    "task_serializer": "json",
    "result_serializer": "json",
    "accept_content": ["json"],
    # A message is acknowledged after its task ran; a killed worker's message goes back.
    "task_acks_late": True,
    "task_reject_on_worker_lost": True,
    # One message at a time per process: a long run never holds back queued work.
    "worker_prefetch_multiplier": 1,
    # Runs may outlast the visibility timeout: the run's lease (not the broker) keeps a
    # redelivered message from training it twice, so this only bounds redelivery delay.
    # A broker host that does not answer at all (no refusal) fails a send in seconds, not minutes.
    "broker_transport_options": {"visibility_timeout": 6 * 3600, "socket_connect_timeout": 3.0},
    "broker_connection_retry_on_startup": True,
    # A restarted Redis must not stop a two-hour run (Celery 6 flips this default to True).
    "worker_cancel_long_running_tasks_on_connection_loss": False,
    "task_ignore_result": True,
    "worker_send_task_events": False,
    # For deployments that run `celery beat`; workers also reap on a timer (workers/runs.py).
    "beat_schedule": {RUNS_REAP: {"task": RUNS_REAP, "schedule": 2.0}},
    "beat_scheduler": "celery.beat:Scheduler",  # in memory: no shelve (pickle) file
}


def _defaults_not_in_settings() -> dict:
    """DEFAULTS minus what Django settings name (CELERY_<KEY>): the settings always win.

    Celery's add_defaults ranks above the loaded config, so the filtering happens here.
    """
    from django.conf import settings

    return {key: value for key, value in DEFAULTS.items() if not hasattr(settings, f"CELERY_{key.upper()}")}


app.config_from_object("django.conf:settings", namespace="CELERY")
app.add_defaults(_defaults_not_in_settings)


def task_send(
    name: str, *, args: list[Any] | None = None, kwargs: dict[str, Any] | None = None, queue: str | None = None
) -> None:
    """Queue the task `name` (a `webapp.queues` name) on its queue; the webapp never imports workers.

    Through this app, not celery.current_app: in the web process the current app would be
    Celery's default (AMQP) unless this module had been imported first. `queue` overrides the
    task's own (runs.train goes to the queue of the run's need).
    """
    app.send_task(name, args=args, kwargs=kwargs, queue=queue or TASK_QUEUES[name])


# A request that sends a task must not hang on a broker that is down: a few quick tries, then
# the caller records the send as owed and the reaper sends it later (task_send_or_owe).
QUICK_PUBLISH_RETRY = {"max_retries": 2, "interval_start": 0.0, "interval_step": 0.2, "interval_max": 0.2}


def task_send_or_owe(
    name: str, *, args: list[Any] | None = None, kwargs: dict[str, Any] | None = None, queue: str | None = None
) -> str:
    """Queue the task `name` like task_send, but never raise: "" when sent, else why it was not.

    For `transaction.on_commit` senders (webapp/jobs/sending.py::send_on_commit): their row is
    committed, so a broker that is down must not turn the request into a 500 (a retrying client
    would create the row twice). The caller marks the send as owed; the reaper
    (webapp/runs/scheduling/reaper.py::run_reap, webapp/jobs/services.py::jobs_resend) sends it again.
    """
    try:
        app.send_task(name, args=args, kwargs=kwargs, queue=queue or TASK_QUEUES[name],
                      retry_policy=QUICK_PUBLISH_RETRY)
    except Exception as exc:  # kombu/redis raise many kinds; none may reach the request
        logger.warning("could not send %s %s: %s", name, args or kwargs, exc)
        return f"{type(exc).__name__}: {exc}"
    return ""


@signals.after_setup_logger.connect
@signals.after_setup_task_logger.connect
def _redact_worker_logs(**_: Any) -> None:
    """Celery replaced the root logger's handlers with its own: they carry the filter too (no
    secret in a log, webapp/logredact.py)."""
    redact_every_handler()


@signals.worker_process_init.connect
@signals.worker_ready.connect
def _garbage_collector_settle(**_: Any) -> None:
    """A worker process, once set up (a forked child, or the worker itself), tunes its garbage
    collector for serving (webapp/process_gc.py)."""
    garbage_collector_settle()
