"""Writes of the runs app: create, cancel, lease, finish, reap; explanations and exports.

Every state change of a run goes through here, with its status event stored in the same
transaction and published after the commit. Work is queued by task name on commit.
"""

from __future__ import annotations

import logging
import uuid
from datetime import timedelta
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import F, Q
from django.db.models.functions import Coalesce
from django.utils import timezone

from webapp.api.errors import ApiError, ServiceError

from . import conf
from .events import event_emit, events_publish, events_record
from .models import Explanation, ExplanationStatus, ExportStatus, Run, RunStatus

logger = logging.getLogger(__name__)

TASK_TRAIN = "runs.train"
TASK_EXPLAIN = "runs.explain"
TASK_EXPORT = "runs.export"


def task_send(name: str, *, args: list[Any], queue: str) -> None:
    """Queue a task by name (the webapp never imports workers)."""
    from webapp.celery import app

    app.send_task(name, args=args, queue=queue)


def _queue_train(run_id: int) -> None:
    transaction.on_commit(
        lambda: task_send(TASK_TRAIN, args=[run_id], queue=conf.get("RUNS_TRAIN_QUEUE"))
    )


# --- create -------------------------------------------------------------------------------


def run_config_parse(config: Any) -> dict[str, Any]:
    """The full TrainConfig as JSON (engine defaults filled in), or a 400 naming each field."""
    from engine.train.config import ConfigError, parse_config

    if config is not None and not isinstance(config, dict):
        raise ApiError(400, "invalid_config", "config must be an object.", fields={"config": ["Must be an object."]})
    try:
        parsed = parse_config(config or {})
    except ConfigError as exc:
        fields: dict[str, list[str]] = {}
        for problem in exc.problems:
            fields.setdefault(f"config.{problem['field']}", []).append(problem["message"])
        raise ApiError(400, "invalid_config", str(exc), fields=fields) from None
    return parsed.model_dump(mode="json")


def run_recipe_build(
    *, dataset: Any, transforms: dict[str, Any] | None, split: dict[str, Any] | None
) -> dict[str, Any]:
    """The run's whole DataRecipe JSON (engine defaults filled in), or a 400 naming each field."""
    from pydantic import ValidationError

    from engine.data import DataRecipe
    from webapp.datasets.selectors import dataset_recipe

    for name, value in (("transforms", transforms), ("split", split)):
        if value is not None and not isinstance(value, dict):
            raise ApiError(400, "invalid", f"{name} must be an object.", fields={name: ["Must be an object."]})
    recipe = dataset_recipe(dataset=dataset, transforms=transforms, split=split)
    try:
        return DataRecipe.model_validate(recipe).model_dump(mode="json")
    except ValidationError as exc:
        fields: dict[str, list[str]] = {}
        for err in exc.errors():
            loc = ".".join(str(p) for p in err["loc"]) or "recipe"
            fields.setdefault(loc, []).append(err["msg"])
        first = next(iter(fields.items()))
        raise ApiError(400, "invalid_recipe", f"{first[0]}: {first[1][0]}", fields=fields) from None


def run_create(
    *,
    user: AbstractBaseUser,
    team: Any,
    graph_revision: Any,
    dataset: Any,
    config: dict[str, Any] | None,
    transforms: dict[str, Any] | None = None,
    split: dict[str, Any] | None = None,
) -> Run:
    """Validate config, data recipe and graph against the dataset; store the run queued; queue training."""
    from .checks import check_dataset_trainable, check_graph_fits_dataset

    check_dataset_trainable(dataset=dataset)
    config_json = run_config_parse(config)
    recipe = run_recipe_build(dataset=dataset, transforms=transforms, split=split)
    check_graph_fits_dataset(graph_revision=graph_revision, dataset=dataset, config=config_json)
    with transaction.atomic():
        run = Run.objects.create(
            team=team,
            graph_revision=graph_revision,
            dataset=dataset,
            config=config_json,
            recipe=recipe,
            created_by=user,
            max_attempts=int(conf.get("RUNS_MAX_ATTEMPTS")),
            queued_sent_at=timezone.now(),
        )
        event_emit(run_id=run.pk, event={"type": "status", "status": RunStatus.QUEUED, "detail": "queued"})
        _queue_train(run.pk)
    run.refresh_from_db()
    return run


