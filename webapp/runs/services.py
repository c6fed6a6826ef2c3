"""Writes of the runs app: create, cancel, lease, finish, reap; explanations and exports.

Every state change of a run goes through here, with its status event stored in the same
transaction and published after the commit. Work is queued by task name (webapp/queues.py) on
commit. Refusals raise webapp.errors.DomainError (Conflict for a state that forbids the request);
webapp/api/errors.py maps them to HTTP.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Collection
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import connection, transaction
from django.db.models import F, Q
from django.db.models.functions import Coalesce
from django.utils import timezone

from webapp.errors import Conflict, DomainError
from webapp.queues import RUNS_EXPLAIN, RUNS_EXPORT, RUNS_TRAIN

from . import conf
from .devices import WorkerDevices, device_label, run_need
from .events import event_emit, finite_or_none
from .models import Explanation, ExplanationStatus, ExportStatus, Run, RunStatus, Worker
from .selectors import (
    run_download_name,
    run_export_data_info,
    run_export_dir,
    run_export_zip,
    run_exports,
    run_trained_model,
    runs_claimable,
)
from .signals import run_finished_send

logger = logging.getLogger(__name__)


def _task_send(name: str, *, args: list[Any]) -> str:
    """Queue a task by name on its queue; "" when sent, else why not (never raises).

    The webapp never imports workers, and Celery loads late. A broker that is down must not
    turn a committed write into a 500: the caller records the send as owed and run_reap sends it.
    """
    from webapp.celery import task_send_or_owe

    return task_send_or_owe(name, args=args)


def _send_on_commit(name: str, pk: int, *, owed: Any) -> None:
    """After the commit, send task `name` for `pk`; on failure call `owed(error)` (never raises)."""

    def send() -> None:
        error = _task_send(name, args=[pk])
        if error:
            owed(error)

    # robust: even a failing `owed` write is logged, never raised into the committed request.
    transaction.on_commit(send, robust=True)


def _queue_train(run_id: int, *, announce: bool = True) -> None:
    """Send a runs.train token to the run's need queue after the commit; when the broker is down,
    mark it owed for the reaper.

    The token carries the run's id, but the worker that takes it claims the fairest fitting
    queued run (run_claim), which may be another one: one token per queued run.
    """
    from webapp.queues import train_queue

    def owed(error: str) -> None:
        with transaction.atomic():
            marked = Run.objects.filter(pk=run_id, status=RunStatus.QUEUED).update(queued_send_owed=True)
            if marked and announce:
                event_emit(run_id=run_id, event={
                    "type": "log", "level": "warning",
                    "message": "the task queue is unreachable; training is asked for again as soon "
                               f"as it is back (nothing to do on your side): {error}",
                })

    def send() -> None:
        from webapp.celery import task_send_or_owe

        need = Run.objects.filter(pk=run_id).values_list("need_kind", "need_devices").first()
        queue = train_queue(*need) if need else None
        error = task_send_or_owe(RUNS_TRAIN, args=[run_id], queue=queue)
        if error:
            owed(error)

    transaction.on_commit(send, robust=True)


# --- create -------------------------------------------------------------------------------


def run_config_parse(config: Any) -> dict[str, Any]:
    """The full TrainConfig as JSON (engine defaults filled in), or a DomainError naming each field."""
    from engine.train.config import ConfigError, parse_config

    if config is not None and not isinstance(config, dict):
        raise DomainError("invalid_config", "config must be an object.", fields={"config": ["Must be an object."]})
    try:
        parsed = parse_config(config or {})
    except ConfigError as exc:
        fields: dict[str, list[str]] = {}
        for problem in exc.problems:
            fields.setdefault(f"config.{problem['field']}", []).append(problem["message"])
        raise DomainError("invalid_config", str(exc), fields=fields) from None
    return parsed.model_dump(mode="json")


def run_recipe_build(
    *, dataset: Any, transforms: dict[str, Any] | None, split: dict[str, Any] | None
) -> dict[str, Any]:
    """The run's whole DataRecipe JSON (engine defaults filled in), or a DomainError naming each field."""
    from pydantic import ValidationError

    from engine.data import DataRecipe
    from webapp.datasets.selectors import dataset_recipe

    for name, value in (("transforms", transforms), ("split", split)):
        if value is not None and not isinstance(value, dict):
            raise DomainError("invalid", f"{name} must be an object.", fields={name: ["Must be an object."]})
    recipe = dataset_recipe(dataset=dataset, transforms=transforms, split=split)
    try:
        return DataRecipe.model_validate(recipe).model_dump(mode="json")
    except ValidationError as exc:
        fields: dict[str, list[str]] = {}
        for err in exc.errors():
            loc = ".".join(str(p) for p in err["loc"]) or "recipe"
            fields.setdefault(loc, []).append(err["msg"])
        first = next(iter(fields.items()))
        raise DomainError("invalid_recipe", f"{first[0]}: {first[1][0]}", fields=fields) from None


TAGS_MAX = 20
TAG_LENGTH = 40
NAME_LENGTH = 200
NOTES_LENGTH = 20_000


def run_tags_clean(tags: Any) -> list[str]:
    """Tags stripped, each 1..40 characters, distinct, at most 20; else a DomainError naming `tags`."""
    if tags is None:
        return []
    if not isinstance(tags, list | tuple) or not all(isinstance(tag, str) for tag in tags):
        raise DomainError("invalid", "tags must be a list of strings.", field="tags")
    cleaned = [tag.strip() for tag in tags]
    if any(not 1 <= len(tag) <= TAG_LENGTH for tag in cleaned):
        raise DomainError("invalid", f"Each tag has 1 to {TAG_LENGTH} characters.", field="tags")
    if len(set(cleaned)) != len(cleaned):
        raise DomainError("invalid", "Tags must be distinct.", field="tags")
    if len(cleaned) > TAGS_MAX:
        raise DomainError("invalid", f"A run has at most {TAGS_MAX} tags.", field="tags")
    return cleaned


