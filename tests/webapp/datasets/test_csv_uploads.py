"""Real spreadsheets through the API: gaps, UTF-16, semicolons in Latin-1; each becomes ready with
its missing-value strategies shown, trains, and runs read the columnar copy, not the CSV."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from engine.data import load_dataset
from engine.train import TrainConfig, train
from webapp.datasets.models import Dataset
from webapp.datasets.selectors import dataset_recipe

pytestmark = pytest.mark.django_db


def gappy_csv(rows: int = 300) -> str:
    """Numeric gaps (age, income) and categorical gaps (city), a customer id, a 0/1 label."""
    rng = random.Random(7)
    lines = ["customer_id,age,income,city,label"]
    for i in range(rows):
        age = "" if rng.random() < 0.08 else str(rng.randint(18, 80))
        income = "NA" if rng.random() < 0.05 else f"{rng.uniform(1e3, 9e4):.2f}"
        city = "" if rng.random() < 0.1 else rng.choice(["oslo", "rome", "lima"])
        label = int((age != "" and int(age) > 45) ^ (rng.random() < 0.1))
        lines.append(f"{1000 + i},{age},{income},{city},{label}")
    return "\n".join(lines) + "\n"


def upload(client: Any, team: Any, content: bytes, filename: str, **options: Any) -> Any:
    return client.post(
        "/api/datasets/upload/",
        {
            "team": team.id,
            "kind": "csv",
            "options": json.dumps(options),
            "file": SimpleUploadedFile(filename, content),
        },
        format="multipart",
    )


def mlp(width: int, classes: int) -> dict[str, Any]:
    return {
        "version": 1,
        "inputs": [{"id": "x", "shape": [width], "dtype": "float32"}],
        "nodes": [
            {"id": "fc1", "op": "Linear", "params": {"out_features": 16}, "inputs": ["x"]},
            {"id": "act", "op": "ReLU", "inputs": ["fc1"]},
            {"id": "fc2", "op": "Linear", "params": {"out_features": classes}, "inputs": ["act"]},
        ],
        "outputs": ["fc2"],
    }


def _trains(dataset: Dataset, tmp_path: Path) -> Any:
    splits = load_dataset(dataset_recipe(dataset=dataset))
    info = splits.info
    result = train(
        mlp(info.feature_shape[0], info.output_size),
        splits,
        TrainConfig.model_validate({"epochs": 2, "batch_size": 32, "device": "cpu"}),
        out_dir=tmp_path / f"run{dataset.pk}",
    )
    assert result.status == "succeeded"
    return splits


def test_gappy_csv_is_ready_with_strategies_shown_and_trains(api_a, team_a, tmp_path) -> None:
    response = upload(
        api_a, team_a, gappy_csv().encode(), "customers.csv", target="label",
        features=["age", "income", "city"],
    )  # fmt: skip
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["status"] == "ready" and body["trainable"] and body["progress"] == 1.0
    missing = body["summary"]["missing"]
    assert missing["age"]["strategy"] == "median" and missing["age"]["count"] > 0
    assert isinstance(missing["age"]["fill"], float)
    assert missing["income"]["strategy"] == "median"
    assert missing["city"] == {
        "count": missing["city"]["count"],
        "strategy": "category",
        "fill": "(missing)",
    }
    columns = {c["name"]: c for c in body["summary"]["columns"]}
    assert columns["customer_id"]["id_like"] and columns["customer_id"]["role"] == "unused"
    assert "table" not in body["recipe"] and "path" not in body["recipe"]
    dataset = Dataset.objects.get(pk=body["id"])
    splits = _trains(dataset, tmp_path)
    fitted = splits.info.recipe["source"]["missing"]
    assert fitted["age"]["fill"] == missing["age"]["fill"]  # same split, same train rows


def test_utf16_csv_uploads_and_trains(api_a, team_a, tmp_path) -> None:
    text = gappy_csv(120).replace("rome", "roma é")
    response = upload(api_a, team_a, text.encode("utf-16"), "export.csv", target="label")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["summary"]["csv"]["encoding"] == "utf-16"
    assert "city=roma é" in body["summary"]["feature_names"]
    _trains(Dataset.objects.get(pk=body["id"]), tmp_path)


def test_semicolon_latin1_csv_uploads_and_trains(api_a, team_a, tmp_path) -> None:
    text = gappy_csv(150).replace(",", ";").replace("lima", "münchen")
    response = upload(api_a, team_a, text.encode("latin-1"), "export.csv")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["summary"]["csv"] == {
        "encoding": "latin-1",
        "encoding_detected": True,
        "delimiter": ";",
        "quotechar": '"',
    }
    assert body["needs"] == "target"
    assert body["summary"]["missing"]["age"]["strategy"] == "median"
    patched = api_a.patch(
        f"/api/datasets/{body['id']}/",
        {"options": {"target": "label", "features": ["age", "income", "city"]}},
        format="json",
    )
    assert patched.status_code == 200, patched.json()
    assert "city=münchen" in patched.json()["summary"]["feature_names"]
    _trains(Dataset.objects.get(pk=body["id"]), tmp_path)


def test_missing_value_strategies_are_options_checked_again(api_a, team_a) -> None:
    body = upload(api_a, team_a, gappy_csv(80).encode(), "c.csv", target="label").json()
    url = f"/api/datasets/{body['id']}/"
    changed = api_a.patch(
        url,
        {
            "options": {
                "missing": {"age": {"strategy": "mean", "indicator": True}, "city": "drop_row"}
            }
        },
        format="json",
    )
    assert changed.status_code == 200, changed.json()
    summary = changed.json()["summary"]
    assert summary["missing"]["age"]["strategy"] == "mean"
    assert "age (missing)" in summary["feature_names"]
    assert summary["rows"]["total"] < 80  # rows without a city are left out
    refused = api_a.patch(url, {"options": {"missing": {"city": "median"}}}, format="json")
    assert refused.status_code == 400
    error = refused.json()["error"]
    assert error["detail"]["column"] == "city" and "median" in error["message"]
    assert api_a.get(url).json()["summary"]["missing"]["age"]["strategy"] == "mean"


@pytest.mark.django_db(transaction=True)
def test_a_training_task_reads_the_columnar_copy_not_the_csv(
    api_a, team_a, settings, tmp_path
) -> None:
    from webapp.celery import app
    from webapp.runs.models import Run, RunStatus
    from webapp.runs.selectors import run_export_dir
    from workers.runs import train_run

    settings.RUNS_LEASE_SECONDS = 30.0
    previous = app.conf.broker_url
    app.conf.broker_url = "memory://"  # run_create queues on commit; nothing consumes it
    app._pool = None
    try:
        body = upload(
            api_a, team_a, gappy_csv(200).encode(), "c.csv", target="label",
            features=["age", "income", "city"],
        ).json()  # fmt: skip
        dataset = Dataset.objects.get(pk=body["id"])
        graph = api_a.post(
            "/api/graphs/",
            {"team": team_a.id, "name": "mlp", "spec": mlp(body["summary"]["feature_shape"][0], 2)},
            format="json",
        ).json()
        created = api_a.post(
            "/api/runs/",
            {"graph": graph["id"], "dataset": dataset.pk, "config": {"epochs": 1, "device": "cpu"}},
            format="json",
        )
        assert created.status_code == 201, created.json()
        run = Run.objects.get(pk=created.json()["id"])
        assert run.recipe["source"]["table"] == str(dataset.table_path)
        # The CSV is gone: a task that parsed it would fail.
        dataset.file_path.unlink()
        assert train_run(run.pk) == "succeeded"
        run.refresh_from_db()
        assert run.status == RunStatus.SUCCEEDED, run.error
        # The run's recipe keeps the fills fitted on its training rows (a resume or an
        # explanation uses them as they are).
        fitted = run.recipe["source"]["missing"]
        assert fitted["age"]["fill"] == body["summary"]["missing"]["age"]["fill"]
        assert created.json()["recipe"]["source"].get("missing", {}).get("age", {}).get("fill") is None
        assert api_a.get(f"/api/runs/{run.pk}/").json()["recipe"]["source"]["missing"] == fitted
        data = json.loads((run_export_dir(run) / "data.json").read_text())
        assert data["missing_values"]["age"]["strategy"] == "median"
        assert data["missing_values"]["age"]["fill"] == body["summary"]["missing"]["age"]["fill"]
    finally:
        app.conf.broker_url = previous
        app._pool = None


def test_an_upload_from_before_the_columnar_copy_still_trains(api_a, team_a, tmp_path) -> None:
    body = upload(api_a, team_a, gappy_csv(90).encode(), "old.csv", target="label").json()
    dataset = Dataset.objects.get(pk=body["id"])
    dataset.table_path.unlink()  # as if uploaded before this change
    assert "table" not in dataset_recipe(dataset=dataset)["source"]
    _trains(dataset, tmp_path)


def test_auto_processing_without_a_worker_processes_in_the_request(api_a, team_a, settings):
    from webapp.celery import app
    from webapp.datasets.processing import forget_workers, processing_mode

    settings.NETLOOM_DATASET_PROCESSING = "auto"
    previous = app.conf.broker_url
    app.conf.broker_url = "memory://"
    app._pool = None
    forget_workers()
    try:
        assert processing_mode() == "sync"
        response = upload(api_a, team_a, gappy_csv(30).encode(), "c.csv", target="label")
        assert response.status_code == 201 and response.json()["status"] == "ready"
    finally:
        forget_workers()
        app.conf.broker_url = previous
        app._pool = None