# --- cancel -------------------------------------------------------------------------------


def run_cancel(*, run: Run, user: AbstractBaseUser | None = None) -> Run:
    """Cancel a run: a queued one at once, a running one at the trainer's next step."""
    now = timezone.now()
    with transaction.atomic():
        stopped = Run.objects.filter(
            pk=run.pk, status__in=[RunStatus.QUEUED, RunStatus.INTERRUPTED]
        ).update(status=RunStatus.CANCELLED, cancel_requested=True, finished_at=now,
                 lease_token=None, lease_expires_at=None, eta_seconds=None)
        if stopped:
            event_emit(run_id=run.pk, event={
                "type": "status", "status": RunStatus.CANCELLED, "detail": "cancelled before training started",
            })
        else:
            flagged = Run.objects.filter(pk=run.pk, status=RunStatus.RUNNING, cancel_requested=False).update(
                cancel_requested=True
            )
            if flagged:
                who = getattr(user, "username", None) or "a user"
                event_emit(run_id=run.pk, event={
                    "type": "log", "level": "info", "message": f"cancel requested by {who}",
                })
            elif not Run.objects.filter(pk=run.pk, status=RunStatus.RUNNING).exists():
                run.refresh_from_db()
                raise ServiceError(
                    "run_finished", f"Run {run.pk} has already finished ({run.status}).", status_code=409
                )
    run.refresh_from_db()
    return run


# --- worker side: lease, heartbeat, finish, reap ---------------------------------------------


def run_lease_take(*, run_id: int, worker: str) -> str | None:
    """Take the run's lease for this delivery; None when another worker holds it or it is done.

    The conditional UPDATE is the fence: two deliveries of the same message (the broker's
    visibility timeout, a requeue by the reaper) can never both train the run.
    """
    now = timezone.now()
    token = uuid.uuid4().hex
    lease = timedelta(seconds=float(conf.get("RUNS_LEASE_SECONDS")))
    with transaction.atomic():
        taken = (
            Run.objects.filter(
                pk=run_id,
                status__in=[RunStatus.QUEUED, RunStatus.RUNNING, RunStatus.INTERRUPTED],
                cancel_requested=False,
            )
            .filter(Q(lease_token__isnull=True) | Q(lease_expires_at__lt=now))
            .update(
                lease_token=token,
                lease_expires_at=now + lease,
                heartbeat_at=now,
                worker=worker[:200],
                status=RunStatus.RUNNING,
                attempts=F("attempts") + 1,
                started_at=Coalesce("started_at", now),
                error="",
            )
        )
        if not taken:
            return None
        attempts, max_attempts = Run.objects.filter(pk=run_id).values_list("attempts", "max_attempts").get()
        detail = f"training on {worker}" + (f" (attempt {attempts} of {max_attempts})" if attempts > 1 else "")
        event_emit(run_id=run_id, event={"type": "status", "status": RunStatus.RUNNING, "detail": detail})
    return token


def run_control_read(*, run_id: int, lease_token: str) -> tuple[bool, bool]:
    """(still holds the lease, cancel requested): one indexed read, for the recorder thread."""
    row = Run.objects.filter(pk=run_id).values_list("lease_token", "cancel_requested").first()
    if row is None:
        return False, True
    return row[0] == lease_token, bool(row[1])


def run_heartbeat(*, run_id: int, lease_token: str, run_fields: dict[str, Any] | None = None) -> bool:
    """Renew the lease (and write progress); False when the lease was lost."""
    now = timezone.now()
    lease = timedelta(seconds=float(conf.get("RUNS_LEASE_SECONDS")))
    return bool(
        Run.objects.filter(pk=run_id, lease_token=lease_token).update(
            heartbeat_at=now, lease_expires_at=now + lease, **(run_fields or {})
        )
    )


