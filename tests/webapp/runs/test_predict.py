"""POST /api/runs/<id>/predict/ with raw input the way the user has it; the split's samples as uploaded.

Runs are trained for real by the runs.train task (called in-process; the broker is in memory).
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from django.core.files.uploadedfile import SimpleUploadedFile
from PIL import Image
from sklearn import datasets as skd

from tests.engine.test_pipeline import write_mixed_csv
from tests.webapp.test_wire_schema import check
from webapp.runs.models import Run, RunStatus

# The runs.train task's recorder writes from its own thread: a real transaction per test.
pytestmark = pytest.mark.django_db(transaction=True)

SPECS = Path(__file__).resolve().parents[3] / "examples" / "specs"


@pytest.fixture(scope="module")
def openapi() -> dict[str, Any]:
    from drf_spectacular.generators import SchemaGenerator

    return SchemaGenerator().get_schema(request=None, public=True)


def mlp(width: int, classes: int) -> dict[str, Any]:
    return {
        "version": 1,
        "inputs": [{"id": "x", "shape": [width], "dtype": "float32"}],
        "nodes": [
            {"id": "fc1", "op": "Linear", "params": {"out_features": 16}, "inputs": ["x"]},
            {"id": "act", "op": "GELU", "inputs": ["fc1"]},
            {"id": "fc2", "op": "Linear", "params": {"out_features": classes}, "inputs": ["act"]},
        ],
        "outputs": ["fc2"],
    }


def train_for_real(
    api: Any,
    team: Any,
    dataset_id: int,
    spec: dict[str, Any],
    settings: Any,
    config: dict[str, Any] | None = None,
) -> Run:
    """A run of `spec` on the dataset, created through the API and trained by the runs.train task."""
    from workers.runs import train_run

    settings.RUNS_LEASE_SECONDS = 30.0
    graph = api.post(
        "/api/graphs/", {"team": team.id, "name": "net", "spec": spec}, format="json"
    ).json()
    created = api.post(
        "/api/runs/",
        {
            "graph": graph["id"],
            "dataset": dataset_id,
            "config": {"epochs": 2, "device": "cpu", **(config or {})},
        },
        format="json",
    )
    assert created.status_code == 201, created.json()
    assert train_run(created.json()["id"]) == "succeeded"
    run = Run.objects.get(pk=created.json()["id"])
    assert run.status == RunStatus.SUCCEEDED, run.error
    return run


@pytest.fixture
def csv_run(
    api_a: Any, team_a: Any, settings: Any, tmp_path: Path
) -> tuple[Run, list[dict[str, str]]]:
    """A trained run on an uploaded CSV with categorical columns and blanks; the CSV's records."""
    path = tmp_path / "people.csv"
    records = write_mixed_csv(path)
    uploaded = api_a.post(
        "/api/datasets/upload/",
        {
            "team": team_a.id,
            "kind": "csv",
            "options": json.dumps(
                {"target": "label", "features": ["age", "colour", "size", "score"]}
            ),
            "file": SimpleUploadedFile("people.csv", path.read_bytes()),
        },
        format="multipart",
    )
    assert uploaded.status_code == 201, uploaded.json()
    body = uploaded.json()
    return train_for_real(
        api_a, team_a, body["id"], mlp(body["summary"]["feature_shape"][0], 2), settings
    ), records


@pytest.fixture
def digits_run(api_a: Any, team_a: Any, user_a: Any, settings: Any) -> Run:
    from webapp.datasets.services import dataset_builtin_create

    dataset = dataset_builtin_create(
        team=team_a, name="digits", builtin="digits", options={}, created_by=user_a
    )
    spec = json.loads((SPECS / "digits_cnn.json").read_text())
    return train_for_real(
        api_a, team_a, dataset.pk, spec, settings, {"epochs": 1, "optimizer": {"lr": 0.01}}
    )


