"""What the runs app tells the apps above it, without importing them.

`run_finished` is sent (after the commit) whenever a run reaches a terminal status: the worker's
outcome (`run_finish`), a cancel before training started (`run_cancel`), the reaper giving up
(`run_reap`). Receivers get `run_id` and `status`; the sweeps app schedules its next trials on it.
A receiver that raises is logged, never passed on to the run's own path.
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import transaction
from django.dispatch import Signal

logger = logging.getLogger(__name__)

run_finished = Signal()


def run_finished_send(*, run_id: int, status: str) -> None:
    """Send `run_finished` once the current transaction commits (at once outside one)."""

    def send() -> None:
        for receiver, result in run_finished.send_robust(sender=None, run_id=run_id, status=status):
            if isinstance(result, Exception):
                logger.error("run_finished receiver %r failed for run %s", receiver, run_id, exc_info=result)

    transaction.on_commit(send)


def connect_name_receivers() -> None:
    """A run's detail shows its graph's and dataset's names and its creator's username: a save that
    changes one moves the version of the runs that show it (Run.version, the detail's cache key).
    pre_save reads the name the row had; post_save, after the write, moves the versions.
    Connected by RunsConfig.ready()."""
    from django.contrib.auth import get_user_model
    from django.db.models.signals import post_save, pre_save

    from webapp.datasets.models import Dataset
    from webapp.graphs.models import Graph

    from .models import Run

    def watch(model: Any, name: str, filter_name: str) -> None:
        def before(sender: Any, instance: Any, update_fields: Any = None, **_: Any) -> None:
            changed = False
            if instance.pk is not None and (update_fields is None or name in update_fields):
                was = sender._base_manager.filter(pk=instance.pk).values_list(name, flat=True).first()
                changed = was is not None and was != getattr(instance, name)
            instance._netloom_name_changed = changed

        def after(sender: Any, instance: Any, created: bool, **_: Any) -> None:
            if not created and getattr(instance, "_netloom_name_changed", False):
                Run.objects.filter(**{filter_name: instance.pk}).touch()
                instance._netloom_name_changed = False

        label = f"runs.{model._meta.label_lower}.{name}"
        pre_save.connect(before, sender=model, weak=False, dispatch_uid=f"{label}.before")
        post_save.connect(after, sender=model, weak=False, dispatch_uid=f"{label}.after")

    watch(Graph, "name", "graph_revision__graph_id")
    watch(Dataset, "name", "dataset_id")
    watch(get_user_model(), "username", "created_by_id")
