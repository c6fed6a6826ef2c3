"""Requests the OpenAPI schema calls invalid are refused with a 400 that names the field."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("value", ["null", "0", "501", "abc", ""])
def test_a_page_size_out_of_range_is_a_400_naming_it(api_a, value):
    answer = api_a.get(f"/api/graphs/?page_size={value}")
    assert answer.status_code == 400
    assert "page_size" in answer.json()["error"]["fields"]


def test_a_page_size_in_range_is_used(api_a, graph_a):
    answer = api_a.get("/api/graphs/?page_size=1")
    assert answer.status_code == 200 and len(answer.json()["results"]) == 1


@pytest.mark.parametrize("path", ["/api/graphs/", "/api/datasets/"])
def test_team_zero_is_refused_on_the_team_field(api_a, path):
    body = {"team": 0, "name": "x", "builtin": "iris"}
    answer = api_a.post(path, body, format="json")
    assert answer.status_code == 400 and "team" in answer.json()["error"]["fields"]


@pytest.mark.parametrize("path", ["/api/graphs/validate/", "/api/graphs/codegen/"])
def test_a_null_spec_is_refused(api_a, path):
    answer = api_a.post(path, {"spec": None}, format="json")
    assert answer.status_code == 400 and "spec" in answer.json()["error"]["fields"]


def test_the_schema_says_what_the_server_accepts(api_a):
    schema = api_a.get("/api/schema/?format=json").json()
    page_size = next(
        p for p in schema["paths"]["/api/graphs/"]["get"]["parameters"] if p["name"] == "page_size"
    )
    assert page_size["schema"]["minimum"] == 1 and page_size["schema"]["maximum"] == 500
    bodies = schema["components"]["schemas"]
    assert bodies["GraphCreateRequest"]["properties"]["team"]["minimum"] == 1
    spec = bodies["SpecRequest"]["properties"]["spec"]
    assert spec["type"] == "object" and not spec.get("nullable")


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/api/datasets/", {"team": 66773920800110320549888, "name": "x", "builtin": "iris"}),
        ("/api/graphs/", {"team": 2**63, "name": "x"}),
        ("/api/runs/", {"graph": 2**64, "dataset": 1}),
    ],
)
def test_an_id_no_database_column_can_hold_is_a_400_not_a_500(api_a, path, body):
    # Found by schemathesis: SQLite cannot bind such a number, and the lookup raised.
    answer = api_a.post(path, body, format="json")
    assert answer.status_code == 400, answer.json()
    field = next(iter(k for k in body if isinstance(body[k], int) and body[k] > 2**62))
    assert field in answer.json()["error"]["fields"]


def test_a_nul_character_in_a_json_body_is_a_400_not_a_500(api_a, graph_a):
    # Found by schemathesis on PostgreSQL: jsonb cannot hold U+0000, and the save raised.
    answer = api_a.generic(
        "PATCH", f"/api/graphs/{graph_a.id}/revisions/1/",
        '{"layout": {"n\\u0000": {"x": 1, "y": 2}}}', content_type="application/json",
    )  # fmt: skip
    assert answer.status_code == 400 and "NUL" in answer.json()["error"]["message"]


@pytest.mark.parametrize(
    "query",
    [
        "/api/runs/?graph=10954035702931482738688",
        "/api/runs/?dataset=99999999999999999999",
        "/api/graphs/?team=99999999999999999999",
        "/api/runs/compare/?ids=99999999999999999999",
    ],
)
def test_an_id_in_a_query_no_column_can_hold_is_a_400_not_a_500(api_a, query):
    # Found by schemathesis (seed 3): the filter's lookup could not be bound.
    answer = api_a.get(query)
    assert answer.status_code == 400, answer.json()
    assert answer.json()["error"]["fields"]


def test_a_training_setting_beside_config_is_refused_and_named_not_dropped(api_a, graph_a, dataset_a):
    """DRF dropped unknown keys: this run would have trained the default 10 epochs."""
    from webapp.runs.models import Run

    body = {"graph": graph_a.id, "dataset": dataset_a.id, "config": {"batch_size": 8}, "epochs": 5, "colour": "red"}
    answer = api_a.post("/api/runs/", body, format="json")
    assert answer.status_code == 400, answer.json()
    fields = answer.json()["error"]["fields"]
    assert fields["epochs"] == ['A training setting: send it inside "config" ({"config": {"epochs": ...}}).']
    assert fields["colour"][0].startswith("Not a field of this request; it takes: team, graph, revision")
    assert "config" in fields["colour"][0]
    assert not Run.objects.exists()
    body.pop("colour")
    body["config"]["epochs"] = body.pop("epochs")
    answer = api_a.post("/api/runs/", body, format="json")
    assert answer.status_code == 201, answer.json()
    assert answer.json()["config"]["epochs"] == 5


def test_an_unknown_key_is_named_beside_the_other_errors_of_the_body(api_a):
    answer = api_a.post("/api/graphs/", {"team": 0, "name": "x", "nodes": []}, format="json")
    assert answer.status_code == 400
    fields = answer.json()["error"]["fields"]
    assert set(fields) == {"team", "nodes"}, fields
    assert "it takes: team, name, spec" in fields["nodes"][0]


def test_an_upload_option_sent_as_its_own_form_field_is_refused_naming_where_it_goes(api_a, team_a, iris_csv_bytes):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from webapp.datasets.models import Dataset

    form = {"team": team_a.id, "kind": "csv", "name": "iris", "target": "species",
            "file": SimpleUploadedFile("iris.csv", iris_csv_bytes, content_type="text/csv")}
    answer = api_a.post("/api/datasets/upload/", form, format="multipart")
    assert answer.status_code == 400, answer.json()
    assert answer.json()["error"]["fields"] == {
        "target": ['An upload option: send it inside the "options" field (-F \'options={"target": ...}\').']}
    assert not Dataset.objects.filter(name="iris", kind="csv").exists()


def test_a_read_only_field_sent_back_is_accepted(api_a, team_a):
    """An object read from the API can be sent back as it is: its read-only fields are ignored."""
    team = api_a.get(f"/api/teams/{team_a.id}/").json()
    answer = api_a.post("/api/teams/", {"name": "second", "id": team["id"], "role": team["role"]}, format="json")
    assert answer.status_code == 201, answer.json()
    assert answer.json()["name"] == "second" and answer.json()["id"] != team["id"]


def test_weights_for_a_graph_id_past_any_column_are_a_404_not_a_500(api_a):
    # Found by schemathesis: the foreign key's lookup has no range check, and SQLite raised.
    from django.core.files.uploadedfile import SimpleUploadedFile

    answer = api_a.post(f"/api/graphs/{2**67}/revisions/1/weights/",
                        {"file": SimpleUploadedFile("file", b"\x80\r")}, format="multipart")
    assert answer.status_code == 404, answer.content
    assert answer.json()["error"]["code"] == "not_found"
