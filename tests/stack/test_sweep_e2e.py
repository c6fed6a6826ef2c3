"""Sweeps end to end with real parts: REST on daphne, a Celery worker training every trial, Redis.

A TPE sweep with median pruning over the learning rate (log scale, wide enough that some trials
are clearly bad) and the hidden layer's width on built-in iris: it finishes, pruned trials end
in their own state with the reason (on the trial and on its run), and the sweep's best is the
best of its complete trials as their stored validation series say. Cancelling a second sweep
cancels its queued and running trials. The `netloom sweeps` commands drive the same API.
Seeded; nothing asserts on wall time.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from tests.stack.stack import ServiceStack
from tests.stack.test_client_e2e import logged_in, netloom, user_env  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.slow]

TIMEOUT = 300.0


def sweep_body(stack: ServiceStack, **changes: Any) -> dict[str, Any]:
    mine = stack.world["a"]
    return {
        "name": "iris lr x width", "graph": mine["graph"], "revision": 1, "dataset": mine["dataset"],
        "config": {"epochs": 6, "batch_size": 16, "log_every": 7, "device": "cpu"},
        "space": {"optimizer.lr": {"type": "float", "low": 1e-5, "high": 0.3, "log": True},
                  "nodes.fc1.out_features": {"type": "categorical", "choices": [8, 16, 32]}},
        "strategy": "tpe", "pruner": "median", "objective": {"metric": "val/loss", "mode": "min"},
        "budget": 8, "parallelism": 2, "seed": 3, **changes,
    }


def wait_sweep(stack: ServiceStack, sweep_id: int, done: Any, timeout: float = TIMEOUT) -> dict[str, Any]:
    """Poll GET /api/sweeps/<id>/ until `done(sweep)`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        sweep = stack.api("a").get(f"/api/sweeps/{sweep_id}/").json()
        if done(sweep):
            return sweep
        time.sleep(0.3)
    raise AssertionError(f"sweep {sweep_id} not there after {timeout}s: {sweep}\n{stack.logs()}")


def best_stored(stack: ServiceStack, run_id: int) -> float:
    """The lowest val/loss of the run's stored series."""
    series = stack.api("a").get(f"/api/runs/{run_id}/metrics/?keys=val/loss").json()["series"]["val/loss"]
    return min(v for v in series["value"] if v is not None)


def test_a_tpe_sweep_with_median_pruning_finishes_with_pruned_trials_and_the_best_complete_one(
    stack: ServiceStack,
) -> None:
    api = stack.api("a")
    created = api.post("/api/sweeps/", json=sweep_body(stack))
    assert created.status_code == 201, created.text
    sweep = wait_sweep(stack, created.json()["id"], lambda s: s["status"] != "running")

    assert sweep["status"] == "succeeded", sweep
    trials = sweep["trials"]
    assert len(trials) == 8 and sweep["progress"]["done"] == 8
    assert len({t["run"] for t in trials}) == 8, "every trial is a run of its own"
    pruned = [t for t in trials if t["state"] == "pruned"]
    assert pruned, [(t["state"], t["params"], t["intermediate"]) for t in trials]
    for trial in pruned:
        assert trial["reason"].startswith("pruned at epoch ") and "median" in trial["reason"]
        run = api.get(f"/api/runs/{trial['run']}/").json()
        assert run["status"] == "pruned" and run["error"] == trial["reason"]
        assert len(trial["intermediate"]) < 6, "a pruned trial stopped before its last epoch"

    complete = [t for t in trials if t["state"] == "complete"]
    assert complete
    for trial in complete:
        # The trial's value is its best epoch's objective, as the run's own stored series says.
        assert trial["value"] == pytest.approx(best_stored(stack, trial["run"]), rel=1e-6)
        run = api.get(f"/api/runs/{trial['run']}/").json()
        assert run["status"] == "succeeded" and run["origin"] == {"sweep": sweep["id"], "trial": trial["number"]}
        assert run["config"]["optimizer"]["lr"] == trial["params"]["optimizer.lr"]
    best = min(complete, key=lambda t: t["value"])
    assert sweep["best"] == {"number": best["number"], "run": best["run"], "value": best["value"],
                             "params": best["params"]}
    assert sweep["best"]["value"] == min(t["value"] for t in complete)

    # Trials of another width trained a revision of the same graph with that width.
    for trial in trials:
        run = api.get(f"/api/runs/{trial['run']}/").json()
        assert run["graph"] == stack.world["a"]["graph"]
        assert (run["revision"] == 1) == (trial["params"]["nodes.fc1.out_features"] == 16)
    listed = api.get(f"/api/runs/?sweep={sweep['id']}&page_size=50").json()
    assert sorted(r["id"] for r in listed["results"]) == sorted(t["run"] for t in trials)

    # The best trial's run page: its best and last checkpoints (no checkpoint per epoch), and the
    # evaluation and ONNX a trial does not make at its end, made when asked for.
    run_id = best["run"]
    checkpoints = api.get(f"/api/runs/{run_id}/checkpoints/").json()
    assert [c["name"] for c in checkpoints if c["default"]] == ["best"]
    assert [c["name"] for c in checkpoints if c["kind"] == "epoch"] == ["epoch-0006"]
    assert api.get(f"/api/runs/{run_id}/export/?format=safetensors").status_code == 200
    evaluation = api.get(f"/api/runs/{run_id}/evaluation/")
    assert evaluation.status_code == 200 and evaluation.json()["rows"] > 0, evaluation.text
    onnx = api.get(f"/api/runs/{run_id}/export/?format=onnx")
    assert onnx.status_code == 409 and onnx.json()["error"]["code"] == "export_pending", onnx.text
    deadline = time.monotonic() + 60
    while onnx.status_code != 200 and time.monotonic() < deadline:
        time.sleep(0.3)
        onnx = api.get(f"/api/runs/{run_id}/export/?format=onnx")
    assert onnx.status_code == 200 and onnx.content[:2], onnx.text


