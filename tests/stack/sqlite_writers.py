"""Concurrent writers on a stack's SQLite file, one process each (tests/stack/test_sqlite_writers.py).

    python -m tests.stack.sqlite_writers sweep <team> <graph> <dataset> <trials>   -> prints the sweep id
    python -m tests.stack.sqlite_writers report <sweep> <epochs> <trial numbers...>
    python -m tests.stack.sqlite_writers events <run> <seconds>

`report` is what a training worker does for a sweep's trial at each validation (trial_report: the
epoch's objective, then the pruner); `events` is what its recorder does meanwhile for a run
(events_record of metric batches, every 0.05 s). Run with the stack's environment
(DJANGO_SETTINGS_MODULE=tests.stack.e2e_settings): `make run`'s SQLite options. Exits 1 with the
error when a write fails.
"""

from __future__ import annotations

import sys
import time

import django


def make_sweep(team: int, graph: int, dataset: int, trials: int) -> int:
    from webapp.graphs.models import GraphRevision
    from webapp.sweeps.models import Sweep, SweepPruner, SweepStrategy, SweepTrial

    revision = GraphRevision.objects.get(graph_id=graph, number=1)
    sweep = Sweep.objects.create(
        team_id=team, created_by=revision.graph.created_by, name="writers", graph_revision=revision,
        dataset_id=dataset, config={"epochs": 20}, space={"optimizer.lr": {"type": "float", "low": 1e-4, "high": 0.1}},
        strategy=SweepStrategy.RANDOM, pruner=SweepPruner.MEDIAN, objective={"metric": "val/loss", "mode": "min"},
        budget=trials, parallelism=trials,
    )
    for number in range(1, trials + 1):
        SweepTrial.objects.create(sweep=sweep, number=number, params={"optimizer.lr": 0.001 * number})
    return sweep.pk


def report(sweep: int, epochs: int, numbers: list[int]) -> None:
    from webapp.sweeps.models import SweepTrial
    from webapp.sweeps.services import trial_report

    trials = dict(SweepTrial.objects.filter(sweep_id=sweep, number__in=numbers).values_list("number", "pk"))
    for epoch in range(1, epochs + 1):
        for number in numbers:
            trial_report(trial_id=trials[number], epoch=epoch, value=1.0 / (epoch + number), last_epoch=False)


def events(run: int, seconds: float) -> None:
    from webapp.runs.stream.events import events_record

    step, deadline = 100_000, time.monotonic() + seconds
    while time.monotonic() < deadline:
        batch = [{"type": "metric", "step": step + i, "epoch": 1.0, "values": {"writer/x": float(i)}} for i in range(50)]
        events_record(run_id=run, events=batch)
        step += 50
        time.sleep(0.05)


if __name__ == "__main__":
    django.setup()
    role, *args = sys.argv[1:]
    if role == "sweep":
        print(make_sweep(*map(int, args)))
    elif role == "report":
        report(int(args[0]), int(args[1]), [int(a) for a in args[2:]])
    elif role == "events":
        events(int(args[0]), float(args[1]))
    else:
        raise SystemExit(f"unknown role {role!r}")
