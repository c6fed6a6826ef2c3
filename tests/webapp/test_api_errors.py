"""Every API error, from DRF or from Django, has the body {"error": {"code", "message", "fields"}}."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db


def assert_error(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.content[:300]
    assert response["Content-Type"].startswith("application/json")
    error = response.json()["error"]
    assert set(error) >= {"code", "message", "fields"} and error["code"] == code
    return error


def test_malformed_json_is_a_parse_error(api_a):
    response = api_a.generic("POST", "/api/graphs/", "{not json", content_type="application/json")
    assert_error(response, 400, "parse_error")


def test_wrong_types_name_the_fields(api_a):
    error = assert_error(
        api_a.post("/api/graphs/", {"team": "abc", "name": ""}, format="json"), 400, "invalid"
    )
    assert set(error["fields"]) == {"team", "name"}


def test_unknown_url_under_api_is_a_json_404(api_a):
    assert_error(api_a.get("/api/no/such/thing/"), 404, "not_found")


def test_wrong_method_is_a_json_405(api_a):
    assert_error(api_a.put("/api/graphs/", {}, format="json"), 405, "method_not_allowed")


def test_wrong_content_type_is_a_json_415(api_a):
    response = api_a.generic("POST", "/api/graphs/validate/", "spec=1", content_type="text/plain")
    assert_error(response, 415, "unsupported_media_type")


def test_oversized_json_body_is_a_413(api_a, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    response = api_a.post("/api/graphs/validate/", {"spec": {"pad": "x" * 2000}}, format="json")
    assert_error(response, 413, "payload_too_large")


def test_foreign_team_on_create_looks_like_a_missing_team(api_b, team_a):
    error = assert_error(
        api_b.post("/api/graphs/", {"team": team_a.id, "name": "x"}, format="json"), 400, "invalid"
    )
    missing = assert_error(
        api_b.post("/api/graphs/", {"team": 999999, "name": "x"}, format="json"), 400, "invalid"
    )
    assert error["fields"]["team"][0].replace(str(team_a.id), "N") == missing["fields"]["team"][
        0
    ].replace("999999", "N")


def test_pagination_takes_a_page_size(api_a, team_a, valid_spec):
    for i in range(3):
        api_a.post("/api/graphs/", {"team": team_a.id, "name": f"g{i}"}, format="json")
    page = api_a.get("/api/graphs/?page_size=2").json()
    assert page["count"] == 3 and len(page["results"]) == 2 and page["next"]
    assert len(api_a.get(page["next"]).json()["results"]) == 1
    assert_error(api_a.get("/api/graphs/?page=9"), 404, "not_found")


import json  # noqa: E402
import os  # noqa: E402

# --- the domain errors of every app, byte for byte ------------------------------------------
# Services raise webapp.errors.DomainError (no HTTP in it); webapp.api.errors maps it to a status
# at the edge. These bodies are what a client parses: they are compared whole, not in part.


def test_each_kind_of_domain_error_has_its_status_and_a_subclass_inherits_it():
    from webapp.api.errors import domain_error_status
    from webapp.errors import Conflict, DomainError, Forbidden, NotFound

    class InUse(Conflict):
        pass

    assert [domain_error_status(e("c", "m")) for e in (DomainError, Forbidden, NotFound, Conflict, InUse)] == [
        400, 403, 404, 409, 409,
    ]
    error = DomainError("invalid", "A graph needs a name.", field="name")
    assert error.fields == {"name": ["A graph needs a name."]} and error.field == "name" and error.extra == {}


def _upload_csv(api, team_id, body: bytes, options: str = "{}"):
    from django.core.files.uploadedfile import SimpleUploadedFile

    upload = SimpleUploadedFile("iris.csv", body, content_type="text/csv")
    return api.post("/api/datasets/upload/", {"file": upload, "team": team_id, "kind": "csv",
                                             "options": options}, format="multipart")


@pytest.fixture
def error_world(api_a, api_b, api_viewer_a, team_a, team_b, user_a, graph_a, revision_a, dataset_a,
                valid_spec, iris_csv_bytes):
    """Objects of team A in every state an error needs: a queued run, a CSV with a target."""
    from webapp.celery import app
    from webapp.runs.services import run_create

    previous = app.conf.broker_url
    app.conf.broker_url = "memory://"
    app._pool = None
    run = run_create(user=user_a, team=team_a, graph_revision=revision_a, dataset=dataset_a,
                     config={"epochs": 2})
    csv = _upload_csv(api_a, team_a.pk, iris_csv_bytes, '{"target": "species"}').json()
    bare = _upload_csv(api_a, team_a.pk, iris_csv_bytes).json()
    yield {"run": run, "csv": csv["id"], "csv_no_target": bare["id"]}
    app.conf.broker_url = previous
    app._pool = None


def _body(response) -> tuple[int, str]:
    return response.status_code, response.content.decode()


def test_domain_errors_keep_their_status_and_body(error_world, api_a, api_b, api_viewer_a, team_a,
                                                  team_b, user_a, graph_a, dataset_a, valid_spec):
    from engine.build import build
    from engine.export import export_dir
    from webapp.graphs.services import revision_save
    from webapp.runs.models import Explanation, Run, RunStatus
    from webapp.runs.selectors import run_export_dir

    run = error_world["run"]
    csv_id = error_world["csv"]
    runs_body = {"graph": graph_a.pk, "revision": 1, "dataset": dataset_a.pk}
    csv_no_target = error_world["csv_no_target"]
    wide = {**valid_spec, "nodes": [dict(n) for n in valid_spec["nodes"]]}
    wide["nodes"][2]["params"] = {"out_features": 5}
    revision_save(graph=graph_a, spec=wide, created_by=user_a)
    seen = {
        "team_duplicate": api_a.post("/api/teams/", {"name": "team a"}, format="json"),
        "last_admin": api_a.delete(f"/api/teams/{team_a.pk}/members/{user_a.pk}/"),
        "not_a_spec": api_a.post("/api/graphs/", {"team": team_a.pk, "name": "g",
                                                  "spec": {"version": 1, "inputs": "x"}}, format="json"),
        "graph_in_use": api_a.delete(f"/api/graphs/{graph_a.pk}/"),
        "builtin_unknown": api_a.post("/api/datasets/", {"team": team_a.pk, "builtin": "nope"}, format="json"),
        "dataset_in_use": api_a.delete(f"/api/datasets/{dataset_a.pk}/"),
        "options_not_csv": api_a.patch(f"/api/datasets/{dataset_a.pk}/", {"options": {"target": "x"}},
                                       format="json"),
        "options_unknown": api_a.patch(f"/api/datasets/{csv_id}/", {"options": {"colour": "x"}},
                                       format="json"),
        "options_bad_target": api_a.patch(f"/api/datasets/{csv_id}/", {"options": {"target": "nope"}},
                                          format="json"),
        "run_config": api_a.post("/api/runs/", {**runs_body, "config": {"epochs": 0}}, format="json"),
        "run_config_type": api_a.post("/api/runs/", {**runs_body, "config": [1]}, format="json"),
        "run_transforms": api_a.post("/api/runs/", {**runs_body, "transforms": [1]}, format="json"),
        "run_split": api_a.post("/api/runs/", {**runs_body, "split": {"val": 2}}, format="json"),
        "run_revision": api_a.post("/api/runs/", {**runs_body, "revision": 9}, format="json"),
        "run_graph_revision": api_a.post("/api/runs/", {"graph_revision": 999999, "dataset": dataset_a.pk},
                                         format="json"),
        "run_foreign_graph": api_b.post("/api/runs/", runs_body, format="json"),
        "run_foreign_dataset": api_a.post("/api/runs/", {**runs_body, "dataset": 999999}, format="json"),
        "run_foreign_team": api_a.post("/api/runs/", {**runs_body, "team": team_b.pk}, format="json"),
        "run_viewer": api_viewer_a.post("/api/runs/", runs_body, format="json"),
        "run_not_trainable": api_a.post("/api/runs/", {**runs_body, "dataset": csv_no_target}, format="json"),
        "run_graph_mismatch": api_a.post("/api/runs/", {**runs_body, "revision": 2}, format="json"),
        "run_graph_filter": api_a.get("/api/runs/?graph=abc"),
        "metrics_max_points": api_a.get(f"/api/runs/{run.pk}/metrics/?max_points=1"),
        "export_format": api_a.get(f"/api/runs/{run.pk}/export/?format=exe"),
        "export_not_trained": api_a.get(f"/api/runs/{run.pk}/export/?format=zip"),
        "explain_not_trained": api_a.post(f"/api/runs/{run.pk}/explanations/", {"index": 0}, format="json"),
    }
    Run.objects.filter(pk=run.pk).update(status=RunStatus.SUCCEEDED)
    explanation = Explanation.objects.create(run=run, method="saliency", sample={"index": 0})
    seen.update({
        "explain_method": api_a.post(f"/api/runs/{run.pk}/explanations/", {"index": 0, "method": "x"},
                                     format="json"),
        "explain_both": api_a.post(f"/api/runs/{run.pk}/explanations/", {"index": 0, "input": [1]},
                                   format="json"),
        "explain_input": api_a.post(f"/api/runs/{run.pk}/explanations/", {"input": 3}, format="json"),
        "export_missing": api_a.get(f"/api/runs/{run.pk}/export/?format=python"),
        "cancel_finished": api_a.post(f"/api/runs/{run.pk}/cancel/"),
        "image_not_ready": api_a.get(f"/api/explanations/{explanation.pk}/image/"),
    })
    export_dir(build(valid_spec, seed=0), valid_spec, run.config, {}, run_export_dir(run), onnx=False)
    seen["export_pending"] = api_a.get(f"/api/runs/{run.pk}/export/?format=onnx")
    seen["export_pending_again"] = api_a.get(f"/api/runs/{run.pk}/export/?format=onnx")
    manifest = run_export_dir(run) / "export.json"
    note = {"exported": False, "note": "no ONNX form", "errors": [{"node": "fc1", "message": "m"}]}
    manifest.write_text(json.dumps({**json.loads(manifest.read_text()), "onnx": note}))
    seen["onnx_unavailable"] = api_a.get(f"/api/runs/{run.pk}/export/?format=onnx")

    got = {name: _body(response) for name, response in seen.items()}
    from webapp.datasets.services import csv_option_names

    # The CSV options are the engine's (they grow with it); the sentence around them is fixed.
    tokens = {"<run>": run.pk, "<team_b>": team_b.pk, "<explanation>": explanation.pk,
              "<csv_options>": ", ".join(csv_option_names())}
    if os.environ.get("RECORD_ERRORS"):
        print(json.dumps(got, indent=1))
    expected = {}
    for name, (status, body) in EXPECTED_ERRORS.items():
        for token, value in tokens.items():
            body = body.replace(token, str(value))
        expected[name] = (status, body)
    assert got == expected


EXPECTED_ERRORS: dict[str, tuple[int, str]] = {
    'team_duplicate': (400, '{"error":{"code":"duplicate","message":"A team called \\"team a\\" already exists.","fields":{"name":["A team called \\"team a\\" already exists."]}}}'),
    'last_admin': (409, '{"error":{"code":"last_admin","message":"A team always keeps at least one admin: make someone else admin first.","fields":{}}}'),
    'not_a_spec': (400, '{"error":{"code":"not_a_spec","message":"not a graph spec: inputs: Input should be a valid list","fields":{"spec.inputs":["not a graph spec: inputs: Input should be a valid list"]}}}'),
    'graph_in_use': (409, '{"error":{"code":"in_use","message":"Runs use revisions of this graph; delete those runs first.","fields":{}}}'),
    'builtin_unknown': (400, '{"error":{"code":"invalid","message":"Unknown built-in dataset \'nope\'; available: iris, wine, breast_cancer, diabetes, digits, moons, spirals.","fields":{"builtin":["Unknown built-in dataset \'nope\'; available: iris, wine, breast_cancer, diabetes, digits, moons, spirals."]}}}'),
    'dataset_in_use': (409, '{"error":{"code":"in_use","message":"Runs use this dataset; delete those runs first.","fields":{}}}'),
    'options_not_csv': (400, '{"error":{"code":"invalid","message":"Only CSV datasets take new options; a builtin dataset is uploaded again instead.","fields":{"options":["Only CSV datasets take new options; a builtin dataset is uploaded again instead."]}}}'),
    'options_unknown': (400, '{"error":{"code":"invalid","message":"Unknown CSV option \'colour\'; a CSV takes <csv_options>.","fields":{"options.colour":["Unknown CSV option \'colour\'; a CSV takes <csv_options>."]}}}'),
    'options_bad_target': (400, '{"error":{"code":"invalid_dataset","message":"field \'source.target\', column \'nope\': no column named \'nope\'; available columns: \'sepal_length\', \'sepal_width\', \'petal_length\', \'petal_width\', \'species\'","fields":{"options.target":["field \'source.target\', column \'nope\': no column named \'nope\'; available columns: \'sepal_length\', \'sepal_width\', \'petal_length\', \'petal_width\', \'species\'"]},"detail":{"message":"field \'source.target\', column \'nope\': no column named \'nope\'; available columns: \'sepal_length\', \'sepal_width\', \'petal_length\', \'petal_width\', \'species\'","row":null,"column":"nope","entry":null,"field":"source.target"}}}'),
    'run_config': (400, '{"error":{"code":"invalid_config","message":"invalid training config: epochs: Input should be greater than or equal to 1","fields":{"config.epochs":["Input should be greater than or equal to 1"]}}}'),
    'run_config_type': (400, '{"error":{"code":"invalid_config","message":"config must be an object.","fields":{"config":["Must be an object."]}}}'),
    'run_transforms': (400, '{"error":{"code":"invalid","message":"transforms must be an object.","fields":{"transforms":["Must be an object."]}}}'),
    'run_split': (400, '{"error":{"code":"invalid_recipe","message":"split.val: Input should be less than 1","fields":{"split.val":["Input should be less than 1"]}}}'),
    'run_revision': (400, '{"error":{"code":"invalid","message":"No such revision among your teams\' graphs.","fields":{"revision":["Not found among your teams\' graphs."]}}}'),
    'run_graph_revision': (400, '{"error":{"code":"invalid","message":"No graph revision 999999 among your teams\' graphs.","fields":{"graph_revision":["Not found among your teams\' graphs."]}}}'),
    'run_foreign_graph': (400, '{"error":{"code":"invalid","message":"No such graph among your teams\' graphs.","fields":{"graph":["Not found among your teams\' graphs."]}}}'),
    'run_foreign_dataset': (400, '{"error":{"code":"invalid","message":"No dataset 999999 among your teams\' datasets.","fields":{"dataset":["Not found among your teams\' datasets."]}}}'),
    'run_foreign_team': (400, '{"error":{"code":"invalid","message":"team: No team <team_b> among your teams.","fields":{"team":["No team <team_b> among your teams."]}}}'),
    'run_viewer': (403, '{"error":{"code":"permission_denied","message":"Your role in team Team A (viewer) does not allow this.","fields":{}}}'),
    'run_not_trainable': (400, '{"error":{"code":"dataset_not_trainable","message":"Dataset \'iris\' has no target column yet; choose one on the datasets page first.","fields":{"dataset":["No target column is chosen: choose the column to predict first."]}}}'),
    'run_graph_mismatch': (400, '{"error":{"code":"invalid_graph","message":"The graph cannot train on this dataset: node fc2: output shape [5] does not fit the dataset: it has 3 classes, so the last layer needs out_features=3","fields":{"graph.fc2":["output shape [5] does not fit the dataset: it has 3 classes, so the last layer needs out_features=3"]},"errors":[{"node":"fc2","code":"shape_mismatch","field":"out_features","message":"output shape [5] does not fit the dataset: it has 3 classes, so the last layer needs out_features=3"}]}}'),
    'run_graph_filter': (400, '{"error":{"code":"invalid","message":"graph must be an id.","fields":{"graph":["Must be an integer id."]}}}'),
    'metrics_max_points': (400, '{"error":{"code":"invalid","message":"max_points must be an integer of at least 2.","fields":{"max_points":["An integer of at least 2."]}}}'),
    'export_format': (400, '{"error":{"code":"invalid","message":"Unknown format \'exe\'; one of safetensors, python, onnx, config, zip.","fields":{"format":["One of safetensors, python, onnx, config, zip."]}}}'),
    'export_not_trained': (409, '{"error":{"code":"run_not_trained","message":"Run <run> has not succeeded (queued); it has no export of its own.","fields":{},"checkpoints":[]}}'),
    'explain_not_trained': (409, '{"error":{"code":"run_not_trained","message":"Run <run> has not succeeded (queued); nothing to explain yet.","fields":{}}}'),
    'explain_method': (400, '{"error":{"code":"invalid_method","message":"Unknown method \'x\'; one of integrated_gradients, saliency, deeplift, gradient_shap, occlusion, grad_cam.","fields":{"method":["Unknown method \'x\'; one of integrated_gradients, saliency, deeplift, gradient_shap, occlusion, grad_cam."]}}}'),
    'explain_both': (400, '{"error":{"code":"invalid","message":"Give exactly one of index (a test-split row) or input (an array).","fields":{"index":["Give index or input."],"input":["Give index or input."]}}}'),
    'explain_input': (400, '{"error":{"code":"invalid","message":"input must be an array of numbers.","fields":{"input":["input must be an array of numbers."]}}}'),
    'export_missing': (409, '{"error":{"code":"export_missing","message":"This run\'s export is missing; ask an administrator.","fields":{}}}'),
    'cancel_finished': (409, '{"error":{"code":"run_finished","message":"Run <run> has already finished (succeeded).","fields":{}}}'),
    'image_not_ready': (409, '{"error":{"code":"explanation_not_ready","message":"Explanation <explanation> is queued; no image yet.","fields":{}}}'),
    'export_pending': (409, '{"error":{"code":"export_pending","message":"The ONNX file is being made; try again in a few seconds.","fields":{},"exports":{"status":"pending","safetensors":true,"python":true,"config":true,"zip":true,"onnx":"pending","note":""}}}'),
    'export_pending_again': (409, '{"error":{"code":"export_pending","message":"The ONNX file is being made; try again in a few seconds.","fields":{},"exports":{"status":"pending","safetensors":true,"python":true,"config":true,"zip":true,"onnx":"pending","note":""}}}'),
    'onnx_unavailable': (409, '{"error":{"code":"onnx_unavailable","message":"This graph has no ONNX export: no ONNX form.","fields":{},"errors":[{"node":"fc1","message":"m"}]}}'),
}
