"""Saves name the revision they started from: a stale base is a 409 with who saved what when."""

from __future__ import annotations

import copy
import threading
from datetime import datetime
from typing import Any

import pytest
from django.db import connection

from webapp.errors import Conflict
from webapp.graphs.models import GraphRevision
from webapp.graphs.services import revision_save

pytestmark = pytest.mark.django_db


def widened(spec: dict[str, Any], width: int) -> dict[str, Any]:
    spec = copy.deepcopy(spec)
    spec["nodes"][0]["params"]["out_features"] = width
    return spec


def post(api: Any, graph_id: int, body: dict[str, Any]) -> Any:
    return api.post(f"/api/graphs/{graph_id}/revisions/", body, format="json")


@pytest.fixture
def teammate(make_user, team_a, client_for) -> Any:
    return client_for(make_user("tess", team_a, "editor"))


def test_a_save_on_the_latest_base_is_saved(api_a, graph_a, valid_spec):
    response = post(api_a, graph_a.id, {"spec": widened(valid_spec, 24), "base": 1})
    assert response.status_code == 201 and response.json()["number"] == 2


def test_a_stale_base_is_refused_naming_who_saved_which_revision_when(api_a, teammate, graph_a, valid_spec):
    # Both tabs opened revision 1; the teammate saves first.
    first = post(teammate, graph_a.id, {"spec": widened(valid_spec, 24), "base": 1})
    assert first.status_code == 201
    response = post(api_a, graph_a.id, {"spec": widened(valid_spec, 8), "base": 1})
    assert response.status_code == 409
    error = response.json()["error"]
    assert error["code"] == "stale_base"
    assert error["base"] == 1
    assert error["latest"]["number"] == 2
    assert error["latest"]["created_by"]["username"] == "tess"
    assert datetime.fromisoformat(error["latest"]["created_at"]) == GraphRevision.objects.get(
        graph=graph_a, number=2
    ).created_at
    # The same author and time as the graph's own answer (what the editor polls).
    latest = api_a.get(f"/api/graphs/{graph_a.id}/").json()["latest"]
    assert (latest["created_by"], latest["created_at"]) == (
        error["latest"]["created_by"], error["latest"]["created_at"]
    )
    assert "tess" in error["message"] and "Revision 2" in error["message"]
    # Nothing was stored: revision 2 still has the teammate's width.
    assert GraphRevision.objects.filter(graph=graph_a).count() == 2
    detail = api_a.get(f"/api/graphs/{graph_a.id}/revisions/2/").json()
    assert detail["spec"]["nodes"][0]["params"]["out_features"] == 24


def test_a_layout_only_save_on_a_stale_base_is_refused_too(api_a, teammate, graph_a, valid_spec):
    post(teammate, graph_a.id, {"spec": widened(valid_spec, 24), "base": 1})
    same_model = widened(valid_spec, 24)
    same_model["layout"] = {"fc1": {"x": 1, "y": 1}}
    response = post(api_a, graph_a.id, {"spec": same_model, "base": 1})
    assert response.status_code == 409
    assert GraphRevision.objects.get(graph=graph_a, number=2).spec["layout"] == valid_spec["layout"]


def test_force_saves_a_new_revision_anyway(api_a, teammate, graph_a, valid_spec):
    post(teammate, graph_a.id, {"spec": widened(valid_spec, 24), "base": 1})
    response = post(api_a, graph_a.id, {"spec": widened(valid_spec, 8), "base": 1, "force": True})
    assert response.status_code == 201
    assert response.json()["number"] == 3
    assert response.json()["created_by"]["username"] == "alice"
    assert api_a.get(f"/api/graphs/{graph_a.id}/").json()["latest_revision"] == 3


def test_no_base_keeps_todays_behaviour(api_a, teammate, graph_a, valid_spec):
    post(teammate, graph_a.id, {"spec": widened(valid_spec, 24)})
    response = post(api_a, graph_a.id, {"spec": widened(valid_spec, 8)})
    assert response.status_code == 201 and response.json()["number"] == 3
    assert post(api_a, graph_a.id, {"spec": widened(valid_spec, 9), "base": None}).status_code == 201