def run_finish(
    *,
    run_id: int,
    lease_token: str,
    status: str,
    detail: str = "",
    final_metrics: dict[str, Any] | None = None,
    error: str = "",
    extra: dict[str, Any] | None = None,
) -> bool:
    """Record the outcome while holding the lease; False (nothing written) when it was lost."""
    now = timezone.now()
    fields: dict[str, Any] = {
        "status": status, "finished_at": now, "lease_token": None, "lease_expires_at": None,
        "error": error, "eta_seconds": None,
    }
    if final_metrics is not None:
        fields["final_metrics"] = final_metrics
    succeeded = status == RunStatus.SUCCEEDED
    if succeeded:
        # ONNX and the zip take longer: queued here, once, with the outcome (run_export_request).
        fields.update(export_status=ExportStatus.PENDING, export_requested_at=now, export_error="",
                      export_requests=F("export_requests") + 1)
    with transaction.atomic():
        if not Run.objects.filter(pk=run_id, lease_token=lease_token).update(**fields):
            return False
        event = {"type": "status", "status": status, "detail": detail or status, **(extra or {})}
        if error:
            event["error"] = error
        if final_metrics is not None:
            event["final_metrics"] = final_metrics  # the page shows them without asking again
        if succeeded:
            from .selectors import run_exports

            event["exports"] = run_exports(Run.objects.get(pk=run_id))
        event_emit(run_id=run_id, event=event)
        if succeeded:
            _queue_export(run_id)
    return True


def run_reap(*, now: Any = None) -> list[int]:
    """Mark runs whose worker stopped heartbeating `interrupted`, then requeue or fail them.

    Also re-sends runs.train for runs queued too long (run_resend_queued). Safe to run from
    many workers at once: every transition is a conditional UPDATE.
    Returns the ids of the runs it interrupted.
    """
    now = now or timezone.now()
    reaped: list[int] = []
    expired = list(
        Run.objects.filter(status=RunStatus.RUNNING, lease_expires_at__lt=now).values_list(
            "pk", "lease_token", "attempts", "max_attempts", "heartbeat_at", "step"
        )
    )
    for run_id, token, attempts, max_attempts, heartbeat_at, step in expired:
        with transaction.atomic():
            lost = Run.objects.filter(
                pk=run_id, status=RunStatus.RUNNING, lease_token=token, lease_expires_at__lt=now
            ).update(status=RunStatus.INTERRUPTED, lease_token=None, lease_expires_at=None, worker="")
            if not lost:
                continue
            reaped.append(run_id)
            since = heartbeat_at.isoformat() if heartbeat_at else "never"
            event_emit(run_id=run_id, event={
                "type": "status", "status": RunStatus.INTERRUPTED,
                "detail": f"worker lost (last heartbeat {since}, step {step})",
            })
            if attempts < max_attempts:
                Run.objects.filter(pk=run_id, status=RunStatus.INTERRUPTED).update(
                    status=RunStatus.QUEUED, queued_sent_at=now
                )
                event_emit(run_id=run_id, event={
                    "type": "status", "status": RunStatus.QUEUED,
                    "detail": f"requeued to resume from its last checkpoint (attempt {attempts + 1} of {max_attempts})",
                })
                _queue_train(run_id)
            else:
                message = f"The worker was lost {attempts} times; giving up."
                Run.objects.filter(pk=run_id, status=RunStatus.INTERRUPTED).update(
                    status=RunStatus.FAILED, finished_at=now, error=message
                )
                event_emit(run_id=run_id, event={
                    "type": "status", "status": RunStatus.FAILED, "detail": message, "error": message,
                })
    if reaped:
        logger.warning("reaped runs whose worker was lost: %s", reaped)
    run_resend_queued(now=now)
    return reaped


