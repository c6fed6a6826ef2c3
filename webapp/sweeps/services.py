"""Writes of the sweeps app: create, cancel, schedule trials when runs end, the trials' pruning.

A sweep's trials are ordinary runs (webapp.runs.services.run_create with origin {"sweep", "trial"}).
Scheduling happens under the sweep's row lock (`_sweep_lock`): at create (min(parallelism, budget)
trials) and whenever one of its runs ends (`sweep_run_finished`, connected to
webapp.runs.signals.run_finished in SweepsConfig.ready). Every trial's config and graph are
checked before its run is queued; a trial that does not validate is recorded failed with the
reason and the next one is asked. The worker reports each epoch's objective through
`trial_monitor(run_id)` (a trainer callback), which asks the sweep's pruner.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import OperationalError, transaction
from django.utils import timezone

from webapp.db_locks import retry_while_locked
from webapp.errors import Conflict, DomainError

from .models import (
    ACTIVE_TRIAL_STATES,
    Sweep,
    SweepPruner,
    SweepStatus,
    SweepStrategy,
    SweepTrial,
    TrialState,
)
from .space import Dimension, grid_size, space_dimensions, space_parse, trial_config, trial_spec
from .study import study_ask, study_prune

logger = logging.getLogger(__name__)

MAX_BUDGET = 500
MAX_PARALLELISM = 32

_RUN_TO_TRIAL = {
    "succeeded": TrialState.COMPLETE,
    "pruned": TrialState.PRUNED,
    "failed": TrialState.FAILED,
    "cancelled": TrialState.CANCELLED,
}


# --- create ---------------------------------------------------------------------------------


def _objective_clean(objective: Any) -> dict[str, str]:
    if objective is None:
        return {"metric": "val/loss", "mode": "min"}
    if not isinstance(objective, dict):
        raise DomainError("invalid", 'objective must be an object {"metric": "val/loss", "mode": "min"}.',
                          field="objective")
    unknown = sorted(set(objective) - {"metric", "mode"})
    if unknown:
        raise DomainError("invalid", f"objective has no field {unknown[0]!r} (it takes metric, mode).",
                          field=f"objective.{unknown[0]}")
    metric = objective.get("metric", "val/loss")
    mode = objective.get("mode", "min")
    if not isinstance(metric, str) or not metric.startswith("val/"):
        raise DomainError("invalid", "objective.metric must be a validation metric (val/loss, val/accuracy, ...).",
                          field="objective.metric")
    if mode not in ("min", "max"):
        raise DomainError("invalid", "objective.mode must be min or max.", field="objective.mode")
    return {"metric": metric, "mode": mode}


def _whole(value: Any, name: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise DomainError("invalid", f"{name} must be a whole number from {low} to {high}.", field=name)
    return value


def sweep_create(
    *,
    user: AbstractBaseUser,
    team: Any,
    graph_revision: Any,
    dataset: Any,
    name: str,
    config: dict[str, Any] | None,
    space: Any,
    strategy: str = SweepStrategy.TPE,
    pruner: str = SweepPruner.NONE,
    objective: dict[str, Any] | None = None,
    budget: int = 20,
    parallelism: int = 2,
    seed: int = 0,
    transforms: dict[str, Any] | None = None,
    split: dict[str, Any] | None = None,
) -> Sweep:
    """Check the base, the objective and the space, then store the sweep and queue its first trials.

    The first trial must validate (its config and graph): otherwise nothing is stored and the
    DomainError names the problem. A grid's budget is at most the grid's size.
    """
    from webapp.runs.checks import (
        check_dataset_trainable,
        check_graph_fits_dataset,
        validation_metric_names,
    )
    from webapp.runs.services import run_config_parse, run_recipe_build

    name = (name or "").strip()
    if not name:
        raise DomainError("invalid", "A sweep needs a name.", field="name")
    if strategy not in SweepStrategy.values:
        raise DomainError("invalid", f"strategy must be one of {', '.join(SweepStrategy.values)}.", field="strategy")
    if pruner not in SweepPruner.values:
        raise DomainError("invalid", f"pruner must be one of {', '.join(SweepPruner.values)}.", field="pruner")
    budget = _whole(budget, "budget", 1, MAX_BUDGET)
    parallelism = _whole(parallelism, "parallelism", 1, MAX_PARALLELISM)
    seed = _whole(seed, "seed", 0, 2**31 - 1)
    objective_json = _objective_clean(objective)
    check_dataset_trainable(dataset=dataset)
    config_json = run_config_parse(config)
    recipe = run_recipe_build(dataset=dataset, transforms=transforms, split=split)
    if not (recipe.get("split") or {}).get("val", 1):
        raise DomainError("invalid", "A sweep's objective is a validation metric: set split.val above 0.",
                          field="split.val")
    report = check_graph_fits_dataset(graph_revision=graph_revision, dataset=dataset, config=config_json)
    outputs = list((report.get("outputs") or {}).values())
    if len(outputs) == 1:
        names = validation_metric_names(summary=dataset.summary or {}, config=config_json, output_shape=outputs[0])
        if names and objective_json["metric"] not in names:
            raise DomainError("invalid", f"objective.metric {objective_json['metric']!r} is not a validation metric "
                              f"of this run; choose one of {', '.join(names)}.", field="objective.metric")
    dims = space_parse(space, strategy=strategy, spec=graph_revision.spec, base_config=config_json)
    if strategy == SweepStrategy.GRID:
        budget = min(budget, grid_size(dims))
    with transaction.atomic():
        sweep = Sweep.objects.create(
            team=team, created_by=user, name=name[:200], graph_revision=graph_revision, dataset=dataset,
            config=config_json, transforms=transforms, split=split, space=space, strategy=strategy,
            pruner=pruner, objective=objective_json, budget=budget, parallelism=parallelism, seed=seed,
        )
        first, refusal = _trial_next(sweep, dims, [])
        if refusal is not None:
            raise DomainError(
                "invalid_trial", f"The first trial ({_params_text(first.params)}) cannot train: {first.reason}",
                fields={"space": [first.reason], **refusal.fields},
                extra={"trial": {"number": first.number, "params": first.params}},
            )
        _schedule(sweep, dims)
    sweep.refresh_from_db()
    return sweep


def _params_text(params: dict[str, Any]) -> str:
    return ", ".join(f"{key}={value!r}" for key, value in params.items())


# --- trials -----------------------------------------------------------------------------------


def _sweep_lock(sweep_id: int) -> Sweep:
    """Lock the sweep's row for the rest of the transaction; every scheduling step runs under it.

    The UPDATE takes the row lock on PostgreSQL and the write lock on SQLite (which ignores
    SELECT ... FOR UPDATE), so two runs ending at once never ask the same trial number.
    """
    Sweep.objects.filter(pk=sweep_id).update(updated_at=timezone.now())
    return Sweep.objects.select_for_update(of=("self",)).select_related("graph_revision__graph", "dataset", "team",
                                                             "created_by").get(pk=sweep_id)


def _revision_for(*, sweep: Sweep, spec: dict[str, Any]) -> Any:
    """The graph's revision holding `spec`: an existing one with its hash, else a new one saved now."""
    from webapp.graphs.models import GraphRevision
    from webapp.graphs.services import check_spec, revision_save

    base = sweep.graph_revision
    normalised, digest, _ = check_spec(spec)
    if digest == base.spec_hash:
        return base
    existing = GraphRevision.objects.filter(graph_id=base.graph_id, spec_hash=digest).order_by("number").first()
    if existing is not None:
        return existing
    revision, _ = revision_save(graph=base.graph, spec=normalised, created_by=sweep.created_by,
                                origin=f"sweep {sweep.pk}")
    return revision


