"""Graphs API: revisions (numbered, immutable, layout-only saves), validation, code, op catalog."""

from __future__ import annotations

import copy
import threading
from typing import Any

import pytest
from django.db import connection

from webapp.graphs.models import GraphRevision
from webapp.graphs.services import revision_save

pytestmark = pytest.mark.django_db


def widened(spec: dict[str, Any], width: int) -> dict[str, Any]:
    spec = copy.deepcopy(spec)
    spec["nodes"][0]["params"]["out_features"] = width
    return spec


def test_list_items_have_the_documented_shape(api_a, graph_a):
    rows = api_a.get("/api/graphs/").json()["results"]
    assert len(rows) == 1
    assert set(rows[0]) == {"id", "team", "name", "latest_revision", "updated_at"}
    assert rows[0]["latest_revision"] == 1


def test_each_save_is_a_new_revision_and_old_ones_stay(api_a, team_a, valid_spec):
    graph = api_a.post("/api/graphs/", {"team": team_a.id, "name": "mlp"}, format="json").json()
    assert graph["latest_revision"] is None and graph["latest"] is None
    url = f"/api/graphs/{graph['id']}/revisions/"
    numbers = [
        api_a.post(url, {"spec": widened(valid_spec, w)}, format="json").json()["number"]
        for w in (8, 16, 32)
    ]
    assert numbers == [1, 2, 3]
    listed = api_a.get(url).json()["results"]
    assert [r["number"] for r in listed] == [3, 2, 1]
    assert "spec" not in listed[0]
    first = api_a.get(f"{url}1/").json()
    assert first["spec"]["nodes"][0]["params"]["out_features"] == 8
    assert api_a.get(f"/api/graphs/{graph['id']}/").json()["latest"]["number"] == 3


def test_layout_only_change_updates_the_latest_revision_in_place(api_a, graph_a, valid_spec):
    url = f"/api/graphs/{graph_a.id}/revisions/"
    moved = copy.deepcopy(valid_spec)
    moved["layout"] = {"fc1": {"x": 5, "y": 6}}
    response = api_a.post(url, {"spec": moved}, format="json")
    assert response.status_code == 200
    assert response.json()["number"] == 1
    assert response.json()["spec"]["layout"] == {"fc1": {"x": 5, "y": 6}}

    patched = api_a.patch(f"{url}1/", {"layout": {"fc2": {"x": 1, "y": 2}}}, format="json")
    assert patched.status_code == 200
    assert patched.json()["spec"]["layout"] == {"fc2": {"x": 1, "y": 2}}
    assert GraphRevision.objects.filter(graph=graph_a).count() == 1


def test_older_revisions_are_immutable(api_a, graph_a, valid_spec):
    url = f"/api/graphs/{graph_a.id}/revisions/"
    api_a.post(url, {"spec": widened(valid_spec, 64)}, format="json")
    response = api_a.patch(f"{url}1/", {"layout": {}}, format="json")
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "not_latest"
    changed_model = api_a.patch(f"{url}2/", {"spec": widened(valid_spec, 65)}, format="json")
    assert changed_model.status_code == 409
    assert changed_model.json()["error"]["code"] == "spec_changed"


def test_drafts_with_errors_are_saved_and_marked(api_a, graph_a, broken_spec):
    response = api_a.post(
        f"/api/graphs/{graph_a.id}/revisions/", {"spec": broken_spec}, format="json"
    )
    assert response.status_code == 201
    assert response.json()["valid"] is False and response.json()["error_count"] == 1
    code = api_a.get(f"/api/graphs/{graph_a.id}/revisions/2/code/")
    assert code.status_code == 400
    error = code.json()["error"]
    assert error["code"] == "invalid_spec"
    assert [e["node"] for e in error["errors"]] == ["fc2"]
    assert "nodes.fc2" in error["fields"]


def test_a_document_that_is_not_a_spec_is_refused(api_a, graph_a):
    response = api_a.post(
        f"/api/graphs/{graph_a.id}/revisions/", {"spec": {"inputs": "x"}}, format="json"
    )
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "not_a_spec" and error["fields"]
    assert GraphRevision.objects.filter(graph=graph_a).count() == 1


def test_generated_source_of_a_revision(api_a, graph_a):
    response = api_a.get(f"/api/graphs/{graph_a.id}/revisions/1/code/")
    assert response.status_code == 200
    source = response.json()["source"]
    assert "import torch" in source and "class Net" in source
    compile(source, "model.py", "exec")


