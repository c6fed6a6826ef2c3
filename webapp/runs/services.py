"""Writes of a run's lifecycle: create (its config, recipe and fields cleaned), update, cancel,
finish, and the log lines and metrics a worker records.

Every state change of a run goes through here, with its status event stored in the same
transaction and published after the commit. Work is queued by task name (webapp/queues.py) on
commit. Refusals raise webapp.errors.DomainError (Conflict for a state that forbids the request);
webapp/api/errors.py maps them to HTTP. Leases, claims and the reaper are in scheduling/;
explanations and exports in inference/.
"""

from __future__ import annotations

import functools
import logging
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from webapp.audit.services import audit_record
from webapp.errors import Conflict, DomainError

from . import conf
from .models import Run, RunStatus, Worker
from .scheduling.devices import run_need
from .scheduling.leases import _team_freed
from .scheduling.sends import _queue_train, export_job_create
from .selectors import run_exports
from .signals import run_finished_send
from .stream.events import event_emit, finite_or_none

logger = logging.getLogger(__name__)


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
    *, dataset: Any, transforms: dict[str, Any] | None, split: dict[str, Any] | None, version: Any = None
) -> dict[str, Any]:
    """The run's whole DataRecipe JSON (engine defaults filled in), or a DomainError naming each field."""
    from pydantic import ValidationError

    from engine.data import DataRecipe
    from webapp.datasets.selectors import dataset_recipe

    for name, value in (("transforms", transforms), ("split", split)):
        if value is not None and not isinstance(value, dict):
            raise DomainError("invalid", f"{name} must be an object.", fields={name: ["Must be an object."]})
    recipe = dataset_recipe(dataset=dataset, transforms=transforms, split=split, version=version)
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
    *, run: Run, name: Any = None, notes: Any = None, tags: Any = None, priority: Any = None,
    actor: AbstractBaseUser | None = None,
) -> Run:
    """Change a run's name, notes, tags or priority (what is None stays); `actor`: who (the audit log).

    The audit log gets `run.renamed` for a new name and `run.updated` for the other fields.

    The priority orders a team's own queued runs (higher first); it never jumps another team's.
    It changes only while the run is queued: otherwise the whole change is refused (409
    `not_queued` naming the status), and a run that a worker claims meanwhile is not touched.
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
        before = {key: getattr(run, key) for key in fields}
        with transaction.atomic():
            rows = Run.objects.filter(pk=run.pk)
            if "priority" in fields:
                rows = rows.filter(status=RunStatus.QUEUED)
            if not rows.update(**fields):
                status = Run.objects.filter(pk=run.pk).values_list("status", flat=True).first()
                raise Conflict("not_queued", f"Run {run.pk} is {status}: its priority changes only while it is "
                               "queued.", field="priority", extra={"status": status})
            run.refresh_from_db()
            changed = {key for key in fields if before[key] != fields[key]}
            if "name" in changed:
                audit_record(action="run.renamed", actor=actor, team=run.team, obj=run, object_type="run",
                             before={"name": before["name"]}, after={"name": run.name})
            others = sorted(changed - {"name"})
            if others:
                audit_record(action="run.updated", actor=actor, team=run.team, obj=run, object_type="run",
                             before={key: before[key] for key in others}, after={key: fields[key] for key in others})
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
    dataset_version: int | None = None,
    reproduces: Run | None = None,
    init_source: Any = None,
) -> Run:
    """Validate config, data recipe and graph against the dataset; store the run queued; queue training.

    A run that asks for more devices (config.processes) than its team may use per run is refused
    (a DomainError naming `config.processes`); `priority` (-10..10) orders it within its team.

    `init` {run, checkpoint, mode: "finetune" | "resume"} starts the weights from a checkpoint of
    a run the user can see: checked here (run_init_check), its plan stored in `run.init`, and the
    checkpoint folder copied into the new run's folder (`init/`), so the source may be pruned later.
    `origin` says who made the run besides its creator ({"sweep": id, "trial": n}).

    `dataset_version` (a version number of `dataset`) pins the data; by default the newest ready
    version, or, for a run started from a checkpoint of a run on the same dataset, that run's.
    The run keeps it for ever (run.dataset_version): its recipe names that version's file.
    `reproduces` and `init_source` (an InitSource already checked: the original's own `init/`) are
    run_reproduce's.
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
    source = init_source
    if init is not None and source is None:
        source = run_init_check(user=user, graph_revision=graph_revision, config=config_json, init=init)
    version = run_dataset_version_pick(dataset=dataset, number=dataset_version, init=init)
    recipe = run_recipe_build(dataset=dataset, transforms=transforms, split=split, version=version)
    data = SimpleNamespace(pk=dataset.pk, status=dataset.status,
                           summary=version.summary if version is not None else dataset.summary)
    report = check_graph_fits_dataset(graph_revision=graph_revision, dataset=data, config=config_json)
    # What else the trainer would refuse only at its start: device, precision, metric names.
    outputs = list((report.get("outputs") or {}).values())
    check_config_fits(config=config_json, recipe=recipe, summary=data.summary or {},
                      output_shape=outputs[0] if len(outputs) == 1 else None)
    need_kind, need_devices = run_need(config_json)
    run_team_limits_check(team=team, devices=need_devices, nodes=int(config_json.get("nodes") or 1))
    with transaction.atomic():
        run = Run.objects.create(
            need_kind=need_kind,
            need_devices=need_devices,
            priority=run_priority_clean(priority) if priority is not None else 0,
            team=team,
            graph_revision=graph_revision,
            dataset=dataset,
            dataset_version=version,
            name=name,
            notes=notes,
            tags=tags,
            init=source.init if source is not None else {},
            origin=dict(origin or {}),
            config=config_json,
            recipe=recipe,
            reproduces=reproduces,
            code_version=code_version(),
            created_by=user,
            max_attempts=int(conf.get("RUNS_MAX_ATTEMPTS")),
            queued_sent_at=timezone.now(),
        )
        if source is not None:
            _init_copy(source=source.path, run_id=run.pk)  # a failed copy rolls the row back
        audit_record(action="run.created", actor=user, team=team, obj=run, object_type="run",
                     object_repr=run.name or f"run {run.pk}",
                     after={"name": run.name, "graph": graph_revision.graph_id, "revision": graph_revision.number,
                            "dataset": dataset.pk, "dataset_version": version.number if version else None,
                            "origin": run.origin or None, "init": run.init or None,
                            **({"reproduces": reproduces.pk} if reproduces is not None else {})})
        event_emit(run_id=run.pk, event={"type": "status", "status": RunStatus.QUEUED, "detail": "queued"})
        _queue_train(run.pk)
    run.refresh_from_db()
    return run


def run_dataset_version_pick(*, dataset: Any, number: Any, init: dict[str, Any] | None = None) -> Any:
    """The DatasetVersion a new run pins: version `number` of the dataset (400 naming
    `dataset_version` when it has none such, or it is not ready), else the version of the run a
    checkpoint start comes from when that run trained on the same dataset, else the newest."""
    from webapp.datasets.models import DatasetVersion
    from webapp.datasets.versions import dataset_latest_version

    if number is not None:
        if isinstance(number, bool) or not isinstance(number, int):
            raise DomainError("invalid", "dataset_version must be a version number.", field="dataset_version")
        version = DatasetVersion.objects.filter(dataset=dataset, number=number).first()
        if version is None:
            numbers = list(dataset.versions.filter(status="ready").values_list("number", flat=True))
            raise DomainError("invalid", f"Dataset {dataset.pk} has no version {number} (its versions: "
                              f"{', '.join(map(str, numbers)) or 'none'}).", field="dataset_version")
        if version.status != "ready":
            raise DomainError("dataset_not_ready", f"Version {number} of dataset {dataset.pk} is {version.status}.",
                              field="dataset_version")
        return version
    if isinstance(init, dict) and isinstance(init.get("run"), int):
        pinned = (Run.objects.filter(pk=init["run"], dataset_id=dataset.pk)
                  .values_list("dataset_version_id", flat=True).first())
        if pinned is not None:
            return DatasetVersion.objects.get(pk=pinned)
    return dataset_latest_version(dataset=dataset)


@functools.cache
def code_version() -> dict[str, str]:
    """The Netloom this process runs: {"netloom": package version, "commit": git commit when the
    code sits in a git checkout}. Read once per process; recorded on each run at creation."""
    import importlib.metadata
    import subprocess

    found: dict[str, str] = {}
    try:
        found["netloom"] = importlib.metadata.version("netloom")
    except importlib.metadata.PackageNotFoundError:
        pass
    root = Path(__file__).resolve().parents[2]
    if (root / ".git").exists():
        try:
            answer = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                                    text=True, timeout=5, check=False)
        except (OSError, subprocess.SubprocessError):
            answer = None
        if answer is not None and answer.returncode == 0 and answer.stdout.strip():
            found["commit"] = answer.stdout.strip()
    return found