def run_resend_queued(*, now: Any = None) -> list[int]:
    """Send runs.train again for runs queued longer than RUNS_REQUEUE_QUEUED_SECONDS; their ids.

    The broker may have lost the message (Redis restarted without persistence before a worker
    took it); nothing else would ever train such a run. A duplicate is harmless: the delivery
    that cannot take the lease returns at once. A lost message cannot be told from one waiting
    behind a long run, so the wait doubles after each re-send (120 s, 240 s, 480 s, ...: the
    next one is due when the run has waited as long again as it had at the last send), which
    keeps a run queued behind a two-hour run to a handful of duplicates. Only the reaper whose
    conditional UPDATE of `queued_sent_at` wins sends.
    """
    now = now or timezone.now()
    interval = float(conf.get("RUNS_REQUEUE_QUEUED_SECONDS"))
    cutoff = now - timedelta(seconds=interval)
    # Rows older than the field have no queued_sent_at: their creation time stands in for it.
    stale = Q(queued_sent_at__lt=cutoff) | Q(queued_sent_at__isnull=True, created_at__lt=cutoff)
    waiting = Run.objects.filter(status=RunStatus.QUEUED, cancel_requested=False)
    resent: list[int] = []
    for run_id, sent_at, created_at in list(
        waiting.filter(stale).values_list("pk", "queued_sent_at", "created_at")
    ):
        last = sent_at or created_at
        if now - last < max(timedelta(seconds=interval), last - created_at):
            continue  # backing off: not yet waited as long again as at the last send
        with transaction.atomic():
            if not waiting.filter(pk=run_id, queued_sent_at=sent_at).update(queued_sent_at=now):
                continue  # another reaper sent it, a worker took it, or it was cancelled
            resent.append(run_id)
            waited = int((now - (sent_at or created_at)).total_seconds())
            event_emit(run_id=run_id, event={
                "type": "log", "level": "warning",
                "message": f"still queued {waited} s after training was last asked for; "
                           "sent again (the broker may have lost the message)",
            })
            _queue_train_logged(run_id)
    if resent:
        logger.warning("re-sent runs.train for runs queued too long: %s", resent)
    return resent


def _queue_train_logged(run_id: int) -> None:
    """Send runs.train after the commit; a broker error is logged (the next interval tries again)."""

    def send() -> None:
        try:
            task_send(TASK_TRAIN, args=[run_id], queue=conf.get("RUNS_TRAIN_QUEUE"))
        except Exception as exc:
            logger.warning("run %s: could not send runs.train again: %s", run_id, exc)

    transaction.on_commit(send)


# --- explanations -----------------------------------------------------------------------------


def explanation_create(
    *,
    run: Run,
    user: AbstractBaseUser,
    index: int | None = None,
    input: Any = None,  # noqa: A002 - the API's field name
    method: str,
    target: int | None = None,
    layer: str | None = None,
) -> Explanation:
    """Check the request, store the explanation queued and compute it on the short queue."""
    from engine.explain import METHODS

    if run.status != RunStatus.SUCCEEDED:
        raise ServiceError("run_not_trained", f"Run {run.pk} has not succeeded ({run.status}); nothing to explain yet.", status_code=409)
    names = [m["name"] if isinstance(m, dict) else str(m) for m in METHODS]
    if method not in names:
        raise ServiceError("invalid_method", f"Unknown method {method!r}; one of {', '.join(names)}.", field="method")
    if (index is None) == (input is None):
        raise ApiError(400, "invalid", "Give exactly one of index (a test-split row) or input (an array).",
                       fields={"index": ["Give index or input."], "input": ["Give index or input."]})
    if index is not None and (not isinstance(index, int) or isinstance(index, bool) or index < 0):
        raise ServiceError("invalid", "index must be a non-negative integer.", field="index")
    if input is not None and not isinstance(input, list):
        raise ServiceError("invalid", "input must be an array of numbers.", field="input")
    if target is not None and (not isinstance(target, int) or isinstance(target, bool) or target < 0):
        raise ServiceError("invalid", "target must be a non-negative integer (a class index).", field="target")
    sample = {"index": index} if index is not None else {"input": input}
    with transaction.atomic():
        explanation = Explanation.objects.create(
            run=run, method=method, sample=sample, target=target, layer=layer or "", created_by=user
        )
        event_emit(run_id=run.pk, event={
            "type": "explanation", "id": explanation.pk, "status": ExplanationStatus.QUEUED, "method": method,
        })
        transaction.on_commit(lambda: task_send(TASK_EXPLAIN, args=[explanation.pk], queue=conf.get("RUNS_SHORT_QUEUE")))
    return explanation


