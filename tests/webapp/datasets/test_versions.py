"""Dataset versions: a second upload under the same dataset is version 2 with its own digest; the
same bytes again are refused; a run pinned to version 1 keeps training on version 1's rows after
version 2 exists; a version runs use cannot be deleted."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from tests.webapp.conftest import iris_like_csv

pytestmark = pytest.mark.django_db


def upload(client: Any, team: Any, content: bytes, **options: Any) -> Any:
    return client.post(
        "/api/datasets/upload/",
        {"team": team.id, "kind": "csv", "options": json.dumps(options),
         "file": SimpleUploadedFile("flowers.csv", content)},
        format="multipart",
    )


def upload_version(client: Any, dataset_id: int, content: bytes, name: str = "flowers.csv", **form: Any) -> Any:
    return client.post(f"/api/datasets/{dataset_id}/versions/",
                       {"file": SimpleUploadedFile(name, content), **form}, format="multipart")


V1_ROWS, V2_ROWS = 60, 55


@pytest.fixture
def two_versions(api_a: Any, team_a: Any) -> dict[str, Any]:
    first = iris_like_csv(V1_ROWS)
    second = iris_like_csv(V2_ROWS)  # the same table with its last five rows gone
    created = upload(api_a, team_a, first, target="species")
    assert created.status_code == 201, created.json()
    dataset = created.json()
    made = upload_version(api_a, dataset["id"], second)
    assert made.status_code == 201, made.json()
    return {"dataset": dataset, "v2": made.json(), "bytes": (first, second)}


def test_a_second_upload_is_version_2_with_its_own_digest(api_a: Any, two_versions: dict[str, Any], settings: Any) -> None:
    dataset_id = two_versions["dataset"]["id"]
    first, second = two_versions["bytes"]
    versions = api_a.get(f"/api/datasets/{dataset_id}/versions/").json()
    assert [v["number"] for v in versions] == [1, 2]
    assert [v["digest"] for v in versions] == [hashlib.sha256(first).hexdigest(), hashlib.sha256(second).hexdigest()]
    assert [v["summary"]["rows"]["total"] for v in versions] == [V1_ROWS, V2_ROWS]
    assert versions[1]["options"]["target"] == "species"  # the previous version's options by default
    assert versions[1]["created_by"]["username"]
    one = api_a.get(f"/api/datasets/{dataset_id}/versions/2/").json()
    assert one["digest"] == versions[1]["digest"] and one["size"] == len(second)
    detail = api_a.get(f"/api/datasets/{dataset_id}/").json()
    assert detail["latest_version"] == {"number": 2, "digest": versions[1]["digest"]}
    assert detail["summary"]["rows"]["total"] == V2_ROWS
    # Stored content-addressed, once.
    digest = versions[1]["digest"]
    assert (Path(settings.MEDIA_ROOT) / "datasets" / "blobs" / digest[:2] / digest / "data.csv").read_bytes() == second
    assert api_a.get(f"/api/datasets/{dataset_id}/versions/3/").status_code == 404


def test_the_same_bytes_again_are_refused_naming_the_version(api_a: Any, two_versions: dict[str, Any]) -> None:
    dataset_id = two_versions["dataset"]["id"]
    first, _ = two_versions["bytes"]
    again = upload_version(api_a, dataset_id, first)
    assert again.status_code == 409, again.json()
    body = again.json()["error"]
    assert body["code"] == "duplicate_version", body
    assert body["version"]["number"] == 1
    assert "Version 1" in body["message"]
    assert len(api_a.get(f"/api/datasets/{dataset_id}/versions/").json()) == 2


def test_a_new_version_is_checked_as_an_upload(api_a: Any, two_versions: dict[str, Any], viewer_a: Any, client_for: Any) -> None:
    dataset_id = two_versions["dataset"]["id"]
    bad = upload_version(api_a, dataset_id, iris_like_csv(30, bad_row=4))
    assert bad.status_code == 400, bad.json()
    assert bad.json()["error"]["code"] == "invalid_dataset"
    assert bad.json()["error"]["detail"]["row"] == 5  # data row 4 below the header
    wrong = upload_version(api_a, dataset_id, b"x", name="photos.zip")
    assert wrong.status_code == 400 and "file" in json.dumps(wrong.json())
    # The dataset still reads its newest good version.
    assert api_a.get(f"/api/datasets/{dataset_id}/").json()["latest_version"]["number"] == 2
    viewer = client_for(viewer_a)
    assert upload_version(viewer, dataset_id, iris_like_csv(40)).status_code == 403


def test_options_of_a_new_version_replace_the_previous(api_a: Any, two_versions: dict[str, Any]) -> None:
    dataset_id = two_versions["dataset"]["id"]
    made = upload_version(api_a, dataset_id, iris_like_csv(45),
                          options=json.dumps({"target": "species", "features": ["sepal_length", "petal_length"]}))
    assert made.status_code == 201, made.json()
    assert made.json()["summary"]["feature_shape"] == [2]


def _graph(api: Any, team: Any, spec: dict[str, Any]) -> int:
    return api.post("/api/graphs/", {"team": team.id, "name": "mlp", "spec": spec}, format="json").json()["id"]


@pytest.mark.django_db(transaction=True)
def test_a_run_pinned_to_version_1_trains_on_version_1_after_version_2(
    api_a: Any, team_a: Any, valid_spec: dict[str, Any], settings: Any
) -> None:
    from webapp.celery import app
    from webapp.runs.models import Run
    from workers.runs import train_run

    settings.RUNS_LEASE_SECONDS = 30.0
    previous = app.conf.broker_url
    app.conf.broker_url = "memory://"  # run_create queues on commit; nothing consumes it
    app._pool = None
    try:
        created = upload(api_a, team_a, iris_like_csv(V1_ROWS), target="species").json()
        dataset_id = created["id"]
        graph = _graph(api_a, team_a, valid_spec)
        body = {"graph": graph, "dataset": dataset_id,
                "config": {"epochs": 1, "batch_size": 8, "device": "cpu"}, "split": {"val": 0.2, "test": 0.2, "seed": 0}}
        pinned = api_a.post("/api/runs/", body, format="json")
        assert pinned.status_code == 201, pinned.json()
        v1 = pinned.json()["dataset_version"]
        assert v1["number"] == 1
        assert upload_version(api_a, dataset_id, iris_like_csv(V2_ROWS)).status_code == 201
        latest = api_a.post("/api/runs/", body, format="json").json()
        assert latest["dataset_version"]["number"] == 2
        explicit = api_a.post("/api/runs/", {**body, "dataset_version": 1}, format="json").json()
        assert explicit["dataset_version"] == v1
        missing = api_a.post("/api/runs/", {**body, "dataset_version": 9}, format="json")
        assert missing.status_code == 400 and "dataset_version" in missing.json()["error"]["fields"], missing.json()

        seen = {}
        for run_id in (pinned.json()["id"], latest["id"]):
            assert train_run(run_id) == "succeeded"
            run = Run.objects.get(pk=run_id)
            assert run.status == "succeeded", run.error
            from engine.data import load_dataset
            from webapp.runs.selectors import run_data_recipe

            splits = load_dataset(run_data_recipe(run))  # what the trainer read, from the run's own recipe
            seen[run_id] = len(splits.train) + len(splits.val) + len(splits.test)
        assert seen == {pinned.json()["id"]: V1_ROWS, latest["id"]: V2_ROWS}
        again = api_a.get(f"/api/runs/{pinned.json()['id']}/").json()
        assert again["dataset_version"] == v1

        # A fine-tune of the pinned run, on the same dataset, keeps version 1.
        checkpoints = api_a.get(f"/api/runs/{pinned.json()['id']}/checkpoints/").json()
        name = checkpoints["results"][-1]["name"] if isinstance(checkpoints, dict) else checkpoints[-1]["name"]
        tuned = api_a.post("/api/runs/", {**body, "init": {"run": pinned.json()["id"], "checkpoint": name,
                                                           "mode": "finetune"}}, format="json")
        assert tuned.status_code == 201, tuned.json()
        assert tuned.json()["dataset_version"] == v1

        # Deleting version 1 is refused, naming the runs that train on it.
        refused = api_a.delete(f"/api/datasets/{dataset_id}/versions/1/")
        assert refused.status_code == 409, refused.json()
        error = refused.json()["error"]
        assert error["code"] == "in_use"
        assert {r["id"] for r in error["runs"]} == {pinned.json()["id"], explicit["id"], tuned.json()["id"]}
        assert str(pinned.json()["id"]) in error["message"]
        assert len(api_a.get(f"/api/datasets/{dataset_id}/versions/").json()) == 2
    finally:
        app.conf.broker_url = previous
        app._pool = None


def test_an_unused_version_is_deleted_and_its_blob_with_it(api_a: Any, two_versions: dict[str, Any], settings: Any) -> None:
    dataset_id = two_versions["dataset"]["id"]
    digest = two_versions["v2"]["digest"]
    blob = Path(settings.MEDIA_ROOT) / "datasets" / "blobs" / digest[:2] / digest
    assert blob.is_dir()
    assert api_a.delete(f"/api/datasets/{dataset_id}/versions/2/").status_code == 204
    assert not blob.exists()
    detail = api_a.get(f"/api/datasets/{dataset_id}/").json()
    assert detail["latest_version"]["number"] == 1 and detail["summary"]["rows"]["total"] == V1_ROWS
    last = api_a.delete(f"/api/datasets/{dataset_id}/versions/1/")
    assert last.status_code == 409 and last.json()["error"]["code"] == "last_version"


def test_identical_bytes_in_two_datasets_are_stored_once(api_a: Any, team_a: Any, two_versions: dict[str, Any], settings: Any) -> None:
    other = upload(api_a, team_a, iris_like_csv(20), target="species").json()
    _, second = two_versions["bytes"]
    made = upload_version(api_a, other["id"], second)
    assert made.status_code == 201, made.json()
    assert made.json()["digest"] == two_versions["v2"]["digest"]
    # Deleting one dataset's version keeps the bytes the other still holds.
    assert api_a.delete(f"/api/datasets/{two_versions['dataset']['id']}/versions/2/").status_code == 204
    digest = made.json()["digest"]
    assert (Path(settings.MEDIA_ROOT) / "datasets" / "blobs" / digest[:2] / digest / "data.csv").is_file()


def test_builtins_are_version_1_with_the_digest_of_their_data(api_a: Any, dataset_a: Any) -> None:
    from engine.data.builtin import builtin_digest

    versions = api_a.get(f"/api/datasets/{dataset_a.pk}/versions/").json()
    assert [(v["number"], v["digest"]) for v in versions] == [(1, builtin_digest("iris"))]
    refused = upload_version(api_a, dataset_a.pk, iris_like_csv(30))
    assert refused.status_code == 400


def test_another_teams_dataset_versions_are_not_found(api_b: Any, two_versions: dict[str, Any]) -> None:
    dataset_id = two_versions["dataset"]["id"]
    assert api_b.get(f"/api/datasets/{dataset_id}/versions/").status_code == 404
    assert api_b.get(f"/api/datasets/{dataset_id}/versions/1/").status_code == 404
