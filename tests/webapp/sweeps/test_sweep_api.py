"""REST API of sweeps: create (space and first-trial checks), list, detail, cancel, roles.

Trials' runs are real queued runs (memory broker); their outcomes are driven through the runs
app's worker-side services (conftest `end_run`), and the sweep reacts through `run_finished`.
"""

from __future__ import annotations

from typing import Any

import pytest

from webapp.graphs.models import GraphRevision
from webapp.runs.models import Run
from webapp.sweeps.models import Sweep, SweepTrial


def create(api: Any, body: dict[str, Any], commits: Any) -> Any:
    with commits():
        return api.post("/api/sweeps/", body, format="json")


def test_create_queues_parallelism_trials_as_ordinary_runs(api_a: Any, sweep_body: dict[str, Any], commits: Any) -> None:
    answer = create(api_a, sweep_body, commits)
    assert answer.status_code == 201, answer.json()
    sweep = answer.json()
    assert sweep["status"] == "running" and sweep["graph_name"] == "mlp" and sweep["dataset_name"] == "iris"
    assert sweep["progress"] == {"total": 4, "done": 0, "running": 0, "queued": 2, "pruned": 0, "failed": 0}
    assert sweep["best"] is None and sweep["config"]["epochs"] == 4
    assert [t["number"] for t in sweep["trials"]] == [1, 2]
    for trial in sweep["trials"]:
        assert trial["state"] == "queued" and set(trial["params"]) == {"optimizer.lr", "nodes.fc1.out_features"}
        assert 1e-4 <= trial["params"]["optimizer.lr"] <= 0.3
        run = api_a.get(f"/api/runs/{trial['run']}/").json()
        assert run["origin"] == {"sweep": sweep["id"], "trial": trial["number"]}
        assert run["name"] == f"lr and width #{trial['number']}"
        assert run["config"]["optimizer"]["lr"] == trial["params"]["optimizer.lr"]
        assert run["config"]["best"] == {"metric": "val/loss", "mode": "min"}
    listed = api_a.get(f"/api/runs/?sweep={sweep['id']}").json()
    assert sorted(r["id"] for r in listed["results"]) == sorted(t["run"] for t in sweep["trials"])


@pytest.mark.parametrize(("base", "every", "keep"), [({}, 4, 1), ({"checkpoint_every": 2, "keep_checkpoints": 2}, 2, 2)])
def test_a_trial_checkpoints_its_last_epoch_only_unless_the_base_config_says_otherwise(
    api_a: Any, sweep_body: dict[str, Any], commits: Any, base: dict[str, Any], every: int, keep: int
) -> None:
    body = {**sweep_body, "config": {**sweep_body["config"], **base}}
    sweep = create(api_a, body, commits).json()
    for trial in sweep["trials"]:
        config = api_a.get(f"/api/runs/{trial['run']}/").json()["config"]
        assert (config["checkpoint_every"], config["keep_checkpoints"]) == (every, keep)


@pytest.mark.parametrize(("space", "field", "words"), [
    ({"optimizer.lrr": {"type": "float", "low": 0.001, "high": 0.1}}, "space.optimizer.lrr", "not a training config"),
    ({"learning_rate": {"type": "float", "low": 0.001, "high": 0.1}}, "space.learning_rate", "not a training config"),
    ({"optimizer.lr": {"type": "float", "low": 0.001, "high": 20}}, "space.optimizer.lr", "20"),
    ({"optimizer.lr": {"type": "float", "low": 0, "high": 0.1, "log": True}}, "space.optimizer.lr", "log scale"),
    ({"optimizer.lr": {"type": "float", "low": 0.1, "high": 0.01}}, "space.optimizer.lr", "must not be above"),
    ({"epochs": {"type": "float", "low": 1, "high": 5}}, "space.epochs", "does not fit"),
    ({"optimizer.name": {"type": "categorical", "choices": ["adam", "lbfgs"]}}, "space.optimizer.name", "lbfgs"),
    ({"nodes.fc9.out_features": {"type": "int", "low": 4, "high": 8}}, "space.nodes.fc9.out_features", "no node"),
    ({"nodes.fc1.width": {"type": "int", "low": 4, "high": 8}}, "space.nodes.fc1.width", "out_features"),
    ({"nodes.fc1.out_features": {"type": "float", "low": 4, "high": 8}}, "space.nodes.fc1.out_features", "int"),
    ({"nodes.fc1.out_features": {"type": "categorical", "choices": [8, "wide"]}}, "space.nodes.fc1.out_features",
     "whole number"),
    ({"nodes.fc1.out_features": {"type": "int", "low": 0, "high": 8}}, "space.nodes.fc1.out_features", "at least 1"),
    ({"nodes.fc1": {"type": "int", "low": 4, "high": 8}}, "space.nodes.fc1", "nodes.<node id>.<parameter>"),
    ({"optimizer.lr": {"type": "uniform", "low": 0.001, "high": 0.1}}, "space.optimizer.lr", "float, int or categorical"),
    ({"optimizer.lr": {"type": "float", "lo": 0.001, "high": 0.1}}, "space.optimizer.lr", "unknown field"),
    ({}, "space", "at least one key"),
])
def test_a_bad_space_is_refused_naming_its_key(api_a: Any, sweep_body: dict[str, Any], commits: Any,
                                               space: dict[str, Any], field: str, words: str) -> None:
    answer = create(api_a, {**sweep_body, "space": space}, commits)
    assert answer.status_code == 400, answer.json()
    fields = answer.json()["error"]["fields"]
    assert field in fields, fields
    assert words in fields[field][0], fields[field]
    assert not Sweep.objects.exists() and not Run.objects.exists()


