"""Sweeps: list, read, create, cancel."""

from __future__ import annotations

from typing import Any, cast

from netloom.api_types import Sweep, SweepDetail
from netloom.resources.transport import Transport


class SweepsMixin(Transport):
    """Sweeps of the user's teams."""

    def sweeps(
        self, *, team: int | None = None, status: str | None = None, graph: int | None = None
    ) -> list[Sweep]:
        params = {"team": team, "status": status, "graph": graph}
        return cast(list[Sweep], self._all_pages("/api/sweeps/", params))

    def sweep(self, sweep_id: int) -> SweepDetail:
        return cast(SweepDetail, self._json("GET", f"/api/sweeps/{sweep_id}/"))

    def sweep_create(
        self,
        *,
        name: str,
        graph: int,
        dataset: int,
        space: dict[str, Any],
        revision: int | None = None,
        config: dict[str, Any] | None = None,
        team: int | None = None,
        **search: Any,
    ) -> SweepDetail:
        """Start a sweep (POST /api/sweeps/); `search`: strategy, pruner, objective, budget,
        parallelism, seed (the service's defaults otherwise)."""
        body: dict[str, Any] = {
            "name": name,
            "graph": graph,
            "dataset": dataset,
            "space": space,
            "config": config or {},
            **{k: v for k, v in search.items() if v is not None},
        }
        if revision is not None:
            body["revision"] = revision
        if team is not None:
            body["team"] = team
        return cast(SweepDetail, self._json("POST", "/api/sweeps/", json=body))

    def sweep_cancel(self, sweep_id: int) -> SweepDetail:
        return cast(SweepDetail, self._json("POST", f"/api/sweeps/{sweep_id}/cancel/"))
