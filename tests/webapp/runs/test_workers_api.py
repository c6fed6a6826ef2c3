"""GET /api/workers/, a run's priority (PATCH bounds) and where a queued run stands (`queue`).

Workers announce themselves through the same service the Celery worker calls at start and on
every reaper pass (services.worker_start / worker_announce); nothing here needs a broker.
"""

from __future__ import annotations

from typing import Any

import pytest

from webapp.runs.models import Run
from webapp.runs.scheduling.devices import WorkerDevices

pytestmark = pytest.mark.django_db

CPU = WorkerDevices("cpu", ["cpu"], 8, ["train.cpu.1"])


def announce(
    hostname: str, devices: WorkerDevices | None = CPU, queues: list[str] | None = None
) -> None:
    from webapp.runs.scheduling.workers import worker_start

    worker_start(
        hostname=hostname,
        devices=devices,
        queues=queues or (devices.train_queues if devices else ["short"]),
    )


def test_workers_list_shows_devices_and_names_only_a_run_the_user_may_see(
    api_a: Any, api_b: Any, anon: Any, run_a: Any
) -> None:
    from webapp.runs.scheduling.leases import run_claim

    announce(
        "train-1@node",
        WorkerDevices("gpu", ["cuda:0", "cuda:1"], 2, ["train.gpu.1", "train.gpu.2"]),
    )
    announce("cpu-1@node")
    announce("short-1@node", None, ["short"])
    Run.objects.filter(pk=run_a.pk).update(name="secret plans", need_kind="any")
    assert (
        run_claim(worker="train-1@node", devices=WorkerDevices("gpu", ["cuda:0", "cuda:1"], 2))
        is not None
    )

    mine = {w["hostname"]: w for w in api_a.get("/api/workers/").json()}
    assert set(mine) == {"train-1@node", "cpu-1@node", "short-1@node"}
    gpu = mine["train-1@node"]
    assert gpu["kind"] == "gpu" and gpu["devices"] == ["cuda:0", "cuda:1"] and gpu["capacity"] == 2
    assert gpu["queues"] == ["train.gpu.1", "train.gpu.2"] and gpu["trains"] and gpu["alive"]
    assert gpu["current_run"] == {"id": run_a.pk, "name": "secret plans"} and gpu["busy"]
    assert set(gpu) >= {"last_seen", "started_at"}
    assert mine["cpu-1@node"]["current_run"] is None and not mine["cpu-1@node"]["busy"]
    assert not mine["short-1@node"]["trains"]

    theirs = {w["hostname"]: w for w in api_b.get("/api/workers/").json()}
    assert theirs["train-1@node"]["current_run"] is None, "another team's run is not named"
    assert theirs["train-1@node"]["busy"]
    assert "secret plans" not in api_b.get("/api/workers/").content.decode()
    assert anon.get("/api/workers/").status_code == 401

    detail = api_a.get(f"/api/runs/{run_a.pk}/").json()
    assert detail["worker"] == "train-1@node" and detail["device"] == "cuda:0"
    assert detail["status"] == "running" and detail["queue"] is None


def test_a_worker_not_heard_from_is_listed_as_not_alive(api_a: Any, settings: Any) -> None:
    from datetime import timedelta

    from django.utils import timezone

    from webapp.runs.models import Worker

    announce("gone@node")
    Worker.objects.filter(hostname="gone@node").update(
        last_seen=timezone.now() - timedelta(seconds=60)
    )
    [gone] = api_a.get("/api/workers/").json()
    assert gone["hostname"] == "gone@node" and not gone["alive"]


def test_priority_is_set_by_editors_within_bounds(
    api_a: Any, api_viewer_a: Any, run_a: Any
) -> None:
    answer = api_a.patch(f"/api/runs/{run_a.pk}/", {"priority": 10}, format="json")
    assert answer.status_code == 200 and answer.json()["priority"] == 10
    assert (
        api_a.patch(f"/api/runs/{run_a.pk}/", {"priority": -10}, format="json").json()["priority"]
        == -10
    )
    for bad in (11, -11, "high", 2.5, True):
        answer = api_a.patch(f"/api/runs/{run_a.pk}/", {"priority": bad}, format="json")
        assert answer.status_code == 400, bad
        assert (
            "priority" in answer.json()["error"]["fields"]
            and "-10 to 10" in answer.json()["error"]["fields"]["priority"][0]
        )
    assert (
        api_viewer_a.patch(f"/api/runs/{run_a.pk}/", {"priority": 1}, format="json").status_code
        == 403
    )
    assert Run.objects.get(pk=run_a.pk).priority == -10