def test_a_sweeps_variant_never_makes_a_base_stale(api_a, graph_a, user_a, valid_spec):
    variant, _ = revision_save(
        graph=graph_a, spec=widened(valid_spec, 99), created_by=user_a, origin="sweep 1 trial 1"
    )
    assert variant.number == 2
    response = post(api_a, graph_a.id, {"spec": widened(valid_spec, 24), "base": 1})
    assert response.status_code == 201 and response.json()["number"] == 3
    # Basing a save on the variant itself is stale: the latest saved revision is 3.
    stale = post(api_a, graph_a.id, {"spec": widened(valid_spec, 25), "base": 2})
    assert stale.status_code == 409 and stale.json()["error"]["latest"]["number"] == 3


@pytest.mark.parametrize("base", [0, "two", 5])
def test_a_bad_base_is_a_400_naming_it(api_a, graph_a, valid_spec, base):
    response = post(api_a, graph_a.id, {"spec": widened(valid_spec, 24), "base": base})
    assert response.status_code == 400
    assert list(response.json()["error"]["fields"]) == ["base"]
    assert GraphRevision.objects.filter(graph=graph_a).count() == 1


def test_viewers_still_cannot_save(api_viewer_a, graph_a, valid_spec):
    response = post(api_viewer_a, graph_a.id, {"spec": widened(valid_spec, 24), "base": 1, "force": True})
    assert response.status_code == 403


def test_the_graph_answers_a_poll_without_the_spec(
    api_a, teammate, graph_a, valid_spec, django_assert_max_num_queries
):
    post(teammate, graph_a.id, {"spec": widened(valid_spec, 24), "base": 1})
    api_a.get(f"/api/graphs/{graph_a.id}/?spec=0")  # the first poll also notes the token's use
    # Token, graph (with latest_revision), role, latest revision (its spec left unread).
    with django_assert_max_num_queries(4):
        body = api_a.get(f"/api/graphs/{graph_a.id}/?spec=0").json()
    assert body["latest_revision"] == 2
    assert body["latest"]["number"] == 2 and body["latest"]["created_by"]["username"] == "tess"
    assert body["latest"]["spec"] is None and body["latest"]["created_at"]
    assert "spec" in api_a.get(f"/api/graphs/{graph_a.id}/").json()["latest"]  # the client's pull


def test_second_save_on_one_base_is_refused_by_the_service(graph_a, user_a, valid_spec):
    revision_save(graph=graph_a, spec=widened(valid_spec, 24), created_by=user_a, base=1)
    with pytest.raises(Conflict) as refused:
        revision_save(graph=graph_a, spec=widened(valid_spec, 8), created_by=user_a, base=1)
    assert refused.value.code == "stale_base" and refused.value.extra["latest"]["number"] == 2


@pytest.mark.django_db(transaction=True)
def test_two_saves_racing_on_one_base_one_wins_the_other_is_refused(graph_a, user_a, valid_spec):
    if connection.vendor == "sqlite":
        pytest.skip("SQLite's in-memory test database is one connection; PostgreSQL runs this")
    start = threading.Barrier(2)
    outcomes: list[Any] = []

    def save(width: int) -> None:
        try:
            start.wait()
            revision, _ = revision_save(
                graph=graph_a, spec=widened(valid_spec, width), created_by=user_a, base=1
            )
            outcomes.append(revision.number)
        except BaseException as exc:  # noqa: BLE001 - reported below
            outcomes.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=save, args=(width,)) for width in (24, 8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    saved = [o for o in outcomes if isinstance(o, int)]
    refused = [o for o in outcomes if not isinstance(o, int)]
    assert saved == [2], outcomes
    assert len(refused) == 1 and isinstance(refused[0], Conflict) and refused[0].code == "stale_base"
    assert list(graph_a.revisions.values_list("number", flat=True).order_by("number")) == [1, 2]