def test_a_grid_needs_discrete_dimensions_and_caps_the_budget(api_a: Any, sweep_body: dict[str, Any], commits: Any) -> None:
    answer = create(api_a, {**sweep_body, "strategy": "grid"}, commits)
    assert answer.status_code == 400
    assert "space.optimizer.lr" in answer.json()["error"]["fields"]

    grid = {"optimizer.lr": {"type": "categorical", "choices": [0.01, 0.1]},
            "nodes.fc1.out_features": {"type": "int", "low": 8, "high": 16, "step": 8}}
    answer = create(api_a, {**sweep_body, "strategy": "grid", "space": grid, "budget": 50, "parallelism": 8}, commits)
    assert answer.status_code == 201, answer.json()
    sweep = answer.json()
    assert sweep["budget"] == 4 and len(sweep["trials"]) == 4
    points = {(t["params"]["optimizer.lr"], t["params"]["nodes.fc1.out_features"]) for t in sweep["trials"]}
    assert points == {(0.01, 8), (0.01, 16), (0.1, 8), (0.1, 16)}, "every grid point once"


def test_other_bad_fields_are_named(api_a: Any, sweep_body: dict[str, Any], commits: Any) -> None:
    for change, field in [
        ({"budget": 0}, "budget"), ({"budget": 501}, "budget"), ({"parallelism": 33}, "parallelism"),
        ({"strategy": "bayes"}, "strategy"), ({"pruner": "asha"}, "pruner"), ({"name": " "}, "name"),
        ({"objective": {"metric": "train/loss", "mode": "min"}}, "objective.metric"),
        ({"objective": {"metric": "val/nonsense", "mode": "min"}}, "objective.metric"),
        ({"objective": {"metric": "val/loss", "mode": "lowest"}}, "objective.mode"),
        ({"config": {"epochs": 0}}, "config.epochs"),
        ({"split": {"val": 0, "test": 0.2}}, "split.val"),
        ({"dataset": 999999}, "dataset"),
    ]:
        answer = create(api_a, {**sweep_body, **change}, commits)
        assert answer.status_code == 400, (change, answer.json())
        assert field in answer.json()["error"]["fields"], (change, answer.json())
    assert not Sweep.objects.exists()


def test_a_first_trial_that_cannot_train_is_refused_and_leaves_nothing(
    api_a: Any, sweep_body: dict[str, Any], commits: Any, graph_a: Any
) -> None:
    # A last layer of 5 outputs cannot train on iris's 3 classes.
    space = {"nodes.fc2.out_features": {"type": "categorical", "choices": [5]}}
    answer = create(api_a, {**sweep_body, "space": space}, commits)
    assert answer.status_code == 400, answer.json()
    error = answer.json()["error"]
    assert error["code"] == "invalid_trial" and "graph.fc2" in error["fields"] and "space" in error["fields"]
    assert "out_features=3" in error["message"] and error["trial"]["params"] == {"nodes.fc2.out_features": 5}
    assert not Sweep.objects.exists() and not SweepTrial.objects.exists() and not Run.objects.exists()
    assert GraphRevision.objects.filter(graph=graph_a).count() == 1


