"""Datasets API: built-ins, uploads (checked, summarised, size-limited), previews, deletion."""

from __future__ import annotations

import base64
import io
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from PIL import Image

from tests.webapp.conftest import iris_like_csv
from webapp.datasets.models import Dataset, DatasetStatus

pytestmark = pytest.mark.django_db


def stored_files(settings: Any) -> list[Path]:
    """Every file under MEDIA_ROOT (datasets and unfinished uploads)."""
    root = Path(settings.MEDIA_ROOT)
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []


def upload(client: Any, team: Any, content: bytes, filename: str, kind: str, **options: Any) -> Any:
    return client.post(
        "/api/datasets/upload/",
        {
            "team": team.id,
            "kind": kind,
            "options": json.dumps(options),
            "file": SimpleUploadedFile(filename, content),
        },
        format="multipart",
    )


def png(color: tuple[int, int, int]) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (8, 8), color).save(out, format="PNG")
    return out.getvalue()


def image_zip(extra: dict[str, bytes] | None = None) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for i in range(4):
            archive.writestr(f"red/{i}.png", png((200 + i, 10, 10)))
            archive.writestr(f"blue/{i}.png", png((10, 10, 200 + i)))
        for name, data in (extra or {}).items():
            archive.writestr(name, data)
    return out.getvalue()


def test_builtins_are_listed(api_a):
    names = [d["name"] for d in api_a.get("/api/datasets/builtins/").json()["results"]]
    assert {"iris", "wine", "digits", "moons"} <= set(names)


def test_create_from_a_builtin_is_ready_with_a_summary(api_a, team_a):
    response = api_a.post("/api/datasets/", {"team": team_a.id, "builtin": "iris"}, format="json")
    assert response.status_code == 201
    body = response.json()
    assert body["status"] == "ready" and body["kind"] == "builtin" and body["name"] == "iris"
    assert body["summary"]["class_counts"] == {"setosa": 50, "versicolor": 50, "virginica": 50}


def test_unknown_builtin_names_the_field(api_a, team_a):
    response = api_a.post(
        "/api/datasets/", {"team": team_a.id, "builtin": "imagenet"}, format="json"
    )
    assert response.status_code == 400
    error = response.json()["error"]
    assert "imagenet" in error["message"] and "builtin" in error["fields"]


def test_csv_upload_is_stored_checked_and_summarised(api_a, team_a, settings):
    response = upload(api_a, team_a, iris_like_csv(30), "flowers.csv", "csv", target="species")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["status"] == "ready" and body["name"] == "flowers"
    assert body["summary"]["rows"]["total"] == 30
    assert body["summary"]["class_counts"] == {"setosa": 10, "versicolor": 10, "virginica": 10}
    assert "path" not in body["recipe"]
    dataset = Dataset.objects.get(pk=body["id"])
    # The original, and beside it the columnar copy that runs read (nothing else).
    assert stored_files(settings) == sorted([dataset.file_path, dataset.table_path])
    assert dataset.file_path.read_bytes() == iris_like_csv(30)

    preview = api_a.get(f"/api/datasets/{body['id']}/preview/").json()
    assert preview["kind"] == "table"
    assert preview["columns"][-1] == "species" and len(preview["rows"]) >= 3


def test_csv_with_a_bad_row_fails_naming_row_and_column_and_keeps_no_file(api_a, team_a, settings):
    response = upload(
        api_a, team_a, iris_like_csv(30, bad_row=7), "bad.csv", "csv", target="species"
    )
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid_dataset"
    assert error["detail"]["row"] == 8  # data row 7 is line 8 (the header is row 1)
    assert error["detail"]["column"] == "sepal_width"
    assert "row 8" in error["message"] and "sepal_width" in error["message"]
    dataset = Dataset.objects.get(pk=error["dataset"]["id"])
    assert dataset.status == DatasetStatus.FAILED and dataset.file == ""
    assert stored_files(settings) == []


def test_unknown_target_column_names_the_option(api_a, team_a, settings):
    response = upload(api_a, team_a, iris_like_csv(9), "x.csv", "csv", target="colour")
    assert response.status_code == 400
    error = response.json()["error"]
    assert "colour" in error["message"]
    assert stored_files(settings) == []


