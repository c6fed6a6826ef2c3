"""A fair order between teams' queued runs, and team limits.

With a real worker: team A queues 10 runs, then team B queues 1; one worker; B's run starts no
later than A's second (started_at order). In-process (the claim a runs.train token makes): a
team at its concurrency limit waits, named as such, and its next run goes when one finishes.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.stack.stack import ServiceStack

TIMEOUT = 120.0


def poll_run(
    stack: ServiceStack, who: str, run_id: int, done: Any, timeout: float = TIMEOUT
) -> dict[str, Any]:
    """GET the run as `who` until `done(run)`; the run."""
    deadline = time.monotonic() + timeout
    while True:
        run = stack.api(who).get(f"/api/runs/{run_id}/").json()
        if done(run):
            return run
        assert time.monotonic() < deadline, f"run {run_id} still {run['status']}\n{stack.logs()}"
        time.sleep(0.2)


@pytest.mark.slow
def test_a_team_that_queues_one_run_is_not_starved_by_one_that_queues_ten(
    stack: ServiceStack,
) -> None:
    # Long enough that each run is still training while the next requests arrive.
    a_runs = [stack.create_run("a", epochs=50)["id"] for _ in range(10)]
    first = poll_run(stack, "a", a_runs[0], lambda r: r["status"] != "queued")
    assert first["status"] == "running", first
    b_run = stack.create_run("b", epochs=1)["id"]
    queued = stack.api("b").get(f"/api/runs/{b_run}/").json()["queue"]
    assert queued["waiting_for"] == "behind" and queued["position"] == 1, queued

    assert stack.api("a").post(f"/api/runs/{a_runs[0]}/cancel/").status_code in (200, 202)
    poll_run(stack, "b", b_run, lambda r: r["started_at"] is not None)
    try:
        started = {
            run_id: stack.api(who).get(f"/api/runs/{run_id}/").json()["started_at"]
            for who, ids in (("a", a_runs), ("b", [b_run]))
            for run_id in ids
        }
        b_started = started.pop(b_run)
        a_before_b = sorted(
            run_id for run_id, at in started.items() if at is not None and at < b_started
        )
        assert a_before_b == [a_runs[0]], f"A's runs that started before B's: {a_before_b}"
        assert stack.api("b").get(f"/api/runs/{b_run}/").json()["worker"]
    finally:
        for run_id in a_runs:
            stack.api("a").post(f"/api/runs/{run_id}/cancel/")
        stack.api("b").post(f"/api/runs/{b_run}/cancel/")
    for run_id in a_runs:
        poll_run(stack, "a", run_id, lambda r: r["status"] in ("cancelled", "succeeded", "failed"))


@pytest.mark.django_db(transaction=True)
def test_a_team_at_its_limit_waits_and_goes_on_when_its_run_finishes(
    iris_run: Any, team_a: Any, team_b: Any, user_b: Any, revision_a: Any
) -> None:
    from webapp.runs.models import Run, RunStatus
    from webapp.runs.scheduling.devices import WorkerDevices
    from webapp.runs.scheduling.leases import run_claim
    from webapp.runs.scheduling.queue import run_queue_position
    from webapp.runs.scheduling.workers import worker_start
    from webapp.runs.services import run_finish

    cpu = WorkerDevices("cpu", ["cpu"], 8, ["train.cpu.1"])
    for name in ("w1@host", "w2@host"):
        worker_start(hostname=name, devices=cpu, queues=cpu.train_queues)
    team_a.max_concurrent_runs = 1
    team_a.save()
    first, second = iris_run(), iris_run()

    run_id, token = run_claim(worker="w1@host", devices=cpu)
    assert run_id == first.pk
    assert run_claim(worker="w2@host", devices=cpu) is None, (
        "a free worker does not break the team's limit"
    )
    second.refresh_from_db()
    queue = run_queue_position(run=second)
    assert queue["waiting_for"] == "team_limit" and "1 of its 1 allowed runs" in queue["detail"], (
        queue
    )

    run_finish(run_id=run_id, lease_token=token, status=RunStatus.SUCCEEDED, detail="done")
    assert run_claim(worker="w2@host", devices=cpu)[0] == second.pk
    assert Run.objects.get(pk=second.pk).worker == "w2@host"


@pytest.mark.django_db(transaction=True)
def test_in_one_worker_the_fair_order_interleaves_teams(
    iris_run: Any, team_b: Any, user_b: Any, revision_a: Any
) -> None:
    """The order a single worker's claims take: the least recently started team first (never
    started: first of all), then priority and age inside the team."""
    from webapp.datasets.services import dataset_builtin_create
    from webapp.graphs.services import graph_create
    from webapp.runs.models import RunStatus
    from webapp.runs.scheduling.devices import WorkerDevices
    from webapp.runs.scheduling.leases import run_claim
    from webapp.runs.services import run_create, run_finish

    cpu = WorkerDevices("cpu", ["cpu"], 8, ["train.cpu.1"])
    a_runs = [iris_run().pk for _ in range(4)]
    graph = graph_create(team=team_b, name="b graph", spec=revision_a.spec, created_by=user_b)
    data = dataset_builtin_create(
        team=team_b, name="iris", builtin="iris", options={}, created_by=user_b
    )
    b_low = run_create(
        user=user_b,
        team=team_b,
        graph_revision=graph.revisions.get(number=1),
        dataset=data,
        config={"epochs": 1, "device": "cpu"},
    ).pk
    b_high = run_create(
        user=user_b,
        team=team_b,
        graph_revision=graph.revisions.get(number=1),
        dataset=data,
        config={"epochs": 1, "device": "cpu"},
        priority=3,
    ).pk
    order = []
    while (claimed := run_claim(worker="w@host", devices=cpu)) is not None:
        order.append(claimed[0])
        run_finish(run_id=claimed[0], lease_token=claimed[1], status=RunStatus.SUCCEEDED)
    # Neither team has started a run: the higher priority goes first; then the teams take turns.
    assert order == [b_high, a_runs[0], b_low, a_runs[1], a_runs[2], a_runs[3]], order