def test_a_later_trial_that_cannot_train_is_recorded_failed_and_the_next_is_asked(
    api_a: Any, sweep_body: dict[str, Any], commits: Any
) -> None:
    space = {"nodes.fc2.out_features": {"type": "categorical", "choices": [3, 7]}}
    for seed in range(20):  # a seed whose first grid point is the one that trains (the other is refused)
        answer = create(api_a, {**sweep_body, "space": space, "strategy": "grid", "seed": seed, "parallelism": 2},
                        commits)
        if answer.status_code == 201:
            break
    assert answer.status_code == 201, answer.json()
    first, second = answer.json()["trials"]
    assert first["params"] == {"nodes.fc2.out_features": 3} and first["state"] == "queued"
    assert second["params"] == {"nodes.fc2.out_features": 7} and second["state"] == "failed"
    assert second["run"] is None and "out_features=3" in second["reason"]
    assert answer.json()["progress"]["failed"] == 1


def test_trials_with_another_width_get_a_revision_of_the_same_graph_reused_by_later_sweeps(
    api_a: Any, sweep_body: dict[str, Any], commits: Any, graph_a: Any
) -> None:
    grid = {"nodes.fc1.out_features": {"type": "categorical", "choices": [8, 16]}}
    body = {**sweep_body, "strategy": "grid", "space": grid, "parallelism": 2}
    for _ in range(2):
        answer = create(api_a, body, commits)
        assert answer.status_code == 201, answer.json()
        for trial in answer.json()["trials"]:
            run = api_a.get(f"/api/runs/{trial['run']}/").json()
            width = trial["params"]["nodes.fc1.out_features"]
            assert run["graph"] == graph_a.pk and run["revision"] == (1 if width == 16 else 2)
            spec = GraphRevision.objects.get(pk=run["graph_revision"]).spec
            assert next(n for n in spec["nodes"] if n["id"] == "fc1")["params"]["out_features"] == width
    assert GraphRevision.objects.filter(graph=graph_a).count() == 2


def test_ending_trials_asks_the_next_ones_and_the_sweep_ends_with_the_best(
    api_a: Any, sweep_body: dict[str, Any], commits: Any, end_run: Any
) -> None:
    sweep = create(api_a, {**sweep_body, "budget": 3}, commits).json()
    runs = [t["run"] for t in sweep["trials"]]
    end_run(runs[0], [0.9, 0.6, 0.4, 0.5])
    detail = api_a.get(f"/api/sweeps/{sweep['id']}/").json()
    assert [t["state"] for t in detail["trials"]] == ["complete", "queued", "queued"]
    assert detail["trials"][0]["value"] == 0.4, "the best epoch's objective, not the last"
    assert detail["trials"][0]["intermediate"] == [[1, 0.9], [2, 0.6], [3, 0.4], [4, 0.5]]
    end_run(detail["trials"][2]["run"], [1.0, 0.8, 0.7, 0.3])
    end_run(runs[1], [1.1, 1.0], status="failed")
    detail = api_a.get(f"/api/sweeps/{sweep['id']}/").json()
    assert detail["status"] == "succeeded" and detail["finished_at"] is not None
    assert [t["state"] for t in detail["trials"]] == ["complete", "failed", "complete"]
    assert detail["progress"] == {"total": 3, "done": 3, "running": 0, "queued": 0, "pruned": 0, "failed": 1}
    assert detail["best"] == {"number": 3, "run": detail["trials"][2]["run"], "value": 0.3,
                              "params": detail["trials"][2]["params"]}


def test_the_median_pruner_stops_a_trial_worse_than_the_complete_ones(
    api_a: Any, sweep_body: dict[str, Any], commits: Any, end_run: Any
) -> None:
    sweep = create(api_a, {**sweep_body, "pruner": "median", "budget": 6, "parallelism": 1}, commits).json()
    end_run(sweep["trials"][0]["run"], [0.8, 0.5, 0.3, 0.2])
    for number in (2, 3):  # two complete trials before the pruner judges (n_startup_trials)
        trial = SweepTrial.objects.get(sweep_id=sweep["id"], number=number)
        assert not end_run(trial.run_id, [0.9, 0.45, 0.25, 0.2]).pruned_reason
    trial = SweepTrial.objects.get(sweep_id=sweep["id"], number=4)
    monitor = end_run(trial.run_id, [1.0, 0.95, 0.9, 0.9])
    assert monitor.pruned_reason.startswith("pruned at epoch 2: val/loss 0.95 (its best so far) worse than the median")
    detail = api_a.get(f"/api/sweeps/{sweep['id']}/").json()
    pruned = detail["trials"][3]
    assert pruned["state"] == "pruned" and pruned["reason"] == monitor.pruned_reason
    assert pruned["intermediate"] == [[1, 1.0], [2, 0.95]] and pruned["value"] == 0.95
    run = api_a.get(f"/api/runs/{pruned['run']}/").json()
    assert run["status"] == "pruned" and run["error"] == monitor.pruned_reason
    assert detail["progress"]["pruned"] == 1 and len(detail["trials"]) == 5