def _trial_run_create(sweep: Sweep, dims: list[Dimension], trial: SweepTrial) -> Any:
    """Validate the trial's config and graph, then queue its run; raises DomainError when it cannot train."""
    from engine.train import TrainConfig
    from webapp.runs.checks import check_graph_fits_dataset
    from webapp.runs.services import run_config_parse, run_create

    config = run_config_parse(trial_config(sweep.config, dims, trial.params))
    if "best" in TrainConfig.model_fields:  # the export holds the weights of the trial's best epoch
        config["best"] = dict(sweep.objective)
    if config.get("checkpoint_every") == TrainConfig.model_fields["checkpoint_every"].default:
        # A trial keeps its best epoch and its last one, not a checkpoint per epoch: the best is
        # held in memory between them (engine/train/resume.py), a base config's own cadence wins.
        config["checkpoint_every"] = config["epochs"]
        config["keep_checkpoints"] = 1
    config = run_config_parse(config)
    spec = trial_spec(sweep.graph_revision.spec, dims, trial.params)
    # The graph is checked before a revision is saved for it: a refused trial leaves nothing behind.
    check_graph_fits_dataset(graph_revision=SimpleNamespace(spec=spec), dataset=sweep.dataset, config=config)
    revision = _revision_for(sweep=sweep, spec=spec)
    return run_create(
        user=sweep.created_by, team=sweep.team, graph_revision=revision, dataset=sweep.dataset, config=config,
        transforms=sweep.transforms, split=sweep.split, name=f"{sweep.name} #{trial.number}"[:200],
        origin={"sweep": sweep.pk, "trial": trial.number}, dataset_version=_sweep_dataset_version(sweep),
    )