def run_name_clean(name: Any) -> str:
    """The name stripped, at most 200 characters; else a DomainError naming `name`."""
    if name is None:
        return ""
    if not isinstance(name, str) or len(name.strip()) > NAME_LENGTH:
        raise DomainError("invalid", f"name must be a text of at most {NAME_LENGTH} characters.", field="name")
    return name.strip()


def run_notes_clean(notes: Any) -> str:
    """The notes as given (at most 20,000 characters); else a DomainError naming `notes`."""
    if notes is None:
        return ""
    if not isinstance(notes, str) or len(notes) > NOTES_LENGTH:
        raise DomainError("invalid", f"notes must be a text of at most {NOTES_LENGTH} characters.", field="notes")
    return notes


PRIORITY_MIN, PRIORITY_MAX = -10, 10


def run_priority_clean(priority: Any) -> int:
    """An integer in -10..10; else a DomainError naming `priority`."""
    if isinstance(priority, bool) or not isinstance(priority, int) or not PRIORITY_MIN <= priority <= PRIORITY_MAX:
        raise DomainError("invalid", f"priority must be an integer from {PRIORITY_MIN} to {PRIORITY_MAX}.",
                          field="priority")
    return priority


def run_update(
    *, run: Run, name: Any = None, notes: Any = None, tags: Any = None, priority: Any = None
) -> Run:
    """Change a run's name, notes, tags or priority (what is None stays).

    The priority orders a team's own queued runs (higher first); it never jumps another team's.
    """
    fields: dict[str, Any] = {}
    if priority is not None:
        fields["priority"] = run_priority_clean(priority)
    if name is not None:
        fields["name"] = run_name_clean(name)
    if notes is not None:
        fields["notes"] = run_notes_clean(notes)
    if tags is not None:
        fields["tags"] = run_tags_clean(tags)
    if fields:
        Run.objects.filter(pk=run.pk).update(**fields)
        run.refresh_from_db()
    return run


def _init_copy(*, source: Path, run_id: int) -> Path:
    """Copy a checkpoint folder into the run's own `init/` (atomically): the run no longer needs the source."""
    import shutil

    from engine.atomic import atomic_dir

    final = conf.run_dir(run_id) / "init"
    with atomic_dir(final) as staging:
        shutil.copytree(source, staging, dirs_exist_ok=True)
    return final


def run_create(
    *,
    user: AbstractBaseUser,
    team: Any,
    graph_revision: Any,
    dataset: Any,
    config: dict[str, Any] | None,
    transforms: dict[str, Any] | None = None,
    split: dict[str, Any] | None = None,
    name: str = "",
    notes: str = "",
    tags: list[str] | None = None,
    init: dict[str, Any] | None = None,
    origin: dict[str, Any] | None = None,
    priority: int | None = None,
) -> Run:
    """Validate config, data recipe and graph against the dataset; store the run queued; queue training.

    A run that asks for more devices (config.processes) than its team may use per run is refused
    (a DomainError naming `config.processes`); `priority` (-10..10) orders it within its team.

    `init` {run, checkpoint, mode: "finetune" | "resume"} starts the weights from a checkpoint of
    a run the user can see: checked here (run_init_check), its plan stored in `run.init`, and the
    checkpoint folder copied into the new run's folder (`init/`), so the source may be pruned later.
    `origin` says who made the run besides its creator ({"sweep": id, "trial": n}).
    """
    from .checks import (
        check_config_fits,
        check_dataset_trainable,
        check_freeze,
        check_graph_fits_dataset,
        run_init_check,
    )

    name, notes = run_name_clean(name), run_notes_clean(notes)
    tags = run_tags_clean(tags)
    check_dataset_trainable(dataset=dataset)
    config_json = run_config_parse(config)
    check_freeze(config=config_json, spec=graph_revision.spec)
    source = None
    if init is not None:
        source = run_init_check(user=user, graph_revision=graph_revision, config=config_json, init=init)
    recipe = run_recipe_build(dataset=dataset, transforms=transforms, split=split)
    report = check_graph_fits_dataset(graph_revision=graph_revision, dataset=dataset, config=config_json)
    # What else the trainer would refuse only at its start: device, precision, metric names.
    outputs = list((report.get("outputs") or {}).values())
    check_config_fits(config=config_json, recipe=recipe, summary=dataset.summary or {},
                      output_shape=outputs[0] if len(outputs) == 1 else None)
    need_kind, need_devices = run_need(config_json)
    run_team_limits_check(team=team, devices=need_devices)
    with transaction.atomic():
        run = Run.objects.create(
            need_kind=need_kind,
            need_devices=need_devices,
            priority=run_priority_clean(priority) if priority is not None else 0,
            team=team,
            graph_revision=graph_revision,
            dataset=dataset,
            name=name,
            notes=notes,
            tags=tags,
            init=source.init if source is not None else {},
            origin=dict(origin or {}),
            config=config_json,
            recipe=recipe,
            created_by=user,
            max_attempts=int(conf.get("RUNS_MAX_ATTEMPTS")),
            queued_sent_at=timezone.now(),
        )
        if source is not None:
            _init_copy(source=source.path, run_id=run.pk)  # a failed copy rolls the row back
        event_emit(run_id=run.pk, event={"type": "status", "status": RunStatus.QUEUED, "detail": "queued"})
        _queue_train(run.pk)
    run.refresh_from_db()
    return run