def run_reproduction_dataset(run: Run) -> dict[str, Any]:
    """What a reproduction of `run` trains on, as run_create's keyword arguments: the one place that
    says which data a reproduction pins: the run's dataset and the version it was pinned to."""
    pinned = run.dataset_version.number if run.dataset_version_id is not None else None
    return {"dataset": run.dataset, "dataset_version": pinned}


def run_reproduce(*, run: Run, user: AbstractBaseUser, deterministic: bool | None = None) -> Run:
    """A new queued run repeating `run`: the same graph revision, data (recipe transforms and split),
    config (seed included) and initialisation (a copy of the original's own `init/`, so a source
    checkpoint pruned or rewritten since makes no difference), named "<name> (reproduction)" and
    pointing back at it (`reproduces`). `deterministic` sets config.deterministic (None: as it was).

    Refused (409 `not_reproducible`) for a run that trained nothing (imported weights) or whose
    `init/` copy is gone.
    """
    from .checks import InitSource

    if run.dataset_id is None or run.origin.get("kind") == "import":
        raise Conflict("not_reproducible", f"Run {run.pk} recorded imported weights: there is no training to repeat.")
    source = None
    if run.init:
        folder = conf.run_dir(run.pk) / "init"
        if not folder.is_dir():
            raise Conflict("not_reproducible",
                           f"Run {run.pk} started from a checkpoint whose copy (init/) is no longer on the server.")
        source = InitSource(path=folder, init=dict(run.init), problems=[])
    config = dict(run.config)
    if deterministic is not None:
        config["deterministic"] = bool(deterministic)
    recipe = run.recipe or {}
    base = run.name or f"run {run.pk}"
    return run_create(
        user=user, team=run.team, graph_revision=run.graph_revision, **run_reproduction_dataset(run),
        config=config, transforms=recipe.get("transforms"), split=recipe.get("split"),
        name=run_name_clean(f"{base[:NAME_LENGTH - len(' (reproduction)')]} (reproduction)"),
        tags=list(run.tags or []), init=None, init_source=source, reproduces=run,
    )


