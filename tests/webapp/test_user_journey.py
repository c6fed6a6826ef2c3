"""A new user's first session, through the REST API only."""

from __future__ import annotations

import copy

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from tests.webapp.conftest import iris_like_csv

pytestmark = pytest.mark.django_db


def test_first_session_from_token_to_generated_source(make_user, team_a, valid_spec, broken_spec):
    make_user("newcomer", team_a, "editor")
    client = APIClient()
    token = client.post(
        "/api/auth/token/", {"username": "newcomer", "password": "pw"}, format="json"
    ).json()["token"]
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    team = client.get("/api/auth/me/").json()["teams"][0]
    assert team["role"] == "editor"

    uploaded = client.post(
        "/api/datasets/upload/",
        {
            "team": team["id"],
            "kind": "csv",
            "options": '{"target": "species"}',
            "file": SimpleUploadedFile("iris.csv", iris_like_csv(45)),
        },
        format="multipart",
    )
    assert uploaded.status_code == 201
    dataset = client.get(f"/api/datasets/{uploaded.json()['id']}/").json()
    assert dataset["status"] == "ready"
    assert dataset["summary"]["rows"]["total"] == 45
    assert dataset["summary"]["feature_shape"] == [4]

    graph = client.post(
        "/api/graphs/", {"team": team["id"], "name": "iris mlp"}, format="json"
    ).json()
    report = client.post("/api/graphs/validate/", {"spec": broken_spec}, format="json").json()
    assert report["valid"] is False
    assert report["errors"][0]["node"] == "fc2"

    revisions = f"/api/graphs/{graph['id']}/revisions/"
    for width in (8, 16, 32):
        spec = copy.deepcopy(valid_spec)
        spec["nodes"][0]["params"]["out_features"] = width
        assert client.post(revisions, {"spec": spec}, format="json").status_code == 201
    assert [r["number"] for r in client.get(revisions).json()["results"]] == [3, 2, 1]

    source = client.get(f"{revisions}3/code/").json()["source"]
    assert "nn.Linear(4, 32" in source.replace("in_features=", "").replace("out_features=", "")