def run_team_limits_check(*, team: Any, devices: int) -> None:
    """Refuse a run that asks for more devices than its team may use per run (names config.processes)."""
    limit = getattr(team, "max_devices_per_run", None)
    if limit is not None and devices > limit:
        message = (f"This run asks for {devices} devices (processes); team {team.name} may use at most "
                   f"{limit} per run (ask a site administrator to raise max_devices_per_run).")
        raise DomainError("team_limit", message, fields={"config.processes": [message]})


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
            run_finished_send(run_id=run.pk, status=RunStatus.CANCELLED)
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
                raise Conflict("run_finished", f"Run {run.pk} has already finished ({run.status}).")
    run.refresh_from_db()
    return run


# --- worker side: lease, heartbeat, finish, reap ---------------------------------------------


_LEASABLE = (RunStatus.QUEUED, RunStatus.RUNNING, RunStatus.INTERRUPTED)


def run_lease_take(
    *, run_id: int, worker: str, device: str = "", statuses: tuple[str, ...] = _LEASABLE
) -> str | None:
    """Take the run's lease for this delivery; None when another worker holds it or it is done.

    The conditional UPDATE is the fence: two deliveries of the same message (the broker's
    visibility timeout, a requeue by the reaper) can never both train the run. `device` is
    what it trains on there ("cpu", "cuda:0,cuda:1"); the worker's row names the run.
    """
    now = timezone.now()
    token = uuid.uuid4().hex
    lease = timedelta(seconds=float(conf.get("RUNS_LEASE_SECONDS")))
    with transaction.atomic():
        taken = (
            Run.objects.filter(pk=run_id, status__in=list(statuses), cancel_requested=False)
            .filter(Q(lease_token__isnull=True) | Q(lease_expires_at__lt=now))
            .update(
                lease_token=token,
                worker=worker[:200],
                device=device[:200],
                status=RunStatus.RUNNING,
                attempts=F("attempts") + 1,
                started_at=Coalesce("started_at", now),
                error="",
            )
        )
        if not taken:
            return None
        # The lease runs from when the row was taken: the UPDATE above may have waited for its
        # lock after `now` was read (another transaction's row lock on PostgreSQL; SQLite's write
        # lock, up to its 20 s timeout), and a lease counted from `now` could have run out as this
        # commits, before the recorder's first heartbeat renews it.
        taken_at = timezone.now()
        Run.objects.filter(pk=run_id, lease_token=token).update(lease_expires_at=taken_at + lease,
                                                                heartbeat_at=taken_at)
        Worker.objects.filter(hostname=worker[:200]).update(current_run_id=run_id, last_seen=now)
        attempts, max_attempts = Run.objects.filter(pk=run_id).values_list("attempts", "max_attempts").get()
        where = f"{worker} ({device})" if device else worker
        detail = f"training on {where}" + (f" (attempt {attempts} of {max_attempts})" if attempts > 1 else "")
        event_emit(run_id=run_id, event={"type": "status", "status": RunStatus.RUNNING, "detail": detail})
    return token


def run_claim(*, worker: str, devices: WorkerDevices) -> tuple[int, str] | None:
    """Take the lease of the fairest queued run this worker fits: (run id, lease token), or None.

    What a runs.train token does when a worker takes it. One transaction per try: the row is
    locked (SELECT ... FOR UPDATE SKIP LOCKED on PostgreSQL, so two workers never wait on or
    take the same run; SQLite serialises writers), and a team with a concurrency limit is
    locked and counted again, so two workers cannot both start its last allowed run.
    """
    from webapp.accounts.models import Team

    skipped: set[int] = set()
    for _ in range(8):
        with transaction.atomic():
            candidates = runs_claimable(kind=devices.kind, capacity=devices.capacity).exclude(pk__in=skipped)
            if connection.features.has_select_for_update_skip_locked:
                candidates = candidates.select_for_update(skip_locked=True, of=("self",))
            picked = candidates.values_list("pk", "team_id", "need_devices").first()
            if picked is None:
                return None
            run_id, team_id, need = picked
            limit = Team.objects.select_for_update().filter(pk=team_id).values_list("max_concurrent_runs", flat=True)
            limit = limit.first()
            if limit is not None and Run.objects.filter(team_id=team_id, status=RunStatus.RUNNING).count() >= limit:
                skipped.add(run_id)
                continue
            token = run_lease_take(run_id=run_id, worker=worker, device=device_label(devices, need),
                                   statuses=(RunStatus.QUEUED,))
            if token is not None:
                return run_id, token
            skipped.add(run_id)  # taken or cancelled meanwhile
    return None


def _team_freed(run_id: int) -> None:
    """A run of a team with a concurrency limit left `running`: a token for its next queued run.

    Its queued runs may have had their tokens dropped while the team was at its limit (a worker
    that found nothing it could take). Sent after the commit; an extra token is harmless.
    """
    team_id = Run.objects.filter(pk=run_id, team__max_concurrent_runs__isnull=False).values_list("team_id", flat=True)
    team_id = team_id.first()
    if team_id is None:
        return
    waiting = runs_claimable().filter(team_id=team_id).values_list("pk", flat=True).first()
    if waiting is not None:
        _queue_train(waiting, announce=False)


def run_token_send(*, run_id: int) -> None:
    """Send one more runs.train token for a queued run (after the commit); an extra one is harmless."""
    _queue_train(run_id, announce=False)


def run_reap_worker(*, worker: str) -> list[int]:
    """At a worker's start: the runs still leased under its own name are its dead predecessor's.

    They are interrupted and requeued at once (as run_reap does when a lease expires), so a
    worker restarted on the same host resumes them without waiting for the lease to run out.
    """
    held = Run.objects.filter(status=RunStatus.RUNNING, worker=worker[:200], lease_token__isnull=False)
    return run_reap(now=timezone.now(), runs=held, why="its worker restarted")