def _sweep_dataset_version(sweep: Sweep) -> int | None:
    """The dataset version every trial trains on: the one its first trial's run pinned (a version
    uploaded during the sweep never mixes in); None before any trial ran (the newest)."""
    from webapp.runs.models import Run

    return (Run.objects.filter(origin__sweep=sweep.pk, dataset_version__isnull=False)
            .order_by("id").values_list("dataset_version__number", flat=True).first())


def _trial_next(
    sweep: Sweep, dims: list[Dimension], trials: list[SweepTrial]
) -> tuple[SweepTrial, DomainError | None]:
    """Ask Optuna for the next trial and queue its run, or record it failed with the refusal's reason."""
    number = max((t.number for t in trials), default=0) + 1
    params, system_attrs = study_ask(sweep, dims, trials, number)
    trial = SweepTrial.objects.create(sweep=sweep, number=number, params=params, system_attrs=system_attrs,
                                      state=TrialState.QUEUED)
    try:
        with transaction.atomic():  # a refusal rolls back the trial's revision and run
            run = _trial_run_create(sweep, dims, trial)
    except DomainError as exc:
        trial.state, trial.reason, trial.finished_at = TrialState.FAILED, exc.message, timezone.now()
        trial.save(update_fields=["state", "reason", "finished_at"])
        return trial, exc
    trial.run = run
    trial.save(update_fields=["run"])
    return trial, None


def _schedule(sweep: Sweep, dims: list[Dimension] | None = None) -> None:
    """Under the sweep's lock: ask trials while the budget and the parallelism allow, then finish if done."""
    if sweep.status != SweepStatus.RUNNING:
        return
    dims = dims if dims is not None else space_dimensions(sweep.space, strategy=sweep.strategy)
    trials = list(sweep.trials.all())
    while len(trials) < sweep.budget and sum(t.state in ACTIVE_TRIAL_STATES for t in trials) < sweep.parallelism:
        trials.append(_trial_next(sweep, dims, trials)[0])
    if len(trials) >= sweep.budget and not any(t.state in ACTIVE_TRIAL_STATES for t in trials):
        complete = [t for t in trials if t.state == TrialState.COMPLETE]
        sweep.status = SweepStatus.SUCCEEDED if complete else SweepStatus.FAILED
        if not complete:
            first = next((t.reason for t in trials if t.reason), "")
            sweep.error = "no trial completed" + (f"; the first said: {first}" if first else "")
        sweep.finished_at = timezone.now()
        sweep.save(update_fields=["status", "error", "finished_at", "updated_at"])


def _best(values: list[float], mode: str) -> float | None:
    finite = [v for v in values if v is not None and math.isfinite(v)]
    if not finite:
        return None
    return max(finite) if mode == "max" else min(finite)


def _trial_record(sweep: Sweep, trial: SweepTrial, run: Any) -> None:
    """Record how a trial's run ended: state, value (the best epoch's objective), reason."""
    state = _RUN_TO_TRIAL.get(run.status)
    if state is None:
        return  # not terminal (a requeued run): nothing to record yet
    metric, mode = sweep.objective["metric"], sweep.objective.get("mode", "min")
    value = _best([v for _, v in trial.intermediate or []], mode)
    if value is None and isinstance((run.final_metrics or {}).get(metric), int | float):
        value = _best([float(run.final_metrics[metric])], mode)
    reason = run.error or ""
    if state == TrialState.COMPLETE and value is None:
        state, reason = TrialState.FAILED, f"the run reported no finite {metric}"
    elif state == TrialState.FAILED and not reason:
        reason = "the run failed"
    elif state == TrialState.CANCELLED and not reason:
        reason = "cancelled with the sweep" if sweep.status == SweepStatus.CANCELLED else "its run was cancelled"
    trial.state, trial.value, trial.reason, trial.finished_at = state, value, reason, timezone.now()
    trial.save(update_fields=["state", "value", "reason", "finished_at"])


