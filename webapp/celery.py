"""The Celery app, configured from Django settings (namespace CELERY) with sensible defaults.

Workers: `celery -A webapp.celery worker -Q train -c 1` on training machines (one per GPU) and
`celery -A webapp.celery worker -Q short` for explanations, exports and dataset processing, so a
two-second job never waits behind a two-hour run. `make run` starts one worker on both queues.
"""

from __future__ import annotations

import os

from celery import Celery
from kombu import Exchange, Queue

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")

TRAIN_QUEUE = "train"
SHORT_QUEUE = "short"

app = Celery("netloom", include=["workers.runs", "workers.datasets"])

DEFAULTS = {
    # One exchange per queue: a bare Queue("train") would bind to the default exchange with
    # the default routing key, and a message for "short" would land in both queues.
    "task_queues": (
        Queue(TRAIN_QUEUE, Exchange(TRAIN_QUEUE), routing_key=TRAIN_QUEUE),
        Queue(SHORT_QUEUE, Exchange(SHORT_QUEUE), routing_key=SHORT_QUEUE),
    ),
    "task_default_queue": SHORT_QUEUE,
    "task_routes": {
        "runs.train": {"queue": TRAIN_QUEUE},
        "runs.explain": {"queue": SHORT_QUEUE},
        "runs.export": {"queue": SHORT_QUEUE},
        "runs.reap": {"queue": SHORT_QUEUE},
        "datasets.process": {"queue": SHORT_QUEUE},
    },
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
    "broker_transport_options": {"visibility_timeout": 6 * 3600},
    "broker_connection_retry_on_startup": True,
    # A restarted Redis must not stop a two-hour run (Celery 6 flips this default to True).
    "worker_cancel_long_running_tasks_on_connection_loss": False,
    "task_ignore_result": True,
    "worker_send_task_events": False,
    # For deployments that run `celery beat`; workers also reap on a timer (workers/runs.py).
    "beat_schedule": {"runs.reap": {"task": "runs.reap", "schedule": 30.0}},
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