def _png(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(arr.astype(np.uint8)).save(buf, format="PNG")
    return buf.getvalue()


def _predict(api: Any, run: Run, body: dict[str, Any]) -> Any:
    return api.post(f"/api/runs/{run.pk}/predict/", body, format="json")


def _error_fields(response: Any) -> dict[str, Any]:
    assert response.status_code == 400, (response.status_code, response.content[:500])
    error = response.json()["error"]
    assert error["code"] == "invalid_input", error
    return error["fields"]


def test_a_json_row_as_in_the_csv_gets_a_prediction_with_class_probabilities(
    api_a, csv_run, openapi
) -> None:
    run, _ = csv_run
    row = {
        "age": "41",
        "colour": "red",
        "size": "XL",
        "score": "",
    }  # text as in the file, one blank
    body = check(openapi, _predict(api_a, run, {"input": row}), "/api/runs/{id}/predict/", "post")
    assert body["input_kind"] == "row" and body["prediction"] in ("no", "yes")
    assert [p["class"] for p in body["probabilities"]] == ["no", "yes"]
    assert sum(p["probability"] for p in body["probabilities"]) == pytest.approx(1.0, abs=1e-5)
    shape = body["input_shape"]
    assert shape == [1, 2 + 4 + 4]  # age, score; colour one-hot (with "(missing)"), size one-hot
    # numbers as JSON numbers, categories as strings, a null for a gap: the same answer
    same = _predict(
        api_a, run, {"input": {"age": 41, "colour": "red", "size": "XL", "score": None}}
    ).json()
    assert same["probabilities"] == body["probabilities"]


def test_a_test_index_answers_with_the_true_label_and_matches_the_raw_row(api_a, csv_run) -> None:
    run, records = csv_run
    by_index = _predict(api_a, run, {"index": 3})
    assert by_index.status_code == 200, by_index.json()
    answer = by_index.json()
    assert answer["input_kind"] == "index" and answer["true"]["class"] in ("no", "yes")
    rows = api_a.get(f"/api/runs/{run.pk}/samples/test/").json()
    assert rows["count"] == len(rows["rows"]) == len(rows["file_rows"])
    source = rows["rows"][3]
    assert rows["file_rows"][3] == source + 2  # the header is row 1
    sample = api_a.get(f"/api/runs/{run.pk}/samples/test/3/").json()
    assert sample["kind"] == "table" and sample["file_row"] == source + 2
    record = records[source]
    assert sample["values"]["label"] == record["label"] == answer["true"]["class"]
    assert sample["values"]["colour"] == (record["colour"] or None)
    raw = {k: record[k] for k in ("age", "colour", "size", "score")}
    by_row = _predict(api_a, run, {"input": raw}).json()
    assert (
        by_row["probabilities"] == answer["probabilities"]
    )  # the same row, raw: exactly the same tensor


@pytest.mark.parametrize(
    ("row", "field"),
    [
        ({"age": 30, "colour": "red", "score": 1.0}, "input.size"),  # a missing feature
        (
            {"age": 30, "colour": "purple", "size": "M", "score": 1.0},
            "input.colour",
        ),  # unknown category
        ({"age": "old", "colour": "red", "size": "M", "score": 1.0}, "input.age"),  # not a number
    ],
)
def test_bad_rows_are_a_400_naming_the_field(api_a, csv_run, row, field) -> None:
    run, _ = csv_run
    fields = _error_fields(_predict(api_a, run, {"input": row}))
    assert list(fields) == [field]


def test_other_bad_bodies_are_400s_never_500s(api_a, csv_run) -> None:
    run, _ = csv_run
    assert "index" in _error_fields(_predict(api_a, run, {"index": 10_000}))
    assert "input" in _error_fields(_predict(api_a, run, {}))
    assert "input" in _error_fields(_predict(api_a, run, {"input": "a sentence"}))
    assert "input" in _error_fields(_predict(api_a, run, {"input": [1, 2]}))
    for index in ("seven", "²"):  # "²" is a digit to str.isdigit, not to int(): it was a 500
        response = _predict(api_a, run, {"index": index})
        assert response.status_code == 400 and "index" in response.json()["error"]["fields"], index
    fields = _error_fields(
        api_a.post(
            f"/api/runs/{run.pk}/predict/",
            {"image": SimpleUploadedFile("x.png", b"not an image")},
            format="multipart",
        )
    )
    assert (
        list(fields) == ["image"] and "age" in fields["image"][0]
    )  # a table model: say what it takes


def test_an_uploaded_image_is_predicted_by_a_digits_run(api_a, digits_run, openapi) -> None:
    digits = skd.load_digits()
    ink = digits.images[0] * 255 / 16  # a zero, as an 8x8 greyscale image
    response = api_a.post(
        f"/api/runs/{digits_run.pk}/predict/",
        {"image": SimpleUploadedFile("zero.png", _png(ink))},
        format="multipart",
    )
    body = check(openapi, response, "/api/runs/{id}/predict/", "post")
    assert body["input_kind"] == "image" and body["input_shape"] == [1, 1, 8, 8]
    assert [p["class"] for p in body["probabilities"]] == [str(i) for i in range(10)]
    # a bigger image is resized as the pipeline says
    big = np.kron(ink, np.ones((4, 4)))
    response = api_a.post(
        f"/api/runs/{digits_run.pk}/predict/",
        {"image": SimpleUploadedFile("zero32.png", _png(big))},
        format="multipart",
    )
    assert response.status_code == 200 and response.json()["input_shape"] == [1, 1, 8, 8]
    # raw sklearn values (0..16) give the same answer as the stored test sample
    rows = api_a.get(f"/api/runs/{digits_run.pk}/samples/test/").json()
    by_index = _predict(api_a, digits_run, {"index": 0}).json()
    raw = digits.images[rows["rows"][0]].tolist()
    by_values = _predict(api_a, digits_run, {"input": raw}).json()
    assert by_values["input_kind"] == "values"
    assert by_values["probabilities"] == by_index["probabilities"]
    assert by_index["true"]["class"] == str(digits.target[rows["rows"][0]])


def test_an_uploaded_image_answer_shows_what_the_network_saw(api_a, digits_run) -> None:
    """A 32x32 black-on-white digit comes back as the 8x8 grey image the network read, light."""
    import base64
    import io

    from PIL import Image

    ink = skd.load_digits().images[0] * 255 / 16
    paper = 255 - np.kron(ink, np.ones((4, 4)))  # dark ink on white paper, 4x bigger
    response = api_a.post(
        f"/api/runs/{digits_run.pk}/predict/",
        {"image": SimpleUploadedFile("zero32.png", _png(paper))},
        format="multipart",
    )
    seen = response.json()["seen"]
    assert seen["size"] == [8, 8] and seen["channels"] == 1
    assert seen["mean"] > 0.5  # mostly white: the opposite of the training digits
    png = base64.b64decode(seen["png"].removeprefix("data:image/png;base64,"))
    with Image.open(io.BytesIO(png)) as shown:
        assert shown.size == (8, 8) and shown.mode == "L"
    # Typed numbers are not an upload: nothing to show.
    raw = skd.load_digits().images[0].tolist()
    assert _predict(api_a, digits_run, {"input": raw}).json().get("seen") is None


def test_not_an_image_or_the_wrong_size_is_a_400_for_a_digits_run(api_a, digits_run) -> None:
    fields = _error_fields(
        api_a.post(
            f"/api/runs/{digits_run.pk}/predict/",
            {"image": SimpleUploadedFile("x.png", b"GIF89a but no")},
            format="multipart",
        )
    )
    assert list(fields) == ["image"]
    fields = _error_fields(
        _predict(api_a, digits_run, {"input": [[0.0] * 7] * 8})
    )  # 56 values, not 64
    assert list(fields) == ["input"]
    huge = Image.new("L", (4097, 4097))  # over the pixel limit the pipeline records
    buf = io.BytesIO()
    huge.save(buf, format="PNG")
    fields = _error_fields(
        api_a.post(
            f"/api/runs/{digits_run.pk}/predict/",
            {"image": SimpleUploadedFile("huge.png", buf.getvalue())},
            format="multipart",
        )
    )
    assert list(fields) == ["image"]


def test_image_samples_are_pngs(api_a, digits_run) -> None:
    response = api_a.get(f"/api/runs/{digits_run.pk}/samples/test/5/")
    assert response.status_code == 200 and response["Content-Type"] == "image/png"
    img = Image.open(io.BytesIO(response.content))
    assert img.size[0] == img.size[1] >= 8
    response = api_a.get(f"/api/runs/{digits_run.pk}/samples/test/100000/")
    assert response.status_code == 400 and "index" in response.json()["error"]["fields"]
    response = api_a.get(f"/api/runs/{digits_run.pk}/samples/nowhere/")
    assert response.status_code == 400 and "split" in response.json()["error"]["fields"]


def test_who_may_predict(api_a, api_viewer_a, api_b, anon, run_a) -> None:
    assert _predict(api_b, run_a, {"index": 0}).status_code == 404
    assert _predict(anon, run_a, {"index": 0}).status_code == 401
    assert _predict(api_viewer_a, run_a, {"index": 0}).status_code == 403
    response = _predict(api_a, run_a, {"index": 0})  # queued: nothing trained yet
    assert response.status_code == 409 and response.json()["error"]["code"] == "run_not_trained"


def test_the_python_download_and_the_zip_members_are_importable_names(api_a, csv_run) -> None:
    import zipfile

    run, _ = csv_run
    response = api_a.get(f"/api/runs/{run.pk}/export/?format=python")
    assert response.status_code == 200
    # Named per run (two runs' sources never overwrite each other) and still a module name.
    assert f'filename="net_run{run.pk}.py"' in response["Content-Disposition"]
    response = api_a.get(f"/api/runs/{run.pk}/export/?format=zip")
    assert response.status_code == 200
    data = b"".join(response.streaming_content)
    from django.conf import settings

    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        names = set(zf.namelist())
        assert {"model.py", "predict.py", "preprocess.json", "data.json"} <= names
        for name in names:  # no server path in any exported file
            if not name.endswith((".safetensors", ".onnx")):
                assert str(settings.MEDIA_ROOT) not in zf.read(name).decode("utf-8"), name
    torch.manual_seed(0)