def test_cancelling_a_sweep_cancels_its_running_and_queued_trials(stack: ServiceStack) -> None:
    api = stack.api("a")
    body = sweep_body(stack, name="to cancel", pruner="none", budget=6,
                      config={"epochs": 40, "batch_size": 16, "log_every": 7, "device": "cpu"})
    created = api.post("/api/sweeps/", json=body)
    assert created.status_code == 201, created.text
    sweep_id = created.json()["id"]
    wait_sweep(stack, sweep_id, lambda s: s["progress"]["running"] >= 1)

    answer = api.post(f"/api/sweeps/{sweep_id}/cancel/")
    assert answer.status_code in (200, 202), answer.text
    assert answer.json()["status"] == "cancelled"
    sweep = wait_sweep(stack, sweep_id, lambda s: s["progress"]["running"] + s["progress"]["queued"] == 0)
    assert sweep["status"] == "cancelled" and len(sweep["trials"]) == 2, "no trial is asked after the cancel"
    for trial in sweep["trials"]:
        assert trial["state"] == "cancelled", trial
        assert api.get(f"/api/runs/{trial['run']}/").json()["status"] == "cancelled"


def test_the_netloom_command_creates_shows_lists_and_cancels_sweeps(
    stack: ServiceStack, user_env: dict[str, str],  # noqa: F811 (the fixture imported above)
) -> None:
    logged_in(stack, user_env)
    world = stack.world["a"]
    base = ["sweeps", "create", "--graph", str(world["graph"]), "--dataset", str(world["dataset"]),
            "--set", "epochs=2", "--set", "batch_size=16", "--set", "device=cpu"]
    bad = netloom(*base, "--name", "bad", "--space", '{"optimizer.lr": {"type": "float", "low": 0, "high": 1, '
                  '"log": true}}', env=user_env)
    assert bad.returncode == 1 and "space.optimizer.lr" in bad.stderr and "Traceback" not in bad.stderr

    space = '{"nodes.fc1.out_features": {"type": "categorical", "choices": [8, 16]}}'
    # --follow waits for the end (a bar of trials on stderr) and exits 0 only when the sweep succeeded.
    created = netloom(*base, "--name", "cli grid", "--space", space, "--strategy", "grid", "--budget", "5",
                      "--json", "--follow", env=user_env)
    assert created.returncode == 0, created.stderr
    sweep_id = json.loads(created.stdout)["id"]
    assert json.loads(created.stdout)["budget"] == 2, "a grid's budget is its size"
    assert json.loads(created.stdout)["status"] == "succeeded"
    followed = netloom("sweeps", "show", str(sweep_id), "--follow", env=user_env)
    assert followed.returncode == 0 and "2/2" in followed.stderr and "trial" in followed.stderr, followed.stderr
    shown = netloom("sweeps", "show", str(sweep_id), env=user_env)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0] == f"sweep {sweep_id} 'cli grid': succeeded" and "2/2 trials, best " in lines[1]
    assert sum("complete" in line and "nodes.fc1.out_features=" in line for line in lines) == 2
    listed = netloom("sweeps", "list", "--status", "succeeded", env=user_env)
    assert listed.returncode == 0 and any(line.split()[:3] == [str(sweep_id), "cli", "grid"]
                                          for line in listed.stdout.splitlines())
    again = netloom("sweeps", "cancel", str(sweep_id), env=user_env)
    assert again.returncode == 1 and "HTTP 409" in again.stderr and "already finished" in again.stderr
