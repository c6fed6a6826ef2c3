"""Reads of the sweeps app: the list filters, each trial's state as shown, progress, the best trial."""

from __future__ import annotations

from typing import Any

from django.db.models import Prefetch, QuerySet

from .models import ACTIVE_TRIAL_STATES, Sweep, SweepTrial, TrialState


def sweeps_with_trials(sweeps: QuerySet[Sweep]) -> QuerySet[Sweep]:
    """Sweeps with what their answers show: graph, dataset, creator, trials with their runs."""
    return sweeps.select_related("graph_revision__graph", "dataset", "created_by").prefetch_related(
        Prefetch("trials", queryset=SweepTrial.objects.select_related("run").order_by("number"))
    )


def sweeps_filter(
    sweeps: QuerySet[Sweep], *, statuses: list[str] | None = None, graph_id: int | None = None
) -> QuerySet[Sweep]:
    """The list filters of GET /api/sweeps/ (`?status=a,b&graph=`) on already scoped sweeps."""
    if statuses:
        sweeps = sweeps.filter(status__in=statuses)
    if graph_id is not None:
        sweeps = sweeps.filter(graph_revision__graph_id=graph_id)
    return sweeps


def trial_state(trial: SweepTrial) -> str:
    """The trial's state as shown: a queued trial whose run is training reads as running."""
    if trial.state == TrialState.QUEUED and trial.run is not None and trial.run.status == "running":
        return TrialState.RUNNING
    return trial.state


def sweep_trials(sweep: Sweep) -> list[SweepTrial]:
    """The sweep's trials in number order (prefetched by sweeps_with_trials when it was used)."""
    return sorted(sweep.trials.all(), key=lambda t: t.number)


def sweep_progress(sweep: Sweep) -> dict[str, int]:
    """{total (the budget), done (trials that ended), running, queued, pruned, failed}."""
    states = [trial_state(t) for t in sweep_trials(sweep)]
    return {
        "total": sweep.budget,
        "done": sum(s not in ACTIVE_TRIAL_STATES for s in states),
        "running": states.count(TrialState.RUNNING),
        "queued": states.count(TrialState.QUEUED),
        "pruned": states.count(TrialState.PRUNED),
        "failed": states.count(TrialState.FAILED),
    }


def sweep_best(sweep: Sweep) -> dict[str, Any] | None:
    """The complete trial with the best value by the objective's mode: {number, run, value, params}."""
    complete = [t for t in sweep_trials(sweep) if t.state == TrialState.COMPLETE and t.value is not None]
    if not complete:
        return None
    sign = -1.0 if (sweep.objective or {}).get("mode") == "max" else 1.0
    best = min(complete, key=lambda t: (sign * t.value, t.number))
    return {"number": best.number, "run": best.run_id, "value": best.value, "params": best.params}
