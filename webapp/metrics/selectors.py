"""Reads of the metric store for the API: a run's series, many runs' series, the metric names a run
has, and each run's final and best values (the runs list and the comparison).

Runs come in as rows of the runs app (their pk and event_seq are read); nothing here imports it.
"""

from __future__ import annotations

from typing import Any

from .models import MetricBlock
from .series import metric_series_read
from .store import LEVELS

# Keys whose best value is the lowest (losses and errors); every other metric's best is its highest.
_LOWER_IS_BETTER = ("loss", "mae", "mse", "rmse", "ece", "error")


def metric_mode(key: str) -> str:
    """"min" for loss-like metric keys, else "max" (the `summary.best` of runs)."""
    name = key.rsplit("/", 1)[-1].lower()
    return "min" if any(word in name for word in _LOWER_IS_BETTER) else "max"


def runs_summaries(*, run_ids: list[int]) -> dict[int, dict[str, Any]]:
    """{run id: {"final": {key: value}, "best": {key: {value, step, epoch, mode}}}} over stored series.

    One query for the whole page of runs: the top-level block summaries (one row per run and key
    up to 32,768 steps; webapp/metrics/store.py), whose first/last/min/max are the series'.
    """
    answer: dict[int, dict[str, Any]] = {pk: {"final": {}, "best": {}} for pk in run_ids}
    if not run_ids:
        return answer
    rows = MetricBlock.objects.filter(run_id__in=run_ids, level=len(LEVELS) - 1).order_by(
        "run_id", "key", "block"
    ).values_list("run_id", "key", "last_value", "min_step", "min_epoch", "min_value",
                  "max_step", "max_epoch", "max_value")
    for run_id, key, last, min_step, min_epoch, min_value, max_step, max_epoch, max_value in rows:
        summary = answer[run_id]
        summary["final"][key] = last  # blocks come in step order: the last one's last point wins
        mode = metric_mode(key)
        step, epoch, value = (min_step, min_epoch, min_value) if mode == "min" else (max_step, max_epoch, max_value)
        if value is None:
            continue
        best = summary["best"].get(key)
        if best is None or (value < best["value"] if mode == "min" else value > best["value"]):
            summary["best"][key] = {"value": value, "step": step, "epoch": epoch, "mode": mode}
    return answer


def run_metric_series(
    *, run: Any, keys: list[str] | None = None, max_points: int | None = None,
    from_step: int | None = None, to_step: int | None = None,
) -> dict[str, dict[str, list[Any]]]:
    """{key: {"step": [...], "epoch": [...], "value": [...]}} of a run's steps from_step..to_step.

    A window holding at most `max_points` points comes back point for point; a larger one keeps
    its first, last and each bucket's lowest and highest point (webapp/metrics/store.py).
    """
    (answer,) = runs_metric_series(runs=[run], keys=keys, max_points=max_points, from_step=from_step,
                                   to_step=to_step)
    return answer["series"]


def runs_metric_series(
    *, runs: list[Any], keys: list[str] | None = None, max_points: int | None = None,
    from_step: int | None = None, to_step: int | None = None,
) -> list[dict[str, Any]]:
    """[{"run", "last_seq", "series"}] of each run (the comparison view), read in a few queries."""
    wanted = [(run, key) for run in runs for key in (keys if keys else run_metric_keys(run=run))]
    found = metric_series_read(
        series=[(run.pk, key) for run, key in wanted], max_points=max_points, from_step=from_step, to_step=to_step
    )
    by_run: dict[int, dict[str, dict[str, list[Any]]]] = {run.pk: {} for run in runs}
    for run, key in wanted:
        rows = found.get((run.pk, key))
        if rows:
            by_run[run.pk][key] = {
                "step": [r[0] for r in rows],
                "epoch": [r[1] for r in rows],
                "value": [r[2] for r in rows],
            }
    return [{"run": run.pk, "last_seq": run.event_seq, "series": by_run[run.pk]} for run in runs]


def run_metric_keys(*, run: Any) -> list[str]:
    """The metric names a run has points for (from the top level of the block summaries: a few rows)."""
    top = MetricBlock.objects.filter(run=run, level=len(LEVELS) - 1)
    return list(top.order_by("key").values_list("key", flat=True).distinct())