def run_heartbeat(*, run_id: int, lease_token: str, run_fields: dict[str, Any] | None = None) -> bool:
    """Renew the lease (and write progress); False when the lease was lost."""
    now = timezone.now()
    lease = timedelta(seconds=float(conf.get("RUNS_LEASE_SECONDS")))
    return bool(
        Run.objects.filter(pk=run_id, lease_token=lease_token).update(
            heartbeat_at=now, lease_expires_at=now + lease, **(run_fields or {})
        )
    )


def run_recipe_record(*, run_id: int, lease_token: str, recipe: dict[str, Any]) -> bool:
    """Keep the data recipe as the first attempt fitted it (missing-value fills, ...).

    A resumed attempt and every explanation read the run's recipe, so they fill gaps with the
    values fitted on this run's training rows, never refitted. Fenced by the lease.
    """
    return bool(
        Run.objects.filter(pk=run_id, lease_token=lease_token).update(recipe=recipe)
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
                      export_requests=F("export_requests") + 1, export_sent_at=now)
    with transaction.atomic():
        if not Run.objects.filter(pk=run_id, lease_token=lease_token).update(**fields):
            return False
        event = {"type": "status", "status": status, "detail": detail or status, **(extra or {})}
        if error:
            event["error"] = error
        if final_metrics is not None:
            event["final_metrics"] = final_metrics  # the page shows them without asking again
        if succeeded:
            event["exports"] = run_exports(Run.objects.get(pk=run_id))
        event_emit(run_id=run_id, event=event)
        if succeeded:
            _queue_export(run_id)
        Worker.objects.filter(current_run_id=run_id).update(current_run=None)
        _team_freed(run_id)
        run_finished_send(run_id=run_id, status=status)
    return True


