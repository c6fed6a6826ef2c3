"""The export takes raw input: its predict.py, in a process without Netloom, answers as the service does.

Against the real stack (daphne + a Celery worker + Redis): a CSV with categories and blanks is
uploaded and trained, the built-in digits are trained, both exports are downloaded as zips, and
the raw rows (the CSV's own text; sklearn's 0..16 digit arrays) go through the exported
`predict.py` and through POST /api/runs/<id>/predict/: the same predictions, the same probabilities.
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sklearn import datasets as skd

from tests.engine.export.test_predict_script import _plain_predict
from tests.engine.test_pipeline import write_mixed_csv
from tests.stack.stack import ServiceStack
from tests.stack.test_run_e2e import wait_status
from tests.stack.test_service_e2e import wait_dataset

pytestmark = [pytest.mark.slow, pytest.mark.one_database]

SPECS = Path(__file__).resolve().parents[2] / "examples" / "specs"


def _train(stack: ServiceStack, dataset_id: int, spec: dict[str, Any], **config: Any) -> int:
    api = stack.api("a")
    graph = api.post(
        "/api/graphs/", json={"team": stack.world["a"]["team"], "name": "net", "spec": spec}
    )
    assert graph.status_code == 201, graph.text
    run = api.post(
        "/api/runs/",
        json={
            "graph": graph.json()["id"],
            "dataset": dataset_id,
            "config": {"device": "cpu", "epochs": 2, **config},
        },
    )
    assert run.status_code == 201, run.text
    done = wait_status(stack, run.json()["id"], {"succeeded", "failed", "cancelled"}, timeout=180)
    assert done["status"] == "succeeded", (done, stack.logs())
    return int(done["id"])


def _export(stack: ServiceStack, run_id: int, dest: Path) -> Path:
    answer = stack.api("a").get(f"/api/runs/{run_id}/export/?format=zip")
    assert answer.status_code == 200, answer.text
    with zipfile.ZipFile(io.BytesIO(answer.content)) as zf:
        zf.extractall(dest)
    media = str(stack.tmp)
    for f in dest.rglob("*"):  # no server path in any exported file
        if f.is_file() and f.suffix not in (".safetensors", ".onnx"):
            assert media not in f.read_text(encoding="utf-8"), f.name
    assert (dest / "predict.py").is_file() and (dest / "model.py").is_file()
    return dest


def _service(stack: ServiceStack, run_id: int, body: dict[str, Any]) -> dict[str, Any]:
    answer = stack.api("a").post(f"/api/runs/{run_id}/predict/", json=body)
    assert answer.status_code == 200, answer.text
    return answer.json()


def _same_answers(printed: list[dict[str, Any]], served: list[dict[str, Any]]) -> None:
    """The same predicted classes; the same probabilities up to float32 rounding.

    The service answers one row per request, the script a batch: BLAS sums a batch of one in
    another order, so the last bit of a probability may differ; the prediction may not.
    """
    assert [a["prediction"] for a in printed] == [a["prediction"] for a in served]
    for got, want in zip(printed, served, strict=True):
        probs = {p["class"]: p["probability"] for p in want["probabilities"]}
        assert list(got["probabilities"]) == list(probs)
        assert list(got["probabilities"].values()) == pytest.approx(list(probs.values()), abs=1e-6)


def test_a_csv_with_categories_and_blanks_predicts_the_same_through_the_export(
    stack: ServiceStack, tmp_path: Path
) -> None:
    path = tmp_path / "people.csv"
    records = write_mixed_csv(path)
    uploaded = stack.api("a").post_multipart(
        "/api/datasets/upload/",
        {
            "team": stack.world["a"]["team"],
            "kind": "csv",
            "options": json.dumps(
                {"target": "label", "features": ["age", "colour", "size", "score"]}
            ),
        },
        {"file": ("people.csv", path.read_bytes())},
    )
    assert uploaded.status_code in (201, 202), uploaded.text
    dataset = wait_dataset(stack, uploaded.json()["id"])
    assert dataset["status"] == "ready", dataset
    width = dataset["summary"]["feature_shape"][0]
    spec = {
        "version": 1,
        "inputs": [{"id": "x", "shape": [width], "dtype": "float32"}],
        "nodes": [
            {"id": "fc1", "op": "Linear", "params": {"out_features": 16}, "inputs": ["x"]},
            {"id": "act", "op": "GELU", "inputs": ["fc1"]},
            {"id": "out", "op": "Linear", "params": {"out_features": 2}, "inputs": ["act"]},
        ],
        "outputs": ["out"],
    }
    run_id = _train(stack, dataset["id"], spec, epochs=3)
    folder = _export(stack, run_id, tmp_path / "export")

    rows = stack.api("a").get(f"/api/runs/{run_id}/samples/test/").json()
    lines = path.read_text().splitlines()
    test_csv = tmp_path / "test_rows.csv"
    test_csv.write_text("\n".join([lines[0]] + [lines[r - 1] for r in rows["file_rows"]]) + "\n")
    proc = _plain_predict(tmp_path, folder, [str(test_csv), "--json"])
    assert proc.returncode == 0, proc.stderr[-3000:]
    printed = json.loads(proc.stdout)
    by_row = [
        _service(
            stack, run_id, {"input": {k: records[r][k] for k in ("age", "colour", "size", "score")}}
        )
        for r in rows["rows"]
    ]
    by_index = [_service(stack, run_id, {"index": i}) for i in range(len(rows["rows"]))]
    _same_answers(printed, by_row)
    assert [a["probabilities"] for a in by_row] == [a["probabilities"] for a in by_index]
    assert [a["true"]["class"] for a in by_index] == [records[r]["label"] for r in rows["rows"]]
    evaluation = stack.api("a").get(f"/api/runs/{run_id}/evaluation/").json()
    assert evaluation["roc"] is not None and evaluation["rows"] == len(rows["rows"])


def test_raw_sklearn_digits_predict_the_same_through_the_export(
    stack: ServiceStack, tmp_path: Path
) -> None:
    created = stack.api("a").post(
        "/api/datasets/", json={"team": stack.world["a"]["team"], "builtin": "digits"}
    )
    assert created.status_code == 201, created.text
    spec = json.loads((SPECS / "digits_cnn.json").read_text())
    run_id = _train(
        stack, created.json()["id"], spec, epochs=3, optimizer={"lr": 0.01}, batch_size=64
    )
    folder = _export(stack, run_id, tmp_path / "export")

    rows = stack.api("a").get(f"/api/runs/{run_id}/samples/test/").json()["rows"][:40]
    digits = skd.load_digits()
    raw = digits.images[rows]  # 0..16: the export divides by 16 itself
    np.save(tmp_path / "digits.npy", raw)
    proc = _plain_predict(tmp_path, folder, [str(tmp_path / "digits.npy"), "--json"])
    assert proc.returncode == 0, proc.stderr[-3000:]
    printed = json.loads(proc.stdout)
    by_index = [_service(stack, run_id, {"index": i}) for i in range(len(rows))]
    by_values = [_service(stack, run_id, {"input": raw[i].tolist()}) for i in range(len(rows))]
    _same_answers(printed, by_index)
    assert [a["probabilities"] for a in by_values] == [a["probabilities"] for a in by_index]
    # raw digits through the export score as the service does on its own test tensors
    right = [a["prediction"] == str(digits.target[r]) for a, r in zip(printed, rows, strict=True)]
    assert right == [a["prediction"] == a["true"]["class"] for a in by_index]
    evaluation = stack.api("a").get(f"/api/runs/{run_id}/evaluation/").json()
    assert [c["class"] for c in evaluation["per_class"]] == [str(i) for i in range(10)]
