"""Two trials of a sweep ending at the same moment, in two threads with their own connections.

The sweep's row lock (services._sweep_lock) serialises the scheduling, so the next trials get
distinct numbers and the parallelism is kept. Real concurrency needs a server database: the
test runs in the PostgreSQL pass (SQLite's in-memory test database is one connection's).
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import connection, connections

from webapp.sweeps.models import SweepTrial


@pytest.mark.django_db(transaction=True)
def test_two_trials_ending_at_once_ask_distinct_next_trials(
    user_a: Any, team_a: Any, revision_a: Any, dataset_a: Any
) -> None:
    if connection.vendor == "sqlite":
        pytest.skip("needs a database server for two concurrent transactions (the PostgreSQL pass)")
    from webapp.runs.scheduling.leases import run_lease_take
    from webapp.runs.services import run_finish
    from webapp.sweeps.services import sweep_create

    sweep = sweep_create(
        user=user_a, team=team_a, graph_revision=revision_a, dataset=dataset_a, name="race",
        config={"epochs": 2, "device": "cpu"}, strategy="random", budget=6, parallelism=2,
        space={"optimizer.lr": {"type": "float", "low": 1e-4, "high": 0.1, "log": True}},
    )
    runs = list(SweepTrial.objects.filter(sweep=sweep).values_list("run_id", flat=True))
    tokens = {run_id: run_lease_take(run_id=run_id, worker="test") for run_id in runs}
    barrier = threading.Barrier(len(runs))
    errors: list[BaseException] = []

    def finish(run_id: int) -> None:
        try:
            barrier.wait(10)
            run_finish(run_id=run_id, lease_token=tokens[run_id], status="succeeded",
                       final_metrics={"val/loss": 0.5})
        except BaseException as exc:  # reported below, in the test's thread
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=finish, args=(run_id,)) for run_id in runs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not errors, errors
    trials = list(SweepTrial.objects.filter(sweep=sweep).order_by("number"))
    assert [t.number for t in trials] == [1, 2, 3, 4]
    assert [t.state for t in trials] == ["complete", "complete", "queued", "queued"]
    assert len({t.run_id for t in trials}) == 4
