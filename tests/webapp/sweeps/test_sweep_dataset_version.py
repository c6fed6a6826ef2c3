"""A sweep's trials all train on the dataset version its first trial pinned, even when a new
version is uploaded while the sweep runs."""

from __future__ import annotations

import json
from typing import Any

from django.core.files.uploadedfile import SimpleUploadedFile

from tests.webapp.conftest import iris_like_csv


def test_trials_keep_the_first_trials_version(api_a: Any, team_a: Any, sweep_body: dict[str, Any], commits: Any,
                                              end_run: Any) -> None:
    dataset = api_a.post("/api/datasets/upload/", {
        "team": team_a.id, "kind": "csv", "options": json.dumps({"target": "species"}),
        "file": SimpleUploadedFile("flowers.csv", iris_like_csv(60)),
    }, format="multipart").json()  # fmt: skip
    with commits():
        sweep = api_a.post("/api/sweeps/", {**sweep_body, "dataset": dataset["id"], "budget": 2, "parallelism": 1},
                           format="json").json()
    first = api_a.get(f"/api/runs/{sweep['trials'][0]['run']}/").json()
    assert first["dataset_version"]["number"] == 1
    newer = api_a.post(f"/api/datasets/{dataset['id']}/versions/",
                       {"file": SimpleUploadedFile("flowers.csv", iris_like_csv(55))}, format="multipart")
    assert newer.status_code == 201, newer.json()
    end_run(first["id"], [0.9, 0.6, 0.4, 0.5])
    detail = api_a.get(f"/api/sweeps/{sweep['id']}/").json()
    assert len(detail["trials"]) == 2
    second = api_a.get(f"/api/runs/{detail['trials'][1]['run']}/").json()
    assert second["dataset_version"] == first["dataset_version"]
    assert second["recipe"]["source"]["path"] == first["recipe"]["source"]["path"]
