"""Optuna, driven ask-and-tell with the sweep's own rows as the storage (no Optuna tables, no file).

Each question (the next trial's parameters, whether a trial should stop) builds an in-memory study
from the sweep's SweepTrial rows: complete trials with their value, pruned ones with their
intermediate values, queued and running ones as RUNNING (TPE's constant liar counts them), refused,
failed and cancelled ones as FAIL (a grid does not revisit their point). Each trial's Optuna system
attributes (GridSampler's grid id, successive halving's rungs) are kept on its row and given back.
The sampler is seeded with (sweep seed, trial number), so a rebuilt study never repeats the same
first sample and a sweep with the same seed and the same results asks the same trials.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

from .models import Sweep, SweepTrial, TrialState
from .space import Dimension

# Epochs a pruner never stops a trial at: the first one's validation is too noisy to judge.
PRUNE_WARMUP_EPOCHS = 1


def _optuna() -> Any:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna


def startup_trials(budget: int) -> int:
    """How many trials TPE samples at random first, and how many complete before a pruner acts."""
    return max(2, min(5, budget // 4))


def _seed(sweep: Sweep, number: int) -> int:
    return (int(sweep.seed) * 1_000_003 + number) % 2**32


def _sampler(sweep: Sweep, dims: list[Dimension], number: int) -> Any:
    optuna = _optuna()
    seed = _seed(sweep, number)
    if sweep.strategy == "grid":
        # One seed for the whole sweep: it orders the grid, and the kept grid ids index that order.
        return optuna.samplers.GridSampler({d.key: list(d.values or ()) for d in dims}, seed=int(sweep.seed))
    if sweep.strategy == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    with warnings.catch_warnings():  # constant_liar is marked experimental
        warnings.simplefilter("ignore")
        return optuna.samplers.TPESampler(seed=seed, n_startup_trials=startup_trials(sweep.budget),
                                          constant_liar=True)


def pruner_for(sweep: Sweep) -> Any | None:
    """The sweep's Optuna pruner, None for "none"."""
    optuna = _optuna()
    if sweep.pruner == "median":
        return optuna.pruners.MedianPruner(n_startup_trials=startup_trials(sweep.budget),
                                           n_warmup_steps=PRUNE_WARMUP_EPOCHS + 1)
    if sweep.pruner == "successive_halving":
        return optuna.pruners.SuccessiveHalvingPruner(min_resource="auto", reduction_factor=3)
    if sweep.pruner == "hyperband":
        # Brackets of successive halving, each trial in one by a hash of the study's name and its
        # number (so the study's name is the sweep's, the same at every ask and report).
        epochs = (sweep.config or {}).get("epochs")
        return optuna.pruners.HyperbandPruner(
            min_resource=1, max_resource=epochs if isinstance(epochs, int) and epochs > 1 else "auto",
            reduction_factor=3,
        )
    return None


def _direction(sweep: Sweep) -> str:
    return "maximize" if (sweep.objective or {}).get("mode") == "max" else "minimize"


def intermediate_values(trial: SweepTrial) -> dict[int, float]:
    """{epoch: value} of the trial's reported objective (null values left out)."""
    return {int(epoch): float(value) for epoch, value in trial.intermediate or [] if value is not None}


def _frozen(trial: SweepTrial, dims: list[Dimension], *, running: bool = False) -> Any:
    optuna = _optuna()
    states = optuna.trial.TrialState
    distributions = {d.key: d.distribution for d in dims if d.key in (trial.params or {})}
    params = {key: trial.params[key] for key in distributions}
    common = {"params": params, "distributions": distributions, "system_attrs": dict(trial.system_attrs or {}),
              "intermediate_values": intermediate_values(trial)}
    if running or trial.state in (TrialState.QUEUED, TrialState.RUNNING):
        return optuna.trial.create_trial(state=states.RUNNING, **common)
    if trial.state == TrialState.COMPLETE and trial.value is not None:
        return optuna.trial.create_trial(state=states.COMPLETE, value=trial.value, **common)
    if trial.state == TrialState.PRUNED:
        return optuna.trial.create_trial(state=states.PRUNED, **common)
    return optuna.trial.create_trial(state=states.FAIL, **common)


def _study(sweep: Sweep, dims: list[Dimension], trials: list[SweepTrial], number: int,
           current: SweepTrial | None = None) -> Any:
    optuna = _optuna()
    study = optuna.create_study(sampler=_sampler(sweep, dims, number), pruner=pruner_for(sweep),
                                direction=_direction(sweep), study_name=f"sweep-{sweep.pk}")
    for trial in trials:
        study.add_trial(_frozen(trial, dims))
    if current is not None:
        study.add_trial(_frozen(current, dims, running=True))
    return study


def study_ask(sweep: Sweep, dims: list[Dimension], trials: list[SweepTrial], number: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """The parameters of trial `number` and the sampler's system attributes to keep with it."""
    study = _study(sweep, dims, trials, number)
    asked = study.ask({d.key: d.distribution for d in dims})
    frozen = study.get_trials(deepcopy=False)[asked.number]
    return dict(asked.params), _plain(dict(frozen.system_attrs))


@dataclass(frozen=True)
class PruneAnswer:
    """Whether the trial stops now, why (for its run's `error`), and its Optuna attributes after asking."""

    prune: bool
    reason: str
    system_attrs: dict[str, Any]


def study_prune(sweep: Sweep, dims: list[Dimension], others: list[SweepTrial], trial: SweepTrial) -> PruneAnswer:
    """Ask the sweep's pruner about `trial` (its intermediate values as reported so far)."""
    pruner = pruner_for(sweep)
    values = intermediate_values(trial)
    if pruner is None or not values:
        return PruneAnswer(False, "", dict(trial.system_attrs or {}))
    study = _study(sweep, dims, others, trial.number, current=trial)
    frozen = study.get_trials(deepcopy=False)[-1]
    prune = bool(pruner.prune(study, frozen))
    attrs = _plain(dict(study.get_trials(deepcopy=False)[-1].system_attrs))
    return PruneAnswer(prune, _reason(sweep, others, trial, values) if prune else "", attrs)


def _reason(sweep: Sweep, others: list[SweepTrial], trial: SweepTrial, values: dict[int, float]) -> str:
    """A sentence a user can check: the trial's value against what the pruner compared it with."""
    import numpy as np

    metric = (sweep.objective or {}).get("metric", "val/loss")
    maximize = _direction(sweep) == "maximize"
    epoch = max(values)
    if sweep.pruner in ("successive_halving", "hyperband"):
        how = "successive halving" if sweep.pruner == "successive_halving" else "Hyperband (successive halving in its bracket)"
        return (f"pruned at epoch {epoch} by {how}: {metric} {values[epoch]:.4g} is not among "
                f"the best third of the trials that reached epoch {epoch}")
    best = max(values.values()) if maximize else min(values.values())
    at_epoch = [v for t in others if t.state == TrialState.COMPLETE
                for e, v in intermediate_values(t).items() if e == epoch]
    median = float(np.nanmedian(at_epoch)) if at_epoch else math.nan
    return (f"pruned at epoch {epoch}: {metric} {best:.4g} (its best so far) worse than the median "
            f"{median:.4g} of {len(at_epoch)} complete trials at that epoch")


def _plain(attrs: dict[str, Any]) -> dict[str, Any]:
    """System attributes as JSON (Optuna keeps tuples and numpy numbers in some)."""
    import json

    return json.loads(json.dumps(attrs, default=lambda o: o.item() if hasattr(o, "item") else list(o)))