def test_priority_changes_only_while_queued_and_moves_the_run_in_the_queue(
    api_a: Any, run_body: dict[str, Any]
) -> None:
    from webapp.runs.scheduling.leases import run_claim

    announce("cpu-1@node")
    body = {**run_body, "config": {"epochs": 1, "device": "cpu"}}
    older, newer = (api_a.post("/api/runs/", body, format="json").json() for _ in range(2))
    assert api_a.get(f"/api/runs/{newer['id']}/").json()["queue"]["position"] == 2
    raised = api_a.patch(f"/api/runs/{newer['id']}/", {"priority": 3}, format="json")
    assert raised.status_code == 200 and raised.json()["priority"] == 3
    assert api_a.get(f"/api/runs/{newer['id']}/").json()["queue"]["position"] == 1
    assert run_claim(worker="cpu-1@node", devices=CPU)[0] == newer["id"], "the worker takes it first"

    answer = api_a.patch(f"/api/runs/{newer['id']}/", {"priority": 5, "name": "urgent"}, format="json")
    assert answer.status_code == 409, answer.content
    error = answer.json()["error"]
    assert error["code"] == "not_queued" and error["status"] == "running"
    assert "is running" in error["message"] and list(error["fields"]) == ["priority"]
    run = Run.objects.get(pk=newer["id"])
    assert (run.priority, run.name) == (3, newer["name"]), "nothing of the refused change is stored"
    assert api_a.patch(f"/api/runs/{newer['id']}/", {"name": "urgent"}, format="json").status_code == 200

    api_a.post(f"/api/runs/{older['id']}/cancel/")
    cancelled = api_a.patch(f"/api/runs/{older['id']}/", {"priority": 1}, format="json")
    assert cancelled.status_code == 409 and cancelled.json()["error"]["status"] == "cancelled"


def test_the_queue_lists_a_teams_queued_runs_in_start_order_with_other_teams_unnamed(
    api_a: Any, api_b: Any, anon: Any, run_body: dict[str, Any], user_b: Any, team_b: Any,
    valid_spec: dict[str, Any]
) -> None:
    from webapp.datasets.services import dataset_builtin_create
    from webapp.graphs.services import graph_create
    from webapp.runs.scheduling.leases import run_claim

    graph_b = graph_create(team=team_b, name="b mlp", spec=valid_spec, created_by=user_b)
    dataset_b = dataset_builtin_create(team=team_b, name="iris", builtin="iris", options={}, created_by=user_b)

    announce("cpu-1@node")
    body = {**run_body, "config": {"epochs": 1, "device": "cpu"}}
    first, second = (api_a.post("/api/runs/", {**body, "name": name}, format="json").json()
                     for name in ("first", "second"))
    theirs = api_b.post("/api/runs/", {"graph": graph_b.pk, "dataset": dataset_b.pk, "name": "b secret",
                                       "config": {"epochs": 1, "device": "cpu"}}, format="json")
    assert theirs.status_code == 201, theirs.content
    api_a.patch(f"/api/runs/{second['id']}/", {"priority": 2}, format="json")

    queue = api_a.get("/api/queue/").json()
    assert [(q["name"], q["position"], q["priority"]) for q in queue] == [("second", 1, 2), ("first", 3, 0)]
    assert queue[0]["need"] == {"kind": "cpu", "devices": 1} and queue[0]["waiting_for"] == "behind"
    assert queue[1]["detail"] == "behind 2 queued runs"  # team B's turn comes between
    assert "b secret" not in api_a.get("/api/queue/").content.decode()
    assert [q["name"] for q in api_b.get("/api/queue/").json()] == ["b secret"]
    assert anon.get("/api/queue/").status_code == 401

    assert run_claim(worker="cpu-1@node", devices=CPU)[0] == second["id"]
    workers = api_a.get("/api/workers/").json()
    assert workers[0]["current_run"] == {"id": second["id"], "name": "second"}
    assert [q["name"] for q in api_a.get("/api/queue/").json()] == ["first"]