def test_cancel_cancels_the_queued_trials_and_asks_no_more(
    api_a: Any, sweep_body: dict[str, Any], commits: Any
) -> None:
    sweep = create(api_a, sweep_body, commits).json()
    with commits():
        answer = api_a.post(f"/api/sweeps/{sweep['id']}/cancel/")
    assert answer.status_code == 200, answer.json()
    detail = answer.json()
    assert detail["status"] == "cancelled" and detail["finished_at"] is not None
    assert [t["state"] for t in detail["trials"]] == ["cancelled", "cancelled"]
    assert all(t["reason"] == "cancelled with the sweep" for t in detail["trials"])
    assert {r.status for r in Run.objects.all()} == {"cancelled"} and Run.objects.count() == 2
    again = api_a.post(f"/api/sweeps/{sweep['id']}/cancel/")
    assert again.status_code == 409 and again.json()["error"]["code"] == "sweep_finished"


def test_a_running_trial_is_cancelled_within_its_next_step(
    api_a: Any, sweep_body: dict[str, Any], commits: Any
) -> None:
    from webapp.runs.scheduling.leases import run_lease_take

    sweep = create(api_a, sweep_body, commits).json()
    run_id = sweep["trials"][0]["run"]
    assert run_lease_take(run_id=run_id, worker="test")
    assert api_a.get(f"/api/sweeps/{sweep['id']}/").json()["trials"][0]["state"] == "running"
    with commits():
        answer = api_a.post(f"/api/sweeps/{sweep['id']}/cancel/")
    assert answer.status_code == 202
    assert [t["state"] for t in answer.json()["trials"]] == ["running", "cancelled"]
    assert Run.objects.get(pk=run_id).cancel_requested


def test_a_scheduling_error_marks_the_sweep_failed_with_the_reason(
    api_a: Any, sweep_body: dict[str, Any], commits: Any, end_run: Any
) -> None:
    sweep = create(api_a, sweep_body, commits).json()
    # A stored space that no longer parses (a row edited by hand): the next trial cannot be asked.
    Sweep.objects.filter(pk=sweep["id"]).update(space={"optimizer.lr": "broken"})
    end_run(sweep["trials"][0]["run"], [0.5])
    detail = api_a.get(f"/api/sweeps/{sweep['id']}/").json()
    assert detail["status"] == "failed" and "scheduling the next trial failed" in detail["error"]
    assert "space.optimizer.lr" in detail["error"]


def test_viewers_read_but_only_editors_create_and_cancel(
    api_a: Any, api_viewer_a: Any, sweep_body: dict[str, Any], commits: Any
) -> None:
    denied = create(api_viewer_a, sweep_body, commits)
    assert denied.status_code == 403
    sweep = create(api_a, sweep_body, commits).json()
    assert api_viewer_a.get(f"/api/sweeps/{sweep['id']}/").status_code == 200
    assert api_viewer_a.post(f"/api/sweeps/{sweep['id']}/cancel/").status_code == 403


def test_the_list_filters_by_status_and_graph(
    api_a: Any, api_b: Any, sweep_body: dict[str, Any], commits: Any, graph_a: Any
) -> None:
    first = create(api_a, sweep_body, commits).json()
    second = create(api_a, sweep_body, commits).json()
    with commits():
        api_a.post(f"/api/sweeps/{second['id']}/cancel/")
    listed = api_a.get("/api/sweeps/").json()
    assert [s["id"] for s in listed["results"]] == [second["id"], first["id"]] and listed["count"] == 2
    assert "trials" not in listed["results"][0] and listed["results"][0]["progress"]["done"] == 2
    assert [s["id"] for s in api_a.get("/api/sweeps/?status=running").json()["results"]] == [first["id"]]
    assert api_a.get(f"/api/sweeps/?graph={graph_a.pk}").json()["count"] == 2
    assert api_a.get(f"/api/sweeps/?graph={graph_a.pk + 1000}").json()["count"] == 0
    assert api_a.get("/api/sweeps/?status=done").status_code == 400
    assert api_a.get("/api/sweeps/?graph=x").status_code == 400
    assert api_b.get("/api/sweeps/").json()["count"] == 0
    assert api_b.get(f"/api/sweeps/{first['id']}/").status_code == 404


