"""The preprocessing pipeline: raw input through preprocess.json gives exactly the training tensors."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from sklearn import datasets as skd

from engine.data import DataRecipe, load_dataset
from engine.data.split import split_indices
from engine.export.predict_template import InputError, prepare


def _split(n: int, labels: np.ndarray | None = None) -> dict:
    return {"val": 0.15, "test": 0.15, "seed": 0}


def write_mixed_csv(path: Path, rows: int = 240, seed: int = 0) -> list[dict[str, str]]:
    """A CSV with numeric and categorical columns, blanks in both, and an id column; its rows."""
    rng = np.random.default_rng(seed)
    colours = ["red", "green", "blue"]
    sizes = ["S", "M", "L", "XL"]
    lines = ["id,age,colour,size,score,label"]
    records = []
    for i in range(rows):
        age = rng.integers(18, 80)
        colour = colours[int(rng.integers(0, 3))]
        size = sizes[int(rng.integers(0, 4))]
        score = float(np.round(rng.normal(50, 10), 2))
        label = "yes" if (age > 45) != (colour == "red") else "no"
        rec = {
            "id": str(i),
            "age": str(age),
            "colour": colour,
            "size": size,
            "score": str(score),
            "label": label,
        }
        if i % 7 == 3:
            rec["age"] = ""
        if i % 11 == 5:
            rec["colour"] = ""
        if i % 13 == 2:
            rec["score"] = "NA"
        records.append(rec)
        lines.append(",".join(rec[k] for k in ("id", "age", "colour", "size", "score", "label")))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return records


def csv_recipe(path: Path, **source: object) -> dict:
    return {
        "source": {
            "kind": "csv",
            "path": str(path),
            "target": "label",
            "features": ["age", "colour", "size", "score"],
            "missing": {"age": "mean", "score": {"strategy": "median", "indicator": True}},
            **source,
        },
        "split": {"val": 0.15, "test": 0.15, "seed": 0},
    }


def test_raw_digits_through_the_pipeline_are_the_training_tensors() -> None:
    splits = load_dataset({"source": {"kind": "builtin", "name": "digits"}})
    pipeline = splits.info.pipeline
    ops = [s["op"] for s in pipeline["steps"]]
    assert ops == ["scale", "normalize"]  # the built-in division by 16 is a recorded step
    assert pipeline["steps"][0]["divide"] == 16.0
    raw = skd.load_digits().images  # 0..16, as sklearn gives them
    _, _, test = split_indices(
        len(raw),
        splits.info.recipe and DataRecipe.model_validate(splits.info.recipe).split,
        skd.load_digits().target,
    )
    x = prepare(pipeline, raw[test])
    assert torch.equal(torch.from_numpy(x), splits.test.x)
    # one sample as a flat list of 64 numbers, too
    assert np.array_equal(prepare(pipeline, raw[test[0]].reshape(-1).tolist())[0], x[0])


def test_raw_csv_rows_through_the_pipeline_are_the_training_tensors(tmp_path: Path) -> None:
    path = tmp_path / "people.csv"
    records = write_mixed_csv(path)
    splits = load_dataset(csv_recipe(path))
    pipeline = splits.info.pipeline
    assert [s["op"] for s in pipeline["steps"]] == [
        "read_columns",
        "fill_missing",
        "encode_columns",
        "normalize",
    ]
    assert [c["name"] for c in pipeline["input"]["columns"]] == ["age", "colour", "size", "score"]
    enc = {c["name"]: c for c in pipeline["steps"][2]["columns"]}
    assert enc["colour"]["categories"] == ["(missing)", "blue", "green", "red"]
    assert enc["score"]["indicator"] is True
    fills = pipeline["steps"][1]["columns"]
    assert fills["age"]["strategy"] == "mean" and isinstance(fills["age"]["fill"], float)
    assert "path" not in json.dumps(pipeline["input"])
    labels = np.array([r["label"] == "yes" for r in records], dtype=np.int64)
    train, val, test = split_indices(
        len(records), DataRecipe.model_validate(splits.info.recipe).split, labels
    )
    for part, rows in (("train", train), ("test", test)):
        x = prepare(pipeline, [records[i] for i in rows])
        assert torch.equal(torch.from_numpy(x), getattr(splits, part).x), part


def test_csv_rows_given_as_json_values_and_bad_input_name_the_field(tmp_path: Path) -> None:
    path = tmp_path / "people.csv"
    write_mixed_csv(path)
    pipeline = load_dataset(csv_recipe(path, categorical="index")).info.pipeline
    row = {"age": 40, "colour": "blue", "size": "M", "score": None}
    x = prepare(pipeline, row)
    assert x.shape == (1, len(pipeline["feature_names"]))
    with pytest.raises(InputError) as err:
        prepare(pipeline, {"age": 40, "colour": "blue", "score": 1.0})
    assert err.value.field == "size"
    with pytest.raises(InputError) as err:
        prepare(pipeline, {**row, "colour": "purple"})
    assert err.value.field == "colour" and "purple" in err.value.message
    with pytest.raises(InputError) as err:
        prepare(pipeline, {**row, "age": "old"})
    assert err.value.field == "age"


def test_image_archives_record_decode_and_resize(tmp_path: Path) -> None:
    import zipfile

    archive = tmp_path / "shapes.zip"
    images = []
    with zipfile.ZipFile(archive, "w") as zf:
        for label in ("dark", "light"):
            for i in range(12):
                img = Image.new(
                    "RGB",
                    (20, 14),
                    (30 + i * 3, 40, 50) if label == "dark" else (200, 210 - i * 4, 220),
                )
                buf = io.BytesIO()
                img.save(buf, format="PNG")
                zf.writestr(f"{label}/{i}.png", buf.getvalue())
                images.append(buf.getvalue())
    splits = load_dataset(
        {
            "source": {"kind": "images", "path": str(archive), "size": [8, 8], "channels": 3},
            "split": {"val": 0.2, "test": 0.2, "seed": 0},
        }
    )
    pipeline = splits.info.pipeline
    assert [s["op"] for s in pipeline["steps"]] == ["decode_image", "normalize"]
    assert pipeline["steps"][0]["size"] == [8, 8]
    x = prepare(pipeline, images[0])
    assert x.shape == (1, 3, 8, 8)
    with pytest.raises(InputError) as err:
        prepare(pipeline, b"this is not a png")
    assert err.value.field == "image"


def test_builtin_tables_take_named_values_or_numbers() -> None:
    splits = load_dataset({"source": {"kind": "builtin", "name": "iris"}})
    pipeline = splits.info.pipeline
    names = pipeline["feature_names"]
    raw = skd.load_iris().data[:3]
    by_name = [dict(zip(names, map(float, r), strict=True)) for r in raw]
    assert np.array_equal(prepare(pipeline, by_name), prepare(pipeline, raw.astype(np.float32)))
    with pytest.raises(InputError) as err:
        prepare(pipeline, {names[0]: 1.0})
    assert err.value.field == names[1]