def sweep_run_finished(sender: Any = None, *, run_id: int, status: str, **_: Any) -> None:
    """run_finished receiver: record the trial and schedule the sweep's next ones (no-op for other runs).

    Never raises: an error here is logged and the sweep marked failed with the reason, so a sweep
    is never left waiting for trials nobody will ask.
    """
    found = SweepTrial.objects.filter(run_id=run_id).values_list("pk", "sweep_id").first()
    if found is None:
        return
    trial_id, sweep_id = found

    def record_and_schedule() -> None:
        with transaction.atomic():
            sweep = _sweep_lock(sweep_id)
            trial = SweepTrial.objects.select_related("run").get(pk=trial_id)
            if trial.state in ACTIVE_TRIAL_STATES and trial.run is not None:
                _trial_record(sweep, trial, trial.run)
            _schedule(sweep)

    try:
        retry_while_locked(record_and_schedule, what=f"sweep {sweep_id}: after run {run_id}")
    except Exception as exc:
        logger.exception("sweep %s: scheduling after run %s failed", sweep_id, run_id)
        Sweep.objects.filter(pk=sweep_id, status=SweepStatus.RUNNING).update(
            status=SweepStatus.FAILED, finished_at=timezone.now(),
            error=f"scheduling the next trial failed after run {run_id} ended ({type(exc).__name__}: {exc})",
        )


# --- cancel -----------------------------------------------------------------------------------


def sweep_cancel(*, sweep: Sweep, user: AbstractBaseUser | None = None) -> Sweep:
    """Cancel a sweep: no more trials; queued trials' runs cancelled at once, running ones at their next step."""
    from webapp.runs.services import run_cancel

    with transaction.atomic():
        locked = _sweep_lock(sweep.pk)
        if locked.is_finished:
            raise Conflict("sweep_finished", f"Sweep {sweep.pk} has already finished ({locked.status}).")
        who = getattr(user, "username", None) or "a user"
        locked.status, locked.finished_at, locked.error = SweepStatus.CANCELLED, timezone.now(), f"cancelled by {who}"
        locked.save(update_fields=["status", "finished_at", "error", "updated_at"])
        for trial in locked.trials.filter(state__in=ACTIVE_TRIAL_STATES).select_related("run"):
            if trial.run is None:
                continue
            try:
                run = run_cancel(run=trial.run, user=user)
            except Conflict:
                continue  # it ended meanwhile; its run_finished records it
            if run.is_finished:  # a queued one: cancelled now (a running one ends at its next step)
                _trial_record(locked, trial, run)
    sweep.refresh_from_db()
    return sweep


# --- the worker's side: each epoch's objective, the pruner's answer ---------------------------------


class TrialReportLost(RuntimeError):
    """An epoch's objective could not be stored: the trial's run fails with this message."""


def _trial_value_store(trial_id: int, epoch: int, value: float) -> SweepTrial:
    with transaction.atomic():
        return _intermediate_store(trial_id, [(epoch, value)])


def _trial_prune(trial: SweepTrial) -> tuple[bool, str]:
    # Reads, then one UPDATE (its own transaction): no write lock held while Optuna thinks.
    sweep = trial.sweep
    dims = space_dimensions(sweep.space, strategy=sweep.strategy)
    others = list(sweep.trials.exclude(pk=trial.pk))
    answer = study_prune(sweep, dims, others, trial)
    if answer.system_attrs != (trial.system_attrs or {}):
        SweepTrial.objects.filter(pk=trial.pk).update(system_attrs=answer.system_attrs)
    return answer.prune, answer.reason


def trial_report(*, trial_id: int, epoch: int, value: float, last_epoch: bool) -> tuple[bool, str]:
    """Store the trial's objective at `epoch`, then ask the pruner: (stop now, why).

    Each is its own short write transaction, tried again while SQLite is locked
    (webapp/db_locks.py). A value that still cannot be stored raises TrialReportLost: the pruner
    and the sweep's charts read these values, so a trial never goes on with a hole in them.
    """
    try:
        trial = retry_while_locked(lambda: _trial_value_store(trial_id, epoch, value),
                                   what=f"trial {trial_id}: storing epoch {epoch}")
    except OperationalError as exc:
        raise TrialReportLost(
            f"the sweep could not store the objective of epoch {int(epoch)} ({exc}); the trial stops rather "
            "than go on with a hole in its reports"
        ) from exc
    sweep = trial.sweep
    if sweep.pruner == SweepPruner.NONE or last_epoch or sweep.status != SweepStatus.RUNNING:
        return False, ""
    return retry_while_locked(lambda: _trial_prune(trial), what=f"trial {trial_id}: pruning at epoch {epoch}")