def run_reap(
    *, now: Any = None, runs: Any = None, why: str = "worker lost", keep: Collection[int] = ()
) -> list[int]:
    """Mark runs whose worker stopped heartbeating `interrupted`, then requeue or fail them.

    Also sends every task whose send is owed or whose message looks lost: runs.train for runs
    queued too long (run_resend_queued), runs.export (run_export_resend), runs.explain
    (explanation_resend), datasets.process (dataset_resend_processing); and removes crash
    leftovers (leftovers_sweep). Safe to run from many workers at once: every transition is a
    conditional UPDATE. Returns the ids of the runs it interrupted.

    `runs` (run_reap_worker): interrupt these running runs whatever their lease says, and
    nothing else. `keep`: runs the calling process itself is training (its recorders renew their
    leases; workers/recorder.py::live_run_ids), never interrupted by it however late their lease.
    """
    now = now or timezone.now()
    reaped: list[int] = []
    if runs is None:
        held = Run.objects.filter(status=RunStatus.RUNNING, lease_expires_at__lt=now).exclude(pk__in=list(keep))
    else:
        held = runs.filter(status=RunStatus.RUNNING)
    expired = list(held.values_list("pk", "lease_token", "attempts", "max_attempts", "heartbeat_at", "step"))
    for run_id, token, attempts, max_attempts, heartbeat_at, step in expired:
        with transaction.atomic():
            still = Run.objects.filter(pk=run_id, status=RunStatus.RUNNING, lease_token=token)
            if runs is None:
                still = still.filter(lease_expires_at__lt=now)
            lost = still.update(status=RunStatus.INTERRUPTED, lease_token=None, lease_expires_at=None, worker="")
            if not lost:
                continue
            reaped.append(run_id)
            Worker.objects.filter(current_run_id=run_id).update(current_run=None)
            since = heartbeat_at.isoformat() if heartbeat_at else "never"
            event_emit(run_id=run_id, event={
                "type": "status", "status": RunStatus.INTERRUPTED,
                "detail": f"{why} (last heartbeat {since}, step {step})",
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
                _team_freed(run_id)
                run_finished_send(run_id=run_id, status=RunStatus.FAILED)
    if reaped:
        logger.warning("reaped runs (%s): %s", why, reaped)
    if runs is not None:
        return reaped
    run_resend_queued(now=now)
    run_export_resend(now=now)
    explanation_resend(now=now)
    _resend_datasets(now=now)
    leftovers_sweep(now=now)
    return reaped


def _resend_datasets(*, now: Any) -> None:
    from webapp.jobs.services import jobs_reap

    jobs_reap(now=now)


def _backed_off(*, now: Any, last: Any, origin: Any, interval: float) -> bool:
    """True while a re-send must wait: it is due once the work has waited as long again as it
    had at the last send (and at least `interval`), so a long wait costs only a few duplicates."""
    return now - last < max(timedelta(seconds=interval), last - origin)


def leftovers_sweep(*, now: Any = None, older_than_s: float | None = None) -> list[Path]:
    """Remove crash leftovers: `.<name>.tmp-<hex>`/`.old-<hex>` checkpoint and export folders
    below the runs root, and `MEDIA_ROOT/uploads/*.part` uploads nobody finished.

    Only what is older than RUNS_LEFTOVER_SECONDS (a writer may still be using a younger
    one; an upload still arriving keeps its .part file fresh). At most once per
    RUNS_SWEEP_SECONDS per process (every reaper pass calls this). Returns the paths removed.
    """
    from engine.atomic import sweep_leftovers
    from webapp.datasets.services import upload_leftovers_sweep

    moment = (now or timezone.now()).timestamp()
    if older_than_s is None:
        if moment - _last_sweep[0] < float(conf.get("RUNS_SWEEP_SECONDS")):
            return []
        _last_sweep[0] = moment
    age = float(conf.get("RUNS_LEFTOVER_SECONDS")) if older_than_s is None else older_than_s
    removed = sweep_leftovers(conf.runs_root(), older_than_s=age)
    removed += upload_leftovers_sweep(older_than_s=age)
    if removed:
        logger.warning("removed crash leftovers: %s", [str(p) for p in removed])
    return removed


_last_sweep = [0.0]


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
    # Owed first: their send failed (the broker was down); try again at every pass until it works.
    for run_id in list(waiting.filter(queued_send_owed=True).values_list("pk", flat=True)):
        if waiting.filter(pk=run_id, queued_send_owed=True).update(queued_send_owed=False, queued_sent_at=now):
            resent.append(run_id)
            _queue_train(run_id, announce=False)
    for run_id, sent_at, created_at in list(
        waiting.filter(stale, queued_send_owed=False).values_list("pk", "queued_sent_at", "created_at")
    ):
        last = sent_at or created_at
        if _backed_off(now=now, last=last, origin=created_at, interval=interval):
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
            _queue_train(run_id, announce=False)
    if resent:
        logger.warning("re-sent runs.train for runs queued too long or owed: %s", resent)
    return resent


# --- explanations -----------------------------------------------------------------------------


def explanation_create(
    *,
    run: Run,
    user: AbstractBaseUser,
    index: int | None = None,
    input: Any = None,  # noqa: A002 - the API's field name
    image: str | None = None,
    method: str,
    target: int | None = None,
    layer: str | None = None,
    checkpoint: str | None = None,
) -> Explanation:
    """Check the request, store the explanation queued and compute it on the short queue.

    The sample is a test-split `index`, `input` numbers of the feature shape, `input` a row as in
    the user's CSV ({column: raw value}), or `image` an uploaded image as a `data:` URL / base64.
    A row or an image goes through the run's preprocessing pipeline (webapp/runs/predict.py) and
    is stored as given (sample {"input": row | data URL}) so the page can show it back.
    """
    from engine.explain import METHODS

    from .selectors import run_checkpoint_row

    if run.dataset_id is None:  # imported weights (webapp/runs/imports.py): no data, no pipeline
        raise Conflict("no_dataset", f"Run {run.pk} holds imported weights and has no dataset; start a run "
                       "from its checkpoint 'imported' and explain that one.")
    if checkpoint is not None:
        # A kept checkpoint's weights (any run that wrote one: a cancelled run's `step-…` too).
        if not isinstance(checkpoint, str) or not checkpoint:
            raise DomainError("invalid", "checkpoint must be a checkpoint's name.", field="checkpoint")
        try:
            run_checkpoint_row(run=run, name=checkpoint)
        except DomainError as exc:
            raise DomainError(exc.code, exc.message, field="checkpoint") from None
    elif run.status != RunStatus.SUCCEEDED:
        raise Conflict("run_not_trained", f"Run {run.pk} has not succeeded ({run.status}); nothing to explain yet.")
    names = [m["name"] if isinstance(m, dict) else str(m) for m in METHODS]
    if method not in names:
        raise DomainError("invalid_method", f"Unknown method {method!r}; one of {', '.join(names)}.", field="method")
    if image is not None:
        if index is not None or input is not None:
            raise DomainError("invalid", "Give exactly one of index, input or image.",
                              fields={name: ["Give exactly one of index, input or image."]
                                      for name, v in (("index", index), ("input", input), ("image", image))
                                      if v is not None})
        explanation_input_prepare(run=run, image=image)  # a 400 naming `image` if it cannot be read
        input = image  # noqa: A001 - stored as the sample's input, shown back by the page
    elif (index is None) == (input is None):
        raise DomainError("invalid", "Give exactly one of index (a test-split row) or input (an array).",
                          fields={"index": ["Give index or input."], "input": ["Give index or input."]})
    if index is not None and (not isinstance(index, int) or isinstance(index, bool) or index < 0):
        raise DomainError("invalid", "index must be a non-negative integer.", field="index")
    if isinstance(input, dict):
        explanation_input_prepare(run=run, row=input)  # a 400 naming `input.<column>`
    elif input is not None and image is None and not isinstance(input, list):
        raise DomainError("invalid", "input must be an array of numbers.", field="input")
    if target is not None and (not isinstance(target, int) or isinstance(target, bool) or target < 0):
        raise DomainError("invalid", "target must be a non-negative integer (a class index).", field="target")
    sample: dict[str, Any] = {"index": index} if index is not None else {"input": input}
    if checkpoint is not None:
        sample["checkpoint"] = checkpoint  # the weights explained (workers/runs.py explain_run)
    with transaction.atomic():
        explanation = Explanation.objects.create(
            run=run, method=method, sample=sample, target=target, layer=layer or "", created_by=user,
            sent_at=timezone.now(),
        )
        event_emit(run_id=run.pk, event={
            "type": "explanation", "id": explanation.pk, "status": ExplanationStatus.QUEUED, "method": method,
        })
        _queue_explain(explanation.pk)
    return explanation


def _image_data(image: str) -> bytes:
    """The bytes of a `data:image/...;base64,` URL or of plain base64."""
    import base64
    import binascii

    text = image.split(",", 1)[1] if image.startswith("data:") else image
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise DomainError("invalid_input", "image must be a data: URL or base64 of an image file.",
                          field="image") from None


def explanation_input_prepare(*, run: Run, row: dict[str, Any] | None = None, image: str | None = None) -> Any:
    """The network's input (a float tensor (1, *feature_shape)) for a typed row or an uploaded image.

    The run's own preprocessing pipeline (predict.run_pipeline, applied by the export's code) does
    it, as for predictions; bad input is a DomainError("invalid_input") naming `input.<column>`,
    `input` or `image`.
    """
    import torch

    from engine.export.predict_template import InputError, prepare

    from .predict import _require_trained, run_pipeline

    _require_trained(run)
    raw: Any = _image_data(image) if image is not None else row
    try:
        x = prepare(run_pipeline(run=run), raw)
    except InputError as exc:
        field = exc.field
        if image is not None:
            field = "image"
        elif field not in ("input", "image"):
            field = f"input.{field}"
        else:
            field = "input"
        raise DomainError("invalid_input", exc.message, field=field) from None
    if len(x) != 1:
        raise DomainError("invalid_input", f"Give one sample; this input holds {len(x)}.", field="input")
    return torch.from_numpy(x)


_UNFINISHED_EXPLANATION = (ExplanationStatus.QUEUED, ExplanationStatus.RUNNING)


def _queue_explain(explanation_id: int) -> None:
    """Send runs.explain after the commit; when the broker is down, mark it owed (sent_at null)."""

    def owed(error: str) -> None:
        Explanation.objects.filter(pk=explanation_id, status__in=_UNFINISHED_EXPLANATION).update(sent_at=None)

    _send_on_commit(RUNS_EXPLAIN, explanation_id, owed=owed)


def explanation_resend(*, now: Any = None) -> list[int]:
    """Send runs.explain again for unfinished explanations whose send is owed or looks lost; their ids.

    Owed (sent_at null: the broker was down) ones are sent at every pass until it works. One
    sent longer than RUNS_EXPLAIN_RESEND_SECONDS ago and still unfinished (a message lost with a
    Redis restart, a worker killed mid-way) is sent again with the back-off of run_resend_queued.
    A duplicate is harmless: the task returns at once for a finished explanation.
    """
    now = now or timezone.now()
    interval = float(conf.get("RUNS_EXPLAIN_RESEND_SECONDS"))
    unfinished = Explanation.objects.filter(status__in=_UNFINISHED_EXPLANATION, run__status=RunStatus.SUCCEEDED)
    resent: list[int] = []
    rows = unfinished.filter(Q(sent_at__isnull=True) | Q(sent_at__lt=now - timedelta(seconds=interval)))
    for explanation_id, sent_at, created_at in list(rows.values_list("pk", "sent_at", "created_at")):
        if sent_at is not None and _backed_off(now=now, last=sent_at, origin=created_at, interval=interval):
            continue
        with transaction.atomic():
            if not unfinished.filter(pk=explanation_id, sent_at=sent_at).update(sent_at=now):
                continue  # another reaper sent it, or it finished meanwhile
            resent.append(explanation_id)
            _queue_explain(explanation_id)
    if resent:
        logger.warning("re-sent runs.explain (owed or lost): %s", resent)
    return resent


def explanation_finish(
    *, explanation_id: int, result: dict[str, Any] | None, png: bytes | None = None, error: str = ""
) -> None:
    """Record an explanation's outcome (its PNG written atomically) and announce it on the stream."""
    from engine.atomic import write_bytes_atomic

    status = ExplanationStatus.FAILED if error else ExplanationStatus.SUCCEEDED
    png_path = ""
    if png is not None and not error:
        run_id = Explanation.objects.filter(pk=explanation_id).values_list("run_id", flat=True).get()
        path = conf.run_dir(run_id) / "explanations" / f"{explanation_id}.png"
        write_bytes_atomic(path, png)
        png_path = str(path)
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
    """Send runs.export after the commit; a broker error leaves the export pending and owed
    (export_sent_at null), and the reaper sends it once the broker is back (run_export_resend)."""

    def owed(error: str) -> None:
        Run.objects.filter(pk=run_id, export_status=ExportStatus.PENDING).update(export_sent_at=None)

    _send_on_commit(RUNS_EXPORT, run_id, owed=owed)


def run_export_resend(*, now: Any = None) -> list[int]:
    """Send runs.export again for pending exports whose send is owed or whose task looks lost; run ids.

    Owed ones (export_sent_at null: the broker was down) are sent at every pass until it works.
    A pending export sent longer than RUNS_EXPORT_STALE_SECONDS ago is taken for lost (its
    worker was killed, or Redis lost the message) and sent again, with the back-off of
    run_resend_queued. A duplicate is harmless: the task returns at once unless the export is
    pending, and its files are written by atomic renames.
    """
    now = now or timezone.now()
    interval = float(conf.get("RUNS_EXPORT_STALE_SECONDS"))
    pending = Run.objects.filter(status=RunStatus.SUCCEEDED, export_status=ExportStatus.PENDING)
    rows = pending.filter(Q(export_sent_at__isnull=True) | Q(export_sent_at__lt=now - timedelta(seconds=interval)))
    resent: list[int] = []
    for run_id, sent_at, requested_at in list(rows.values_list("pk", "export_sent_at", "export_requested_at")):
        lost = sent_at is not None
        if lost and _backed_off(now=now, last=sent_at, origin=requested_at or sent_at, interval=interval):
            continue
        with transaction.atomic():
            if not pending.filter(pk=run_id, export_sent_at=sent_at).update(export_sent_at=now):
                continue  # another reaper sent it, or it finished meanwhile
            resent.append(run_id)
            if lost:
                waited = int((now - sent_at).total_seconds())
                event_emit(run_id=run_id, event={
                    "type": "log", "level": "warning",
                    "message": f"the export is still pending {waited} s after it was last asked for; "
                               "asked again (its worker may have been lost)",
                })
            _queue_export(run_id)
    if resent:
        logger.warning("re-sent runs.export (owed or lost): %s", resent)
    return resent


def run_export_write(
    *, run: Run, model: Any, data_info: Any, metrics: dict[str, Any], onnx: bool,
    checkpoint: dict[str, Any] | None = None, folder: Path | None = None,
) -> Path:
    """Write the run's export folder (safetensors, model.py, JSON; ONNX when asked) in one rename.

    A reader (a download, the export task) sees the old folder or the new one, never half.
    `checkpoint` ({name, step, epoch}) says which checkpoint's weights `model` holds; export.json
    keeps it (null: the weights at the end of training). `folder` is another place than the
    run's export (a checkpoint's own export, run_checkpoint_export).
    """
    import json

    from engine.atomic import atomic_dir
    from engine.export import export_dir

    final = folder or run_export_dir(run)
    with atomic_dir(final) as staging:
        export_dir(model, run.graph_revision.spec, run.config, metrics_json(metrics), staging,
                   data_info=data_info, onnx=onnx)
        manifest = json.loads((staging / "export.json").read_text(encoding="utf-8"))
        manifest["checkpoint"] = checkpoint
        (staging / "export.json").write_text(json.dumps(manifest, indent=2, sort_keys=True), encoding="utf-8")
    return final


def run_checkpoint_export(*, run: Run, name: str, fmt: str) -> RunDownload:
    """The file for `GET /api/runs/<id>/checkpoints/<name>/export/?format=`, built on first ask.

    The checkpoint's weights are loaded into the run's built graph and written with
    run_export_write into `runs/<id>/checkpoints-export/<name>/` (ONNX too when asked for;
    the zip beside it). A folder older than the checkpoint (a `best` written again) is rebuilt.
    """
    from engine.export import read_export_manifest, zip_export

    from .selectors import run_checkpoint_model, run_checkpoint_row

    if fmt not in EXPORT_FORMATS:
        raise DomainError("invalid", f"Unknown format {fmt!r}; one of {', '.join(EXPORT_FORMATS)}.",
                          fields={"format": [f"One of {', '.join(EXPORT_FORMATS)}."]})
    row = run_checkpoint_row(run=run, name=name)
    folder = conf.run_dir(run.pk) / "checkpoints-export" / row.name
    filename, suffix, content_type = EXPORT_FORMATS[fmt]
    manifest_path = folder / "export.json"
    note = {"name": row.name, "step": int(row.step), "epoch": float(row.epoch)}
    fresh = manifest_path.is_file() and _manifest_checkpoint(folder) == note
    if not fresh or (fmt == "onnx" and not (folder / "model.onnx").is_file()
                     and "errors" not in read_export_manifest(folder).get("onnx", {})):
        model = run_checkpoint_model(run=run, name=row.name)
        run_export_write(run=run, model=model, data_info=run_export_data_info(run=run), metrics=row.metrics or {},
                         onnx=fmt == "onnx" or (fresh and (folder / "model.onnx").is_file()),
                         checkpoint=note, folder=folder)
        (folder.parent / f"{row.name}.zip").unlink(missing_ok=True)
    if fmt == "zip":
        path = folder.parent / f"{row.name}.zip"
        if not path.is_file():
            zip_export(folder, dest=path)
    else:
        path = folder / filename
    if not path.is_file():
        onnx_note = read_export_manifest(folder).get("onnx", {})
        raise Conflict("onnx_unavailable", f"This graph has no ONNX export: {onnx_note.get('note')}.",
                       extra={"errors": onnx_note.get("errors", [])})
    download = path.name if fmt == "python" else run_download_name(run, f"-{row.name}{suffix}")
    return RunDownload(path=path, filename=download, content_type=content_type)


def _manifest_checkpoint(folder: Path) -> Any:
    import json

    try:
        return json.loads((folder / "export.json").read_text(encoding="utf-8")).get("checkpoint")
    except (OSError, ValueError):
        return None


def run_export_complete(*, run: Run) -> dict[str, Any]:
    """Add ONNX (where the graph allows it; tried once) and the zip to a succeeded run's export.

    Returns the manifest's ONNX note (`exported`, `note`, `errors`).
    """
    from engine.export import read_export_manifest, zip_export

    folder = run_export_dir(run)
    manifest = read_export_manifest(folder)
    onnx_note = manifest.get("onnx", {})
    if not (onnx_note.get("exported") or "errors" in onnx_note):  # ONNX not tried yet
        # The same weights again (the best checkpoint's, when the export holds them): say so again.
        run_export_write(run=run, model=run_trained_model(run=run), data_info=run_export_data_info(run=run),
                         metrics=run.final_metrics or {}, onnx=True, checkpoint=manifest.get("checkpoint"))
    zip_export(folder, dest=run_export_zip(run))
    return read_export_manifest(folder).get("onnx", {})


EXPORT_FORMATS: dict[str, tuple[str, str, str]] = {
    # format: (file in the export folder, suffix of the download, content type)
    "safetensors": ("model.safetensors", ".safetensors", "application/octet-stream"),
    "python": ("model.py", ".py", "text/x-python"),
    "onnx": ("model.onnx", ".onnx", "application/octet-stream"),
    "config": ("config.json", "-config.json", "application/json"),
    "zip": ("", ".zip", "application/zip"),
}


@dataclass(frozen=True)
class RunDownload:
    """A file of a run's export to send: where it is, the name to send it under, its type."""

    path: Path
    filename: str
    content_type: str


def run_export_download(*, run: Run, fmt: str) -> RunDownload:
    """The file for `GET /api/runs/<id>/export/?format=fmt`, made first when it can be.

    The zip is built (atomically) on first download when the export task has not made it. A
    missing ONNX file queues the export task (once while pending: run_export_request) and
    raises Conflict "export_pending" carrying the run's `exports`; a graph without an ONNX form
    raises Conflict "onnx_unavailable" with the exporter's `errors`.
    """
    from engine.export import read_export_manifest, zip_export

    if fmt not in EXPORT_FORMATS:
        raise DomainError("invalid", f"Unknown format {fmt!r}; one of {', '.join(EXPORT_FORMATS)}.",
                          fields={"format": [f"One of {', '.join(EXPORT_FORMATS)}."]})
    if run.status != RunStatus.SUCCEEDED:
        raise Conflict("run_not_trained", f"Run {run.pk} has not succeeded ({run.status}); there is nothing to export.")
    filename, suffix, content_type = EXPORT_FORMATS[fmt]
    folder = run_export_dir(run)
    complete = (folder / "export.json").is_file()
    if fmt == "zip":
        path = run_export_zip(run)
        if not path.is_file() and complete:
            zip_export(folder, dest=path)
    else:
        path = folder / filename
    if not path.is_file():
        if fmt == "onnx" and complete:
            note = read_export_manifest(folder).get("onnx", {})
            if "errors" in note:
                raise Conflict("onnx_unavailable", f"This graph has no ONNX export: {note.get('note')}.",
                               extra={"errors": note.get("errors", [])})
            # Idempotent: queued once while pending; the stream's `export` event says when it is done.
            run_export_request(run=run)
            raise Conflict("export_pending", "The ONNX file is being made; try again in a few seconds.",
                           extra={"exports": run_exports(run)})
        raise Conflict("export_missing", "This run's export is missing; ask an administrator.")
    # The source keeps the name it is imported by (`from model import Net`), not "<graph>-run<id>.py".
    name = path.name if fmt == "python" else run_download_name(run, suffix)
    return RunDownload(path=path, filename=name, content_type=content_type)


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
                    export_requests=F("export_requests") + 1, export_sent_at=now)
        )
        if queued:
            _queue_export(run.pk)
    run.refresh_from_db()
    return bool(queued)


