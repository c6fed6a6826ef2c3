"""Choosing a CSV's target (and other options) after upload: PATCH /api/datasets/<id>/ re-checks the file."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from tests.webapp.conftest import iris_like_csv
from webapp.datasets.models import Dataset

pytestmark = pytest.mark.django_db


def iris_with_constant_column(rows: int = 30) -> bytes:
    """iris_like_csv plus a column "site" that holds one value on every row."""
    lines = iris_like_csv(rows).decode().splitlines()
    return (
        "\n".join([lines[0] + ",site"] + [line + ",north" for line in lines[1:]]) + "\n"
    ).encode()


def upload_without_target(client: Any, team: Any, content: bytes | None = None) -> dict[str, Any]:
    response = client.post(
        "/api/datasets/upload/",
        {
            "team": team.id,
            "kind": "csv",
            "options": json.dumps({}),
            "file": SimpleUploadedFile("flowers.csv", content or iris_with_constant_column()),
        },
        format="multipart",
    )
    assert response.status_code == 201, response.json()
    return response.json()


def choose(client: Any, dataset_id: int, **options: Any) -> Any:
    return client.patch(f"/api/datasets/{dataset_id}/", {"options": options}, format="json")


def test_an_upload_without_a_target_says_it_needs_one(api_a, team_a):
    body = upload_without_target(api_a, team_a)
    assert body["status"] == "ready"
    assert body["trainable"] is False and body["needs"] == "target"
    listed = api_a.get("/api/datasets/").json()["results"][0]
    assert listed["trainable"] is False and listed["needs"] == "target"


def test_builtins_are_trainable(api_a, dataset_a):
    body = api_a.get(f"/api/datasets/{dataset_a.id}/").json()
    assert body["trainable"] is True and body["needs"] is None


def test_choosing_the_target_makes_it_trainable_with_class_counts(api_a, team_a):
    body = upload_without_target(api_a, team_a)
    response = choose(api_a, body["id"], target="species")
    assert response.status_code == 200, response.json()
    chosen = response.json()
    assert chosen["trainable"] is True and chosen["needs"] is None
    assert chosen["options"] == {"target": "species"}
    assert chosen["recipe"]["target"] == "species" and "path" not in chosen["recipe"]
    assert chosen["summary"]["task"] == "classification"
    assert chosen["summary"]["class_counts"] == {"setosa": 10, "versicolor": 10, "virginica": 10}
    roles = {c["name"]: c.get("role") for c in chosen["summary"]["columns"]}
    assert roles["species"] == "target" and roles["sepal_length"] == "feature"


def test_options_merge_and_null_removes_one(api_a, team_a):
    body = upload_without_target(api_a, team_a)
    choose(api_a, body["id"], target="species", task="classification")
    response = choose(api_a, body["id"], features=["sepal_length", "petal_length"], task=None)
    assert response.status_code == 200, response.json()
    chosen = response.json()
    assert chosen["options"] == {"target": "species", "features": ["sepal_length", "petal_length"]}
    assert chosen["summary"]["feature_shape"] == [2]


@pytest.mark.parametrize(
    ("options", "column", "field"),
    [
        ({"target": "colour"}, "colour", "options.target"),
        ({"target": "site"}, "site", "options.target"),  # one class only
        (
            {"target": "species", "features": ["sepal_length", "petals"]},
            "petals",
            "options.features",
        ),
    ],
)
def test_a_bad_choice_names_the_column_and_keeps_the_old_summary(
    api_a, team_a, options, column, field
):
    body = upload_without_target(api_a, team_a)
    before = Dataset.objects.get(pk=body["id"])
    response = choose(api_a, body["id"], **options)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid_dataset"
    assert error["detail"]["column"] == column and column in error["message"]
    assert field in error["fields"]
    after = Dataset.objects.get(pk=body["id"])
    assert (after.options, after.summary, after.recipe) == (
        before.options,
        before.summary,
        before.recipe,
    )
    assert after.status == "ready" and after.file_path.read_bytes() == iris_with_constant_column()
    assert api_a.get(f"/api/datasets/{body['id']}/").json()["needs"] == "target"


def test_a_bad_choice_after_a_good_one_keeps_the_good_one(api_a, team_a):
    body = upload_without_target(api_a, team_a)
    good = choose(api_a, body["id"], target="species").json()
    assert choose(api_a, body["id"], target="site").status_code == 400
    again = api_a.get(f"/api/datasets/{body['id']}/").json()
    assert again["options"] == {"target": "species"} and again["trainable"] is True
    assert again["summary"] == good["summary"]


def test_a_bad_cell_in_a_chosen_feature_names_row_and_column(api_a, team_a):
    body = upload_without_target(api_a, team_a, iris_like_csv(30, bad_row=7))
    assert body["summary"]["problems"][0]["column"] == "sepal_width"  # listed, not raised
    response = choose(api_a, body["id"], target="species")
    assert response.status_code == 400
    detail = response.json()["error"]["detail"]
    assert (detail["row"], detail["column"]) == (8, "sepal_width")
    assert Dataset.objects.get(pk=body["id"]).file_path.is_file()


def test_unknown_options_and_non_csv_datasets_are_refused(api_a, team_a, dataset_a):
    body = upload_without_target(api_a, team_a)
    response = choose(api_a, body["id"], target="species", colour="red")
    assert response.status_code == 400 and "options.colour" in response.json()["error"]["fields"]
    builtin = choose(api_a, dataset_a.id, target="species")
    assert builtin.status_code == 400 and "options" in builtin.json()["error"]["fields"]
    empty = api_a.patch(f"/api/datasets/{body['id']}/", {}, format="json")
    assert empty.status_code == 400


def test_name_and_options_together_change_nothing_when_the_options_fail(api_a, team_a):
    body = upload_without_target(api_a, team_a)
    response = api_a.patch(
        f"/api/datasets/{body['id']}/",
        {"name": "renamed", "options": {"target": "colour"}},
        format="json",
    )
    assert response.status_code == 400
    assert api_a.get(f"/api/datasets/{body['id']}/").json()["name"] == "flowers"


def test_viewer_gets_403_and_another_team_404(api_a, api_viewer_a, api_b, team_a):
    body = upload_without_target(api_a, team_a)
    assert choose(api_viewer_a, body["id"], target="species").status_code == 403
    assert choose(api_b, body["id"], target="species").status_code == 404
    assert Dataset.objects.get(pk=body["id"]).options == {}


def test_a_dataset_used_by_runs_cannot_change_options(api_a, team_a, user_a, revision_a, settings):
    from webapp.celery import app
    from webapp.runs.services import run_create

    body = upload_without_target(api_a, team_a)
    four = ["sepal_length", "sepal_width", "petal_length", "petal_width"]
    assert choose(api_a, body["id"], target="species", features=four).status_code == 200
    dataset = Dataset.objects.get(pk=body["id"])
    previous = app.conf.broker_url
    app.conf.broker_url, app._pool = "memory://", None  # the queued training goes nowhere
    try:
        run_create(
            user=user_a,
            team=team_a,
            graph_revision=revision_a,
            dataset=dataset,
            config={"epochs": 1},
        )
    finally:
        app.conf.broker_url, app._pool = previous, None
    response = choose(api_a, body["id"], target="petal_width")
    assert response.status_code == 409 and response.json()["error"]["code"] == "in_use"
    assert Dataset.objects.get(pk=body["id"]).options == {"target": "species", "features": four}
    # Renaming stays allowed: runs keep their recipe, not the name.
    assert (
        api_a.patch(f"/api/datasets/{body['id']}/", {"name": "kept"}, format="json").status_code
        == 200
    )


def test_a_run_on_a_dataset_without_a_target_is_refused_on_the_dataset_field(
    api_a, team_a, graph_a
):
    body = upload_without_target(api_a, team_a)
    response = api_a.post(
        "/api/runs/",
        {"graph": graph_a.pk, "revision": 1, "dataset": body["id"], "config": {"epochs": 1}},
        format="json",
    )
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "dataset_not_trainable" and "target" in error["message"]
    assert "target" in error["fields"]["dataset"][0]
    assert api_a.get("/api/runs/").json()["count"] == 0