def trial_values_store(*, trial_id: int, points: list[tuple[int, float]]) -> None:
    """Store several epochs' objectives of a trial at once (a sweep without a pruner: at its end),
    tried again while SQLite is locked; TrialReportLost when it still cannot be stored."""
    if not points:
        return

    def store() -> None:
        with transaction.atomic():
            _intermediate_store(trial_id, points)

    try:
        retry_while_locked(store, what=f"trial {trial_id}: storing {len(points)} epochs")
    except OperationalError as exc:
        raise TrialReportLost(
            f"the sweep could not store the objectives of {len(points)} epochs ({exc}); the trial fails rather "
            "than keep a hole in its reports"
        ) from exc


def _intermediate_store(trial_id: int, points: list[tuple[int, float]]) -> SweepTrial:
    trial = SweepTrial.objects.select_related("sweep").get(pk=trial_id)
    values = {int(e): v for e, v in trial.intermediate or []}
    values.update((int(e), float(v)) for e, v in points)
    trial.intermediate = [[e, values[e]] for e in sorted(values)]
    SweepTrial.objects.filter(pk=trial_id).update(intermediate=trial.intermediate)
    return trial


@dataclass
class TrialMonitor:
    """Trainer callback of a sweep's trial: reports each validation's objective, stops when pruned.

    `should_stop()` turns True once the pruner said so; `pruned_reason` says why (the run's error).
    Without a pruner (`each_epoch` False) nobody reads the values before the trial ends: they are
    kept here and stored in one write by `flush()`, which the worker calls before it records the
    run's outcome.
    """

    trial_id: int
    metric: str
    each_epoch: bool = True
    pruned_reason: str = ""
    errors: list[str] = field(default_factory=list)
    held: list[tuple[int, float]] = field(default_factory=list)

    def should_stop(self) -> bool:
        """True once the pruner has stopped the trial."""
        return bool(self.pruned_reason)

    def on_validation_end(self, state: Any, metrics: Any) -> None:
        """Report the objective of the epoch just validated; stop when pruned.

        A value that could not be stored (TrialReportLost) fails the run, and so the trial, with
        the reason; the pruner's own failure is logged and training goes on unpruned.
        """
        value = metrics.get(self.metric)
        if not isinstance(value, int | float) or not math.isfinite(value) or self.pruned_reason:
            return
        if not self.each_epoch:
            self.held.append((int(state.epoch), float(value)))
            return
        try:
            prune, reason = trial_report(trial_id=self.trial_id, epoch=int(state.epoch), value=float(value),
                                         last_epoch=int(state.epoch) >= int(state.epochs))
        except TrialReportLost:
            logger.exception("trial %s: the report of epoch %s was not stored", self.trial_id, state.epoch)
            raise
        except Exception as exc:
            logger.exception("trial %s: asking the pruner at epoch %s failed", self.trial_id, state.epoch)
            self.errors.append(str(exc))
            return
        if prune:
            self.pruned_reason = reason

    def flush(self) -> None:
        """Store the values held back (no pruner) before the run's outcome is recorded.

        TrialReportLost (the values could not be stored) fails the run, and so the trial, with
        that reason: a trial never ends "complete" with holes in its reports.
        """
        held, self.held = self.held, []
        try:
            trial_values_store(trial_id=self.trial_id, points=held)
        except TrialReportLost:
            logger.exception("trial %s: its reports were not stored", self.trial_id)
            raise


def trial_monitor(run_id: int) -> TrialMonitor | None:
    """The callback for a sweep trial's run; None for a run that is not a trial."""
    found = SweepTrial.objects.filter(run_id=run_id).select_related("sweep").first()
    if found is None:
        return None
    return TrialMonitor(trial_id=found.pk, metric=(found.sweep.objective or {}).get("metric", "val/loss"),
                        each_epoch=found.sweep.pruner != SweepPruner.NONE)


__all__ = [
    "TrialMonitor",
    "TrialReportLost",
    "sweep_cancel",
    "sweep_create",
    "sweep_run_finished",
    "trial_monitor",
    "trial_report",
    "trial_values_store",
]
