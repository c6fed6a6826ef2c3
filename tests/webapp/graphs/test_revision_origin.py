"""A sweep's architecture variants are revisions of the graph, but never its latest."""

from __future__ import annotations

import copy
from typing import Any

from webapp.graphs.services import revision_save


def _wider(spec: dict[str, Any]) -> dict[str, Any]:
    wider = copy.deepcopy(spec)
    for node in wider["nodes"]:
        if "out_features" in node.get("params", {}):
            node["params"]["out_features"] = int(node["params"]["out_features"]) + 7
            return wider
    raise AssertionError("the fixture graph has no Linear node")


def test_variant_gets_a_number_but_the_editor_keeps_the_saved_latest(
    api_a: Any, graph_a: Any, revision_a: Any, user_a: Any
) -> None:
    variant, created = revision_save(graph=graph_a, spec=_wider(revision_a.spec), created_by=user_a,
                                     origin="sweep 1")
    assert created and variant.number == revision_a.number + 1 and variant.origin == "sweep 1"

    detail = api_a.get(f"/api/graphs/{graph_a.pk}/").json()
    assert detail["latest_revision"] == revision_a.number
    assert detail["latest"]["number"] == revision_a.number
    listed = {g["id"]: g for g in api_a.get("/api/graphs/").json()["results"]}
    assert listed[graph_a.pk]["latest_revision"] == revision_a.number
    numbers = {r["number"]: r["origin"] for r in api_a.get(f"/api/graphs/{graph_a.pk}/revisions/").json()["results"]}
    assert numbers == {revision_a.number: "", variant.number: "sweep 1"}

    # Saving the same spec again by hand changes the canvas of the saved latest, not the variant;
    # a new hand-saved spec follows the variant's number.
    same, created = revision_save(graph=graph_a, spec=revision_a.spec, created_by=user_a)
    assert not created and same.pk == revision_a.pk
    newer, created = revision_save(graph=graph_a, spec=_wider(_wider(revision_a.spec)), created_by=user_a)
    assert created and newer.number == variant.number + 1
    assert api_a.get(f"/api/graphs/{graph_a.pk}/").json()["latest_revision"] == newer.number