def test_a_run_asking_for_more_devices_than_its_team_may_use_is_refused(
    api_a: Any, team_a: Any, run_body: dict[str, Any]
) -> None:
    team_a.max_devices_per_run = 1
    team_a.save()
    body = {**run_body, "config": {"epochs": 1, "device": "cpu", "processes": 2, "batch_size": 16}}
    answer = api_a.post("/api/runs/", body, format="json")
    assert answer.status_code == 400, answer.content
    [message] = answer.json()["error"]["fields"]["config.processes"]
    assert "2 devices" in message and "at most 1" in message
    assert not Run.objects.exists()
    team = api_a.get(f"/api/teams/{team_a.pk}/").json()
    assert team["max_devices_per_run"] == 1 and team["max_concurrent_runs"] is None


def test_team_admins_cannot_change_their_limits(api_a: Any, team_a: Any) -> None:
    api_a.patch(
        f"/api/teams/{team_a.pk}/",
        {"max_concurrent_runs": 99, "max_devices_per_run": 99},
        format="json",
    )
    team_a.refresh_from_db()
    assert team_a.max_concurrent_runs is None and team_a.max_devices_per_run is None


def test_queue_position_says_why_a_queued_run_waits(
    api_a: Any, api_b: Any, run_body: dict[str, Any], team_a: Any, user_b: Any, team_b: Any
) -> None:
    from webapp.runs.scheduling.leases import run_claim

    first, second, third = (
        api_a.post(
            "/api/runs/", {**run_body, "config": {"epochs": 1, "device": "cpu"}}, format="json"
        ).json()
        for _ in range(3)
    )
    queue = api_a.get(f"/api/runs/{second['id']}/").json()["queue"]
    assert queue["waiting_for"] == "no_fitting_worker" and "no live worker" in queue["detail"]
    assert queue["position"] == 2 and queue["ahead"] == 1

    announce("cpu-1@node")
    queue = api_a.get(f"/api/runs/{third['id']}/").json()["queue"]
    assert queue == {
        "position": 3,
        "ahead": 2,
        "waiting_for": "behind",
        "detail": "behind 2 queued runs",
    }
    assert api_a.get("/api/runs/").json()["results"][0]["queue"] is None, "lists do not compute it"

    # Priority orders a team's own runs: the third goes first.
    api_a.patch(f"/api/runs/{third['id']}/", {"priority": 5}, format="json")
    assert api_a.get(f"/api/runs/{third['id']}/").json()["queue"]["position"] == 1
    assert api_a.get(f"/api/runs/{first['id']}/").json()["queue"]["position"] == 2

    # A team at its concurrency limit waits for it.
    team_a.max_concurrent_runs = 1
    team_a.save()
    assert run_claim(worker="cpu-1@node", devices=CPU)[0] == third["id"]
    queue = api_a.get(f"/api/runs/{first['id']}/").json()["queue"]
    assert queue["waiting_for"] == "team_limit" and "1 of its 1 allowed" in queue["detail"]
    assert run_claim(worker="cpu-2@node", devices=CPU) is None, (
        "the limit holds for a second worker"
    )
    assert api_a.get(f"/api/runs/{third['id']}/").json()["queue"] is None


def test_a_worker_restarted_under_its_name_requeues_what_its_dead_predecessor_held(
    run_a: Any,
) -> None:
    from webapp.runs.models import RunStatus
    from webapp.runs.scheduling.leases import run_claim

    announce("train-1@node")
    assert run_claim(worker="train-1@node", devices=CPU)[0] == run_a.pk
    announce("train-2@node")  # another name: nothing of train-1's is touched
    assert Run.objects.get(pk=run_a.pk).status == RunStatus.RUNNING
    announce(
        "train-1@node"
    )  # the same name again: its predecessor was killed; the lease is still fresh
    run = Run.objects.get(pk=run_a.pk)
    assert run.status == RunStatus.QUEUED and run.lease_token is None and run.worker == ""
    assert run_claim(worker="train-2@node", devices=CPU)[0] == run_a.pk
