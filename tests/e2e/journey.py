"""A small team's worth of things to look at, made through the API: a dataset a model gets 100%
right, two finished runs of it on two graph revisions, and a sweep over a log-scale learning rate.
Shared by the accessibility pass and the judging checks (each test file makes its own)."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

from .test_judge import Api, mlp, wait_succeeded

# Two classes a linear model separates exactly: the first feature is far below or far above zero.
SEPARABLE = "a,b,label\n" + "".join(
    f"{(-5 if r % 2 else 5) + (r % 7) * 0.1},{(r % 5) * 0.1},{'low' if r % 2 else 'high'}\n"
    for r in range(120)
)


@dataclass(frozen=True)
class Journey:
    team: int
    dataset: int
    graph: int
    runs: tuple[int, int]
    sweep: int


def wait_sweep_done(api: Api, sweep: int, timeout: float = 300) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        answer = api.get(f"/api/sweeps/{sweep}/")
        if answer["status"] != "running":
            return answer
        time.sleep(1)
    raise AssertionError(f"sweep {sweep} did not finish in {timeout} s")


def make_journey(api: Api) -> Journey:
    """Upload the separable CSV, train it on two revisions, and sweep the learning rate (log)."""
    team = int(api.get("/api/auth/me/")["teams"][0]["id"])
    dataset = api.post(
        "/api/datasets/upload/",
        multipart={
            "team": str(team), "kind": "csv", "name": "separable",
            "options": json.dumps({"target": "label"}),
            "file": {"name": "separable.csv", "mimeType": "text/csv", "buffer": SEPARABLE.encode()},
        },
    )["id"]  # fmt: skip
    spec = mlp(2, 2)
    graph = api.post("/api/graphs/", {"team": team, "name": "separable mlp", "spec": spec})["id"]
    spec["nodes"][0]["params"]["out_features"] = 24
    api.post(f"/api/graphs/{graph}/revisions/", {"spec": spec, "base": 1})
    runs = tuple(
        api.post("/api/runs/", {"graph": graph, "revision": n, "dataset": dataset,
                                "config": {"epochs": 8, "optimizer": {"lr": 0.05}}})["id"]
        for n in (1, 2)
    )  # fmt: skip
    sweep = api.post("/api/sweeps/", {
        "team": team, "name": "lr search", "graph": graph, "revision": 2, "dataset": dataset,
        "config": {"epochs": 2}, "strategy": "random", "budget": 3, "parallelism": 1,
        "space": {"optimizer.lr": {"type": "float", "low": 0.0001, "high": 0.1, "log": True}},
    })["id"]  # fmt: skip
    for run in runs:
        wait_succeeded(api, run)
    wait_sweep_done(api, sweep)
    return Journey(team=team, dataset=dataset, graph=graph, runs=runs, sweep=sweep)  # type: ignore[arg-type]
