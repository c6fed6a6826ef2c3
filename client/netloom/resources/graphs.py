"""Graphs: list, read, validate a spec, push a new graph or revision, pull a spec, the shared canvas."""

from __future__ import annotations

from typing import Any, cast

from netloom.api_types import CollabState, Graph, GraphDetail, Revision, ValidationReport
from netloom.errors import NetloomError
from netloom.resources.transport import Transport


class GraphsMixin(Transport):
    """Graphs of the user's teams."""

    def graphs(self, *, team: int | None = None) -> list[Graph]:
        return cast(list[Graph], self._all_pages("/api/graphs/", {"team": team}))

    def graph(self, graph_id: int) -> GraphDetail:
        return cast(GraphDetail, self._json("GET", f"/api/graphs/{graph_id}/"))

    def validate(self, spec: dict[str, Any]) -> ValidationReport:
        """The engine's report on a spec: every node's shape, or node-keyed errors (never saves)."""
        return cast(
            ValidationReport, self._json("POST", "/api/graphs/validate/", json={"spec": spec})
        )

    def graph_push(
        self,
        spec: dict[str, Any],
        *,
        name: str | None = None,
        graph: int | None = None,
        team: int | None = None,
    ) -> GraphDetail | Revision:
        """A new graph with this spec (`name`), or a new revision of `graph`."""
        if graph is not None:
            return cast(
                Revision, self._json("POST", f"/api/graphs/{graph}/revisions/", json={"spec": spec})
            )
        body = {"team": self.default_team(team), "name": name or "graph", "spec": spec}
        return cast(GraphDetail, self._json("POST", "/api/graphs/", json=body))

    def graph_pull(self, graph_id: int, revision: int | None = None) -> dict[str, Any]:
        """The spec of a revision (the latest by default)."""
        if revision is None:
            latest = self.graph(graph_id)["latest"]
            if latest is None:
                raise NetloomError(f"graph {graph_id} has no revision yet")
            return cast(dict[str, Any], latest["spec"])
        answer = cast(Revision, self._json("GET", f"/api/graphs/{graph_id}/revisions/{revision}/"))
        return cast(dict[str, Any], answer["spec"])

    def graph_collab(self, graph_id: int) -> CollabState:
        """The shared canvas of a graph (live co-editing): the spec it stands for now, the length of
        its update log, and the revision it was seeded from."""
        return cast(CollabState, self._json("GET", f"/api/graphs/{graph_id}/collab/"))

    def graph_collab_save(self, graph_id: int, message: str | None = None) -> Revision:
        """Save the shared canvas as a new revision (the latest one when nothing but the layout
        changed); validated as any save. The shared canvas is not reset."""
        body = {"message": message} if message is not None else {}
        return cast(Revision, self._json("POST", f"/api/graphs/{graph_id}/collab/save/", json=body))
