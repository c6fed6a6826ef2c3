"""The export's predict.py: raw input -> the service's predictions, in a process without Netloom."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from sklearn import datasets as skd

from engine.data import DataRecipe, load_dataset
from engine.data.split import split_indices
from engine.export import export_dir, zip_export
from engine.export.predict_template import answer, prepare
from engine.train import train
from tests.engine.export.test_export import _spec, torch_only_path
from tests.engine.test_pipeline import csv_recipe, write_mixed_csv

# Runs predict.py as a script with only torch, safetensors, numpy and Pillow on the path.
CHILD = r"""
import importlib.util, runpy, sys
sys.path = [p for p in sys.path if 'site-packages' not in p and 'dist-packages' not in p] + [SITE, EXPORT]
for banned in ('engine', 'webapp', 'workers', 'django', 'sklearn', 'captum', 'torchmetrics'):
    assert importlib.util.find_spec(banned) is None, banned + ' is importable'
sys.argv = ['predict.py'] + ARGS
runpy.run_path(EXPORT + '/predict.py', run_name='__main__')
"""


def _plain_predict(tmp: Path, export: Path, args: list[str]) -> subprocess.CompletedProcess:
    site = tmp / "site"
    if not site.exists():
        site = torch_only_path(tmp, extra=("numpy", "pillow"))
    code = CHILD.replace("SITE", repr(str(site))).replace("EXPORT", repr(str(export)))
    code = code.replace("ARGS", repr(args))
    return subprocess.run(
        [sys.executable, "-I", "-S", "-c", code],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=tmp,
    )


def _service_answers(model: torch.nn.Module, pipeline: dict, x: torch.Tensor) -> list[dict]:
    with torch.no_grad():
        return answer(pipeline, model.eval()(x))


def _unzipped(out: Path, dest: Path) -> Path:
    with zipfile.ZipFile(io.BytesIO(zip_export(out))) as zf:
        names = zf.namelist()
        zf.extractall(dest)
    for name in names:  # importable member names: model.py, predict.py, no "name-run1.py"
        stem = Path(name).stem
        assert stem.isidentifier() or name.endswith((".json", ".md", ".safetensors", ".onnx")), name
    assert {"model.py", "predict.py", "preprocess.json"} <= set(names)
    return dest


@pytest.fixture(scope="module")
def digits_export(tmp_path_factory):
    digits = load_dataset(
        DataRecipe.model_validate({"source": {"kind": "builtin", "name": "digits"}})
    )
    spec = _spec("digits_cnn")
    result = train(spec, digits, {"epochs": 1, "optimizer": {"lr": 0.01}})
    out = export_dir(
        result.model,
        spec,
        {"epochs": 1},
        result.metrics,
        tmp_path_factory.mktemp("digits"),
        data_info=digits.info,
        onnx=False,
    )
    return digits, result.model, out


def test_raw_sklearn_digits_through_predict_py_match_the_service(digits_export, tmp_path):
    digits, model, out = digits_export
    folder = _unzipped(out, tmp_path / "export")
    bunch = skd.load_digits()
    recipe = DataRecipe.model_validate(digits.info.recipe)
    _, _, test = split_indices(len(bunch.images), recipe.split, bunch.target)
    raw = bunch.images[test]  # 0..16, never divided by 16 by the caller
    np.save(tmp_path / "digits.npy", raw)
    proc = _plain_predict(tmp_path, folder, [str(tmp_path / "digits.npy"), "--json"])
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout)
    want = _service_answers(model, digits.info.pipeline, digits.test.x)
    assert [a["prediction"] for a in got] == [a["prediction"] for a in want]
    assert got == want  # the same probabilities too: the same float32 tensor goes in
    accuracy = np.mean(
        [a["prediction"] == str(t) for a, t in zip(got, bunch.target[test], strict=True)]
    )
    assert accuracy == pytest.approx(
        float((torch.tensor([a["index"] for a in want]) == digits.test.y).float().mean())
    )
    # an image file of a digit is taken too, printed with class names
    img = Image.fromarray((raw[0] * 255 / 16).astype(np.uint8), mode="L")
    img.save(tmp_path / "digit.png")
    proc = _plain_predict(tmp_path, folder, [str(tmp_path / "digit.png")])
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.startswith("0: ") and "[" in proc.stdout


def test_a_csv_with_categories_and_blanks_through_predict_py_matches_the_service(tmp_path):
    path = tmp_path / "people.csv"
    records = write_mixed_csv(path)
    splits = load_dataset(csv_recipe(path))
    spec = {
        "version": 1,
        "inputs": [{"id": "x", "shape": splits.info.feature_shape, "dtype": "float32"}],
        "nodes": [
            {"id": "fc1", "op": "Linear", "params": {"out_features": 16}, "inputs": ["x"]},
            {"id": "act", "op": "GELU", "inputs": ["fc1"]},
            {"id": "out", "op": "Linear", "params": {"out_features": 2}, "inputs": ["act"]},
        ],
        "outputs": ["out"],
    }
    result = train(spec, splits, {"epochs": 3})
    out = export_dir(
        result.model,
        spec,
        {"epochs": 3},
        result.metrics,
        tmp_path / "raw-export",
        data_info=splits.info,
        onnx=False,
    )
    folder = _unzipped(out, tmp_path / "export")
    # no server path in any exported file
    for f in folder.rglob("*"):
        if f.is_file() and f.suffix != ".safetensors":
            assert str(tmp_path) not in f.read_text(encoding="utf-8"), f.name
    labels = np.array([r["label"] == "yes" for r in records], dtype=np.int64)
    _, _, test = split_indices(
        len(records), DataRecipe.model_validate(splits.info.recipe).split, labels
    )
    lines = path.read_text().splitlines()
    (tmp_path / "test_rows.csv").write_text(
        "\n".join([lines[0]] + [lines[i + 1] for i in test]) + "\n"
    )
    proc = _plain_predict(tmp_path, folder, [str(tmp_path / "test_rows.csv"), "--json"])
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout)
    want = _service_answers(result.model, splits.info.pipeline, splits.test.x)
    assert got == want
    assert torch.equal(
        torch.from_numpy(prepare(splits.info.pipeline, [records[i] for i in test])), splits.test.x
    )
    # the readable form, and a bad row named by its column
    proc = _plain_predict(tmp_path, folder, [str(tmp_path / "test_rows.csv")])
    assert proc.returncode == 0 and proc.stdout.splitlines()[0].split(": ")[1].split(" ")[0] in (
        "yes",
        "no",
    )
    (tmp_path / "bad.json").write_text(
        json.dumps({"age": 30, "colour": "purple", "size": "M", "score": 1})
    )
    proc = _plain_predict(tmp_path, folder, [str(tmp_path / "bad.json")])
    assert proc.returncode == 2 and "colour" in proc.stderr and "purple" in proc.stderr
    readme = (folder / "README.md").read_text()
    assert "python predict.py input.csv" in readme and "from predict import load, predict" in readme