def test_successive_halving_keeps_its_rungs_on_the_trials_and_stops_a_bad_one(
    api_a: Any, sweep_body: dict[str, Any], commits: Any, end_run: Any
) -> None:
    body = {**sweep_body, "pruner": "successive_halving", "budget": 5, "parallelism": 1}
    sweep = create(api_a, body, commits).json()
    end_run(sweep["trials"][0]["run"], [0.8, 0.5, 0.3, 0.2])  # the first complete trial sets the rungs
    good = SweepTrial.objects.get(sweep_id=sweep["id"], number=2)
    assert not end_run(good.run_id, [0.4, 0.3, 0.2, 0.1]).pruned_reason
    good.refresh_from_db()
    assert "completed_rung_0" in good.system_attrs, "the pruner's rung record is kept on the row"
    bad = SweepTrial.objects.get(sweep_id=sweep["id"], number=3)
    monitor = end_run(bad.run_id, [1.2, 1.1, 1.0, 0.9])
    assert monitor.pruned_reason.startswith("pruned at epoch 1 by successive halving: val/loss 1.2")
    assert api_a.get(f"/api/runs/{bad.run_id}/").json()["status"] == "pruned"
    assert not monitor.errors


def test_a_hyperband_sweep_prunes_bad_trials_in_their_bracket_and_names_it(
    api_a: Any, sweep_body: dict[str, Any], commits: Any, end_run: Any
) -> None:
    body = {**sweep_body, "pruner": "hyperband", "budget": 14, "parallelism": 1}
    created = create(api_a, body, commits)
    assert created.status_code == 201, created.content
    sweep = created.json()
    reasons = []
    for number in range(1, 15):
        trial = SweepTrial.objects.get(sweep_id=sweep["id"], number=number)
        good = number <= 6  # good ones first in both brackets, then only bad ones
        values = [0.5 - 0.01 * number - 0.05 * e for e in range(4)] if good else [2.0, 1.9, 1.8, 1.7]
        monitor = end_run(trial.run_id, values)
        if monitor.pruned_reason:
            reasons.append((number, monitor.pruned_reason))
        assert not monitor.errors
    assert reasons and all(number > 6 for number, _ in reasons), reasons
    assert all("by Hyperband (successive halving in its bracket)" in reason for _, reason in reasons), reasons
    detail = api_a.get(f"/api/sweeps/{sweep['id']}/").json()
    assert detail["status"] == "succeeded" and detail["pruner"] == "hyperband"
    assert {t["state"] for t in detail["trials"]} == {"complete", "pruned"}


def test_a_report_that_cannot_be_stored_fails_the_trial_loudly_instead_of_leaving_a_hole(
    api_a: Any, sweep_body: dict[str, Any], commits: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from types import SimpleNamespace

    from django.db import OperationalError

    from webapp.sweeps import services
    from webapp.sweeps.services import TrialReportLost, trial_monitor
    from workers.training import user_message

    def locked(*_: Any) -> None:
        raise OperationalError("database is locked")

    monkeypatch.setattr(services, "_intermediate_store", locked)
    # With a pruner each epoch's value is stored as it comes.
    sweep = create(api_a, {**sweep_body, "pruner": "median"}, commits).json()
    monitor = trial_monitor(sweep["trials"][0]["run"])
    with pytest.raises(TrialReportLost) as lost:
        monitor.on_validation_end(SimpleNamespace(epoch=1, epochs=4), {"val/loss": 0.5})
    # The message the run (and so the trial) fails with.
    assert user_message(lost.value).startswith("the sweep could not store the objective of epoch 1 (database is locked)")
    # Without one the values are stored at the trial's end, in one write, as loudly.
    plain = create(api_a, {**sweep_body, "name": "no pruner"}, commits).json()
    held = trial_monitor(plain["trials"][0]["run"])
    held.on_validation_end(SimpleNamespace(epoch=1, epochs=4), {"val/loss": 0.5})
    with pytest.raises(TrialReportLost) as lost_at_end:
        held.flush()
    assert "could not store the objectives of 1 epochs (database is locked)" in user_message(lost_at_end.value)