def test_oversized_upload_is_refused_while_streaming(api_a, team_a, settings):
    settings.NETLOOM_MAX_UPLOAD_BYTES = 2_000
    response = upload(api_a, team_a, iris_like_csv(200), "big.csv", "csv", target="species")
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "payload_too_large"
    assert Dataset.objects.count() == 0
    assert stored_files(settings) == []


def test_zip_with_path_traversal_is_refused_naming_the_entry(api_a, team_a, settings):
    archive = image_zip({"../../etc/evil.png": png((1, 2, 3))})
    response = upload(api_a, team_a, archive, "pics.zip", "images", size=[8, 8], channels=3)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["detail"]["entry"] == "../../etc/evil.png"
    assert stored_files(settings) == []
    assert not (Path(settings.MEDIA_ROOT).parent / "etc").exists()


def test_image_archive_gives_thumbnails(api_a, team_a):
    response = upload(api_a, team_a, image_zip(), "pics.zip", "images", size=[8, 8], channels=3)
    assert response.status_code == 201, response.json()
    assert response.json()["summary"]["class_counts"] == {"blue": 4, "red": 4}
    preview = api_a.get(f"/api/datasets/{response.json()['id']}/preview/").json()
    assert preview["kind"] == "images"
    first = base64.b64decode(preview["samples"][0]["png"])
    assert first.startswith(b"\x89PNG") and preview["samples"][0]["label"] in {"red", "blue"}


def test_upload_form_errors_are_field_errors_and_leave_nothing(api_a, team_a, settings):
    no_file = api_a.post(
        "/api/datasets/upload/", {"team": team_a.id, "kind": "csv"}, format="multipart"
    )
    assert no_file.status_code == 400 and "file" in no_file.json()["error"]["fields"]

    bad_options = api_a.post(
        "/api/datasets/upload/",
        {
            "team": team_a.id,
            "kind": "csv",
            "options": "{nope",
            "file": SimpleUploadedFile("a.csv", b"a,b\n1,2\n"),
        },
        format="multipart",
    )
    assert bad_options.status_code == 400 and "options" in bad_options.json()["error"]["fields"]

    wrong_suffix = upload(api_a, team_a, b"a,b\n1,2\n", "a.exe", "csv", target="b")
    assert wrong_suffix.status_code == 400 and "file" in wrong_suffix.json()["error"]["fields"]
    assert Dataset.objects.count() == 0
    assert stored_files(settings) == []


def test_viewer_cannot_upload_and_nothing_is_kept(api_viewer_a, team_a, settings):
    response = upload(api_viewer_a, team_a, iris_like_csv(9), "a.csv", "csv", target="species")
    assert response.status_code == 403
    assert stored_files(settings) == []


def test_delete_removes_the_files(api_a, team_a, settings):
    body = upload(api_a, team_a, iris_like_csv(9), "a.csv", "csv", target="species").json()
    assert stored_files(settings)
    assert api_a.delete(f"/api/datasets/{body['id']}/").status_code == 204
    assert stored_files(settings) == []
    assert api_a.get(f"/api/datasets/{body['id']}/").status_code == 404


def test_list_filters_by_team_and_status_and_stays_small(api_a, team_a, dataset_a, make_user):
    rows = api_a.get(f"/api/datasets/?team={team_a.id}&status=ready").json()["results"]
    assert [r["id"] for r in rows] == [dataset_a.id]
    assert "preview" not in rows[0]["summary"]
    assert api_a.get("/api/datasets/?status=failed").json()["count"] == 0
    assert api_a.get("/api/datasets/?team=abc").status_code == 400


def test_rename(api_a, dataset_a, api_viewer_a):
    assert (
        api_a.patch(f"/api/datasets/{dataset_a.id}/", {"name": "flowers"}, format="json").json()[
            "name"
        ]
        == "flowers"
    )
    assert (
        api_viewer_a.patch(
            f"/api/datasets/{dataset_a.id}/", {"name": "x"}, format="json"
        ).status_code
        == 403
    )
