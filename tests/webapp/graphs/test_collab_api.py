"""The shared canvas over REST: GET /api/graphs/<id>/collab/ and POST …/collab/save/."""

from __future__ import annotations

from typing import Any

import pytest
from pycrdt import Doc, Map

from webapp.graphs.collab.doc import ydoc_to_spec
from webapp.graphs.collab.services import (
    COMPACT_AFTER,
    collab_compact,
    collab_doc_load,
    collab_update_append,
)
from webapp.graphs.models import GraphCollabDoc, GraphCollabUpdate
from webapp.graphs.services import check_spec

pytestmark = pytest.mark.django_db


def edit(graph_id: int, change: Any) -> None:
    """One editor's change, stored as the room stores it: the update of one transaction."""
    doc = collab_doc_load(graph_id=graph_id)
    before = doc.get_state()
    with doc.transaction():
        change(doc)
    collab_update_append(graph_id=graph_id, data=doc.get_update(before), user_id=None)


def test_get_seeds_once_from_the_latest_revision(
    api_a: Any, graph_a: Any, valid_spec: dict[str, Any]
) -> None:
    first = api_a.get(f"/api/graphs/{graph_a.pk}/collab/")
    second = api_a.get(f"/api/graphs/{graph_a.pk}/collab/")
    assert first.status_code == 200, first.content
    assert first.json() == second.json()
    body = first.json()
    assert body["base_revision"] == 1 and body["updates"] == 0
    assert check_spec(body["spec"])[1] == check_spec(valid_spec)[1]
    assert GraphCollabDoc.objects.filter(graph=graph_a).count() == 1


def test_save_turns_the_shared_state_into_a_revision(api_a: Any, graph_a: Any) -> None:
    def add_dropout(doc: Doc) -> None:
        doc.get("nodes", type=Map)["drop_1_t"] = Map(
            {"op": "Dropout", "params": Map({"p": 0.25}), "x": 5, "y": 6}
        )
        edges = doc.get("edges", type=Map)
        del edges["act->fc2:0"]
        edges["act->drop_1_t:0"] = Map({"source": "act", "target": "drop_1_t", "slot": 0})
        edges["drop_1_t->fc2:0"] = Map({"source": "drop_1_t", "target": "fc2", "slot": 0})

    edit(graph_a.pk, add_dropout)
    derived = api_a.get(f"/api/graphs/{graph_a.pk}/collab/").json()
    assert derived["updates"] == 1
    response = api_a.post(
        f"/api/graphs/{graph_a.pk}/collab/save/", {"message": "dropout"}, format="json"
    )
    assert response.status_code == 201, response.content
    revision = response.json()
    assert revision["number"] == 2
    assert revision["spec"] == check_spec(derived["spec"])[0]
    assert [n["id"] for n in revision["spec"]["nodes"]] == ["fc1", "act", "drop_1_t", "fc2"]
    # The shared document is not reset; saving again with nothing changed makes no revision.
    again = api_a.post(f"/api/graphs/{graph_a.pk}/collab/save/", {}, format="json")
    assert again.status_code == 200 and again.json()["number"] == 2
    assert api_a.get(f"/api/graphs/{graph_a.pk}/collab/").json()["updates"] == 1


def test_save_refuses_viewers_read_tokens_other_teams_and_bad_bodies(
    api_a: Any, api_viewer_a: Any, api_b: Any, graph_a: Any
) -> None:
    url = f"/api/graphs/{graph_a.pk}/collab/save/"
    assert api_viewer_a.post(url, {}, format="json").status_code == 403
    assert api_b.post(url, {}, format="json").status_code == 404
    assert api_b.get(f"/api/graphs/{graph_a.pk}/collab/").status_code == 404
    bad = api_a.post(url, {"message": "x" * 501}, format="json")
    assert bad.status_code == 400 and "message" in bad.json()["error"]["fields"]
    unknown = api_a.post(url, {"spec": {}}, format="json")
    assert unknown.status_code == 400


def test_an_invalid_shared_state_is_stored_as_a_draft_naming_the_node(
    api_a: Any, graph_a: Any
) -> None:
    edit(
        graph_a.pk,
        lambda doc: doc.get("nodes", type=Map)["fc2"]["params"].__setitem__("out_features", -3),
    )
    response = api_a.post(f"/api/graphs/{graph_a.pk}/collab/save/", {}, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["valid"] is False and body["error_count"] >= 1


def test_compaction_keeps_the_document(graph_a: Any) -> None:
    for i in range(COMPACT_AFTER + 1):
        edit(graph_a.pk, lambda doc, i=i: doc.get("nodes", type=Map)["fc1"].__setitem__("x", i))
    assert (
        GraphCollabUpdate.objects.filter(doc__graph=graph_a).count() == 0
    )  # compacted on the 201st
    spec = ydoc_to_spec(collab_doc_load(graph_id=graph_a.pk))
    assert spec["layout"]["fc1"]["x"] == COMPACT_AFTER
    edit(graph_a.pk, lambda doc: doc.get("nodes", type=Map)["fc1"].__setitem__("x", -1))
    assert collab_compact(graph_id=graph_a.pk) == 0
    assert ydoc_to_spec(collab_doc_load(graph_id=graph_a.pk))["layout"]["fc1"]["x"] == -1


@pytest.mark.django_db(transaction=True)
def test_two_first_joiners_seed_once(graph_a: Any) -> None:
    import threading

    from django.db import connection

    from webapp.graphs.collab.services import collab_doc_ensure

    if connection.vendor == "sqlite":
        pytest.skip("SQLite's in-memory test database is one connection; PostgreSQL runs this")
    barrier = threading.Barrier(4)
    rows: list[int] = []

    def join() -> None:
        try:
            barrier.wait()
            rows.append(collab_doc_ensure(graph_id=graph_a.pk).pk)
        finally:
            connection.close()

    threads = [threading.Thread(target=join) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(rows) == 4 and len(set(rows)) == 1
    assert GraphCollabDoc.objects.filter(graph=graph_a).count() == 1