def run_team_limits_check(*, team: Any, devices: int, nodes: int = 1) -> None:
    """Refuse a run that asks for more devices than its team may use per run (names
    config.processes, and config.nodes for a run over several machines)."""
    limit = getattr(team, "max_devices_per_run", None)
    if limit is not None and devices > limit:
        what = "processes" if nodes == 1 else f"{nodes} nodes x processes"
        message = (f"This run asks for {devices} devices ({what}); team {team.name} may use at most "
                   f"{limit} per run (ask a site administrator to raise max_devices_per_run).")
        fields = {"config.processes": [message], **({"config.nodes": [message]} if nodes > 1 else {})}
        raise DomainError("team_limit", message, fields=fields)


# --- cancel -------------------------------------------------------------------------------


def run_cancel(*, run: Run, user: AbstractBaseUser | None = None) -> Run:
    """Cancel a run: a queued one at once, a running one at the trainer's next step.

    The audit log gets `run.cancelled` with `user` as the actor (None: the system)."""
    now = timezone.now()
    before = Run.objects.filter(pk=run.pk).values_list("status", flat=True).first()
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
            audit_record(action="run.cancelled", actor=user, team=run.team, obj=run, object_type="run",
                         object_repr=run.name or f"run {run.pk}", before={"status": before},
                         after={"status": RunStatus.CANCELLED})
        else:
            flagged = Run.objects.filter(pk=run.pk, status=RunStatus.RUNNING, cancel_requested=False).update(
                cancel_requested=True
            )
            if flagged:
                audit_record(action="run.cancelled", actor=user, team=run.team, obj=run, object_type="run",
                             object_repr=run.name or f"run {run.pk}", before={"status": RunStatus.RUNNING},
                             after={"status": RunStatus.RUNNING, "cancel_requested": True})
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
    export: bool = True,
) -> bool:
    """Record the outcome while holding the lease; False (nothing written) when it was lost.

    `export`: a succeeded run's export job (ONNX and the zip) is queued with the outcome; False
    leaves it to the first download that asks (a sweep's trials: run_export_download).
    """
    now = timezone.now()
    fields: dict[str, Any] = {
        "status": status, "finished_at": now, "lease_token": None, "lease_expires_at": None,
        "error": error, "eta_seconds": None,
    }
    if final_metrics is not None:
        fields["final_metrics"] = final_metrics
    succeeded = status == RunStatus.SUCCEEDED
    with transaction.atomic():
        if not Run.objects.filter(pk=run_id, lease_token=lease_token).update(**fields):
            return False
        event = {"type": "status", "status": status, "detail": detail or status, **(extra or {})}
        if error:
            event["error"] = error
        if final_metrics is not None:
            event["final_metrics"] = final_metrics  # the page shows them without asking again
        if succeeded:
            # ONNX and the zip take longer: their job is created here, with the outcome, so the
            # exports the event announces are pending (run_export_request).
            finished = Run.objects.select_related("team", "created_by").get(pk=run_id)
            if export:
                export_job_create(run=finished)
            event["exports"] = run_exports(finished)
        event_emit(run_id=run_id, event=event)
        Worker.objects.filter(current_run_id=run_id).update(current_run=None)
        _team_freed(run_id)
        run_finished_send(run_id=run_id, status=status)
    return True


# --- explanations -----------------------------------------------------------------------------


# --- exports ------------------------------------------------------------------------------------


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


__all__ = [
    "metrics_json",
    "run_config_parse",
    "code_version",
    "run_create",
    "run_reproduce",
    "run_reproduction_dataset",
    "run_update",
    "run_tags_clean",
    "run_cancel",
    "run_priority_clean",
    "run_finish",
    "run_log",
]
