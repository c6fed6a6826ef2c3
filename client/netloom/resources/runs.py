"""Runs: list, start, change, cancel, checkpoints, init plans, reproduce, lineage, compare."""

from __future__ import annotations

from typing import Any, cast

from netloom.api_types import CheckpointJson, CompareAnswer, InitPlanAnswer, Run
from netloom.resources.transport import Transport


class RunsMixin(Transport):
    """Runs of the user's teams."""

    def runs(
        self,
        *,
        team: int | None = None,
        status: str | None = None,
        graph: int | None = None,
        dataset: int | None = None,
        tag: str | None = None,
        q: str | None = None,
        sweep: int | None = None,
        ordering: str | None = None,
        filter: str | None = None,  # noqa: A002 - the API's parameter
    ) -> list[Run]:
        """Every run that matches (all pages). `filter` is the runs query language
        ('metrics.val/accuracy > 0.9 and tags = "baseline"'); `ordering` takes metrics.<name>,
        best.<name>, config.<path>, nodes.<node>.<param> as well as the fixed fields."""
        params = {"team": team, "status": status, "graph": graph, "dataset": dataset, "tag": tag,
                  "q": q, "sweep": sweep, "ordering": ordering, "filter": filter}
        return cast(list[Run], self._all_pages("/api/runs/", params))

    def run(self, run_id: int) -> Run:
        return cast(Run, self._json("GET", f"/api/runs/{run_id}/"))

    def run_start(
        self,
        *,
        graph: int,
        dataset: int,
        revision: int | None = None,
        config: dict[str, Any] | None = None,
        team: int | None = None,
        name: str = "",
        notes: str = "",
        tags: list[str] | None = None,
        init: dict[str, Any] | None = None,
    ) -> Run:
        """Queue a run of a graph revision (the latest by default) on a dataset.

        `init` {"run", "checkpoint", "mode": "finetune" | "resume"} starts from a kept checkpoint.
        """
        if revision is None:
            revision = self.graph(graph)["latest_revision"]
        body: dict[str, Any] = {"graph": graph, "dataset": dataset, "config": config or {},
                                "name": name, "notes": notes}
        if revision is not None:
            body["revision"] = revision
        if team is not None:
            body["team"] = team
        if tags is not None:
            body["tags"] = tags
        if init is not None:
            body["init"] = init
        return cast(Run, self._json("POST", "/api/runs/", json=body))

    def run_update(
        self, run_id: int, *, name: str | None = None, notes: str | None = None, tags: list[str] | None = None
    ) -> Run:
        """PATCH a run's name, notes or tags (what is None stays)."""
        body = {k: v for k, v in (("name", name), ("notes", notes), ("tags", tags)) if v is not None}
        return cast(Run, self._json("PATCH", f"/api/runs/{run_id}/", json=body))

    def checkpoints(self, run_id: int) -> list[CheckpointJson]:
        """The run's kept checkpoints (kind, metrics, which one the default export holds)."""
        return cast(list[CheckpointJson], self._json("GET", f"/api/runs/{run_id}/checkpoints/"))

    def init_plan(
        self, *, graph: int, from_run: int, checkpoint: str, mode: str = "finetune",
        revision: int | None = None, epochs: int | None = None,
    ) -> InitPlanAnswer:
        """What starting `graph` (revision) from a checkpoint would load; `problems` a run would be refused for."""
        body: dict[str, Any] = {"graph": graph, "from_run": from_run, "checkpoint": checkpoint, "mode": mode}
        if revision is not None:
            body["revision"] = revision
        if epochs is not None:
            body["epochs"] = epochs
        return cast(InitPlanAnswer, self._json("POST", "/api/runs/init-plan/", json=body))

    def run_cancel(self, run_id: int) -> Run:
        return cast(Run, self._json("POST", f"/api/runs/{run_id}/cancel/"))

    def reproduce(self, run_id: int, *, deterministic: bool | None = None) -> Run:
        """Queue a run repeating `run_id` (same revision, data, config, seed, init); the new run."""
        body = {} if deterministic is None else {"deterministic": deterministic}
        return cast(Run, self._json("POST", f"/api/runs/{run_id}/reproduce/", json=body))

    def lineage(self, run_id: int | None = None, *, model: int | None = None, version: int | None = None,
                depth: int | None = None) -> dict[str, Any]:
        """{root, nodes, edges, truncated}: the lineage of run `run_id`, or of `version` of `model`."""
        params = {"depth": depth} if depth is not None else {}
        if run_id is not None:
            return cast(dict[str, Any], self._json("GET", f"/api/runs/{run_id}/lineage/", params=params))
        if model is None or version is None:
            raise ValueError("give a run id, or a model and a version")
        return cast(dict[str, Any], self._json("GET", f"/api/models/{model}/versions/{version}/lineage/",
                                               params=params))

    def dataset_version_lineage(self, dataset_id: int, number: int, *, depth: int | None = None) -> dict[str, Any]:
        """{root, nodes, edges, truncated} downstream of version `number` of a dataset: the runs pinned
        to it, their checkpoints, fine-tunes, model versions and aliases (which runs and models used it)."""
        params = {"depth": depth} if depth is not None else {}
        return cast(dict[str, Any], self._json("GET", f"/api/datasets/{dataset_id}/versions/{number}/lineage/",
                                               params=params))

    def compare(
        self, run_ids: list[int], *, keys: list[str] | None = None, max_points: int | None = None
    ) -> CompareAnswer:
        """GET /api/runs/compare/ (2 to 100 runs): series, config and graph parameters that differ, graph changes."""
        params: dict[str, Any] = {"ids": ",".join(str(i) for i in run_ids)}
        if keys:
            params["keys"] = ",".join(keys)
        if max_points:
            params["max_points"] = max_points
        return cast(CompareAnswer, self._json("GET", "/api/runs/compare/", params=params))