def run_export_finish(*, run_id: int, error: str = "") -> None:
    """Record the export task's outcome (ready, or failed with `error`) and announce it on the stream."""
    with transaction.atomic():
        Run.objects.filter(pk=run_id).update(
            export_status=ExportStatus.FAILED if error else ExportStatus.READY, export_error=error
        )
        run = Run.objects.get(pk=run_id)
        exports = run_exports(run)
        event_emit(run_id=run_id, event={"type": "export", "status": run.export_status, "exports": exports})


def metrics_json(metrics: dict[str, Any]) -> dict[str, Any]:
    """Metrics as plain JSON for the database and metrics.json (NaN and infinities become None)."""
    out: dict[str, Any] = {}
    for key, value in metrics.items():
        if isinstance(value, bool | str) or value is None:
            out[key] = value
        elif isinstance(value, int | float):
            out[key] = value if isinstance(value, int) else finite_or_none(value)
        elif isinstance(value, list | tuple):
            out[key] = [finite_or_none(v) if isinstance(v, float) else v for v in value]
        else:
            try:
                out[key] = finite_or_none(float(value))
            except (TypeError, ValueError):
                out[key] = str(value)
    return out


def run_log(*, run_id: int, message: str, level: str = "info") -> None:
    """Store and publish a log line on the run's stream."""
    with transaction.atomic():
        event_emit(run_id=run_id, event={"type": "log", "level": level, "message": message})