def explanation_finish(
    *, explanation_id: int, result: dict[str, Any] | None, png_path: str = "", error: str = ""
) -> None:
    """Record an explanation's outcome and announce it on its run's stream."""
    status = ExplanationStatus.FAILED if error else ExplanationStatus.SUCCEEDED
    with transaction.atomic():
        explanation = Explanation.objects.select_for_update().get(pk=explanation_id)
        explanation.status = status
        explanation.result = result
        explanation.png_path = png_path
        explanation.error = error
        explanation.finished_at = timezone.now()
        explanation.save(update_fields=["status", "result", "png_path", "error", "finished_at"])
        event = {"type": "explanation", "id": explanation_id, "status": status, "method": explanation.method}
        if error:
            event["error"] = error
        event_emit(run_id=explanation.run_id, event=event)


def explanation_mark_running(*, explanation_id: int) -> bool:
    """Move a queued explanation to running; False when it is already done (redelivery)."""
    return bool(
        Explanation.objects.filter(
            pk=explanation_id, status__in=[ExplanationStatus.QUEUED, ExplanationStatus.RUNNING]
        ).update(status=ExplanationStatus.RUNNING)
    )


# --- exports ------------------------------------------------------------------------------------


def _queue_export(run_id: int) -> None:
    """Send runs.export after the commit; a broker error marks the export failed (asking again retries)."""

    def send() -> None:
        try:
            task_send(TASK_EXPORT, args=[run_id], queue=conf.get("RUNS_SHORT_QUEUE"))
        except Exception as exc:
            logger.warning("run %s: could not queue the export: %s", run_id, exc)
            Run.objects.filter(pk=run_id, export_status=ExportStatus.PENDING).update(
                export_status=ExportStatus.FAILED, export_error=f"the export could not be queued: {exc}"
            )

    transaction.on_commit(send)


def run_export_request(*, run: Run) -> bool:
    """Queue the export task (ONNX and the zip) of a succeeded run unless one is pending.

    Idempotent: a conditional UPDATE moves the run to export_status "pending" and only the
    call that made that move queues the task, so any number of requests (two browser tabs,
    a page reload) queue it once until it finishes or fails. A pending export older than
    RUNS_EXPORT_STALE_SECONDS counts as lost and may be queued again. True when this call queued it.
    """
    now = timezone.now()
    stale = now - timedelta(seconds=float(conf.get("RUNS_EXPORT_STALE_SECONDS")))
    with transaction.atomic():
        queued = (
            Run.objects.filter(pk=run.pk, status=RunStatus.SUCCEEDED)
            .filter(~Q(export_status=ExportStatus.PENDING) | Q(export_requested_at__isnull=True)
                    | Q(export_requested_at__lt=stale))
            .update(export_status=ExportStatus.PENDING, export_requested_at=now, export_error="",
                    export_requests=F("export_requests") + 1)
        )
        if queued:
            _queue_export(run.pk)
    run.refresh_from_db()
    return bool(queued)


def run_export_finish(*, run_id: int, error: str = "") -> None:
    """Record the export task's outcome (ready, or failed with `error`) and announce it on the stream."""
    from .selectors import run_exports

    with transaction.atomic():
        Run.objects.filter(pk=run_id).update(
            export_status=ExportStatus.FAILED if error else ExportStatus.READY, export_error=error
        )
        run = Run.objects.get(pk=run_id)
        exports = run_exports(run)
        event_emit(run_id=run_id, event={"type": "export", "status": run.export_status, "exports": exports})


def run_log(*, run_id: int, message: str, level: str = "info") -> None:
    """Store and publish a log line on the run's stream."""
    with transaction.atomic():
        event_emit(run_id=run_id, event={"type": "log", "level": level, "message": message})


__all__ = [
    "run_config_parse",
    "run_create",
    "run_cancel",
    "run_lease_take",
    "run_control_read",
    "run_heartbeat",
    "run_finish",
    "run_reap",
    "run_resend_queued",
    "run_log",
    "run_export_request",
    "run_export_finish",
    "explanation_create",
    "explanation_finish",
    "explanation_mark_running",
    "events_record",
    "events_publish",
]