def test_validate_returns_the_engine_report_even_when_invalid(api_a, broken_spec, valid_spec):
    response = api_a.post("/api/graphs/validate/", {"spec": broken_spec}, format="json")
    assert response.status_code == 200
    report = response.json()
    assert report["valid"] is False
    assert [(e["node"], e["code"]) for e in report["errors"]] == [("fc2", "dangling_input")]
    good = api_a.post("/api/graphs/validate/", {"spec": valid_spec}, format="json").json()
    assert good["valid"] is True and good["total_params"] == 4 * 16 + 16 + 16 * 3 + 3
    not_spec = api_a.post("/api/graphs/validate/", {"spec": [1, 2]}, format="json").json()
    assert not_spec["valid"] is False and not_spec["errors"][0]["code"] == "not_a_spec"


def test_codegen_endpoint(api_a, valid_spec, broken_spec):
    assert (
        "class Net"
        in api_a.post("/api/graphs/codegen/", {"spec": valid_spec}, format="json").json()["source"]
    )
    response = api_a.post("/api/graphs/codegen/", {"spec": broken_spec}, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["errors"][0]["node"] == "fc2"


def test_model_size_limit_comes_from_settings(api_a, valid_spec, settings):
    settings.NETLOOM_MAX_PARAMS = 10
    report = api_a.post("/api/graphs/validate/", {"spec": valid_spec}, format="json").json()
    assert "too_many_params" in {e["code"] for e in report["errors"]}


def test_op_catalog_is_served_unchanged(api_a):
    from engine.ops import catalog_json

    assert api_a.get("/api/ops/").json() == catalog_json()


def test_viewers_read_but_do_not_write(api_viewer_a, graph_a, team_a, valid_spec):
    assert api_viewer_a.get(f"/api/graphs/{graph_a.id}/revisions/1/").status_code == 200
    url = f"/api/graphs/{graph_a.id}/"
    assert (
        api_viewer_a.post(
            f"{url}revisions/", {"spec": widened(valid_spec, 3)}, format="json"
        ).status_code
        == 403
    )
    assert (
        api_viewer_a.patch(f"{url}revisions/1/", {"layout": {}}, format="json").status_code == 403
    )
    assert api_viewer_a.patch(url, {"name": "x"}, format="json").status_code == 403
    assert api_viewer_a.delete(url).status_code == 403
    assert (
        api_viewer_a.post(
            "/api/graphs/", {"team": team_a.id, "name": "x"}, format="json"
        ).status_code
        == 403
    )


def test_rename_and_delete(api_a, graph_a):
    url = f"/api/graphs/{graph_a.id}/"
    assert api_a.patch(url, {"name": "wide mlp"}, format="json").json()["name"] == "wide mlp"
    assert api_a.delete(url).status_code == 204
    assert api_a.get(url).status_code == 404
    assert not GraphRevision.objects.exists()


def test_a_second_graph_of_the_same_name_is_created_with_a_warning(
    api_a, api_b, team_a, team_b, graph_a, valid_spec
):
    answer = api_a.post("/api/graphs/", {"team": team_a.id, "name": "MLP", "spec": valid_spec},
                        format="json")
    assert answer.status_code == 201, answer.content
    warnings = answer.json()["warnings"]
    assert [(w["code"], w["field"], w["graphs"]) for w in warnings] == [
        ("duplicate_name", "name", [graph_a.id])
    ]
    assert f"graph {graph_a.id}" in warnings[0]["message"]

    # Another team's graph of that name is not the caller's business (and not named).
    other = api_b.post("/api/graphs/", {"team": team_b.id, "name": "mlp"}, format="json")
    assert other.status_code == 201 and other.json()["warnings"] == []

    fresh = api_a.post("/api/graphs/", {"team": team_a.id, "name": "cnn"}, format="json").json()
    assert fresh["warnings"] == []
    renamed = api_a.patch(f"/api/graphs/{fresh['id']}/", {"name": "mlp"}, format="json").json()
    assert renamed["name"] == "mlp" and len(renamed["warnings"][0]["graphs"]) == 2


@pytest.mark.django_db(transaction=True)
def test_concurrent_saves_get_distinct_numbers(graph_a, user_a, valid_spec):
    if connection.vendor == "sqlite":
        pytest.skip("SQLite's in-memory test database is one connection; PostgreSQL runs this")
    errors: list[BaseException] = []

    def save(width: int) -> None:
        try:
            revision_save(graph=graph_a, spec=widened(valid_spec, width), created_by=user_a)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=save, args=(100 + i,)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert sorted(graph_a.revisions.values_list("number", flat=True)) == list(range(1, 8))