# --- workers ------------------------------------------------------------------------------------


def worker_announce(*, hostname: str, devices: WorkerDevices | None, queues: list[str], now: Any = None) -> None:
    """Upsert this worker's row (at start and on every reaper pass): its devices, queues, last_seen.

    `devices` None: a worker without a train queue (short jobs only). Its current run is the
    one leased under its name, if any (run_lease_take sets it, run_finish clears it).
    """
    now = now or timezone.now()
    hostname = hostname[:200]
    current = (
        Run.objects.filter(status=RunStatus.RUNNING, worker=hostname, lease_token__isnull=False)
        .values_list("pk", flat=True).first()
    )
    fields = {
        "kind": devices.kind if devices else "cpu",
        "devices": list(devices.devices) if devices else [],
        "capacity": devices.capacity if devices else 0,
        "queues": sorted(queues),
        "current_run_id": current,
        "last_seen": now,
    }
    if not Worker.objects.filter(hostname=hostname).update(**fields):
        Worker.objects.get_or_create(hostname=hostname, defaults={**fields, "started_at": now})


def worker_start(*, hostname: str, devices: WorkerDevices | None, queues: list[str]) -> list[int]:
    """A worker starts: reap the runs its dead predecessor (same name) still holds; announce it.

    Returns the ids of the runs it requeued.
    """
    now = timezone.now()
    reaped = run_reap_worker(worker=hostname) if devices is not None else []
    Worker.objects.filter(hostname=hostname[:200]).update(started_at=now)
    worker_announce(hostname=hostname, devices=devices, queues=queues, now=now)
    return reaped


def worker_forget(*, hostname: str) -> None:
    """A worker that shuts down cleanly removes its row (a killed one stays, no longer alive)."""
    Worker.objects.filter(hostname=hostname[:200]).delete()


__all__ = [
    "EXPORT_FORMATS",
    "RunDownload",
    "metrics_json",
    "run_config_parse",
    "run_create",
    "run_update",
    "run_tags_clean",
    "run_cancel",
    "run_lease_take",
    "run_claim",
    "runs_claimable",
    "run_reap_worker",
    "run_token_send",
    "run_priority_clean",
    "worker_announce",
    "worker_start",
    "worker_forget",
    "run_heartbeat",
    "run_finish",
    "run_reap",
    "run_resend_queued",
    "run_export_resend",
    "explanation_resend",
    "leftovers_sweep",
    "run_log",
    "run_export_write",
    "run_export_complete",
    "run_export_download",
    "run_export_request",
    "run_export_finish",
    "explanation_create",
    "explanation_finish",
    "explanation_mark_running",
]
