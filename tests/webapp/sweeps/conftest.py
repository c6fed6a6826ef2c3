"""Fixtures of the sweeps tests: a memory broker, a sweep body for team A, a way to end a trial's run.

A trial's run is driven through the runs app's own worker-side services (lease, per-epoch report
through the trial's monitor, finish), as the worker does; `run_finished` receivers run on commit.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest


@pytest.fixture(autouse=True)
def _memory_broker() -> Any:
    """Tasks queued by these tests go to an in-memory broker (never the machine's Redis)."""
    from webapp.celery import app

    previous = app.conf.broker_url
    app.conf.broker_url = "memory://"
    app._pool = None
    yield
    app.conf.broker_url = previous
    app._pool = None


@pytest.fixture
def sweep_body(graph_a: Any, dataset_a: Any) -> dict[str, Any]:
    """A valid POST /api/sweeps/ body for team A: lr (log) and fc1's width, TPE, no pruner."""
    return {
        "name": "lr and width", "graph": graph_a.pk, "revision": 1, "dataset": dataset_a.pk,
        "config": {"epochs": 4, "batch_size": 16, "device": "cpu"},
        "space": {"optimizer.lr": {"type": "float", "low": 1e-4, "high": 0.3, "log": True},
                  "nodes.fc1.out_features": {"type": "categorical", "choices": [8, 16, 32]}},
        "strategy": "tpe", "pruner": "none", "objective": {"metric": "val/loss", "mode": "min"},
        "budget": 4, "parallelism": 2, "seed": 7,
    }


@pytest.fixture
def commits(django_capture_on_commit_callbacks: Any) -> Any:
    """`with commits(): ...` runs the on-commit callbacks (run_finished receivers) at its end."""
    return lambda: django_capture_on_commit_callbacks(execute=True)


@pytest.fixture
def end_run(commits: Any) -> Any:
    """Factory: train a trial's run "on paper": lease it, report `values` per epoch, finish with `status`.

    Returns the monitor (its `pruned_reason` says whether the pruner stopped it).
    """
    from webapp.runs.scheduling.leases import run_lease_take
    from webapp.runs.services import run_finish
    from webapp.sweeps.services import trial_monitor

    def end(run_id: int, values: list[float], *, status: str = "succeeded", epochs: int | None = None) -> Any:
        token = run_lease_take(run_id=run_id, worker="test")
        assert token is not None
        monitor = trial_monitor(run_id)
        total = epochs or len(values)
        for epoch, value in enumerate(values, start=1):
            monitor.on_validation_end(SimpleNamespace(epoch=epoch, epochs=total), {"val/loss": value})
            if monitor.should_stop():
                break
        monitor.flush()  # as the worker does before it records the outcome (values held without a pruner)
        if monitor.pruned_reason and status == "succeeded":
            status = "pruned"
        with commits():
            run_finish(run_id=run_id, lease_token=token, status=status, error=monitor.pruned_reason,
                       final_metrics={"val/loss": values[-1]})
        return monitor

    return end
