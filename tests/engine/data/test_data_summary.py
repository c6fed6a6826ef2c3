"""Summaries and upload inspection: what the dataset page shows."""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Callable

import pytest
from PIL import Image

from engine.data import DataError, DataLimits, inspect_upload, load_dataset, summarize

CSV = "age,city,score,label\n" + "".join(
    f"{20 + i},{['oslo', 'rome'][i % 2]},{i * 0.5},{'yes' if i % 3 else 'no'}\n" for i in range(15)
)


def test_summary_of_a_builtin_recipe_is_json() -> None:
    summary = summarize({"source": {"kind": "builtin", "name": "wine"}})
    json.dumps(summary)
    assert summary["rows"]["total"] == 178
    assert summary["rows"]["train"] + summary["rows"]["val"] + summary["rows"]["test"] == 178
    assert sum(summary["class_counts"].values()) == 178
    assert summary["feature_shape"] == [13] and summary["task"] == "classification"
    assert len(summary["preview"]["rows"]) == 5 and len(summary["preview"]["rows"][0]) == 14


def test_summary_of_loaded_splits_for_regression_and_images() -> None:
    summary = summarize(load_dataset({"source": {"kind": "builtin", "name": "diabetes"}}))
    assert summary["class_counts"] is None and summary["target_stats"]["min"][0] > 0
    digits = summarize({"source": {"kind": "builtin", "name": "digits"}})
    samples = digits["preview"]["samples"]
    assert len(samples) == 8 and [s["label"] for s in samples] == [str(d) for d in range(8)]
    assert Image.open(io.BytesIO(base64.b64decode(samples[0]["png"]))).format == "PNG"


def test_inspect_csv_upload_before_a_target_is_chosen(write_csv: Callable[..., str]) -> None:
    lines = CSV.splitlines()
    lines[4] = "23,rome,oops,yes"
    summary = inspect_upload(write_csv("\n".join(lines) + "\n"), "csv")
    assert summary["rows"] == {"total": 15}
    kinds = {c["name"]: c["kind"] for c in summary["columns"]}
    assert kinds == {
        "age": "numeric",
        "city": "categorical",
        "score": "numeric",
        "label": "categorical",
    }
    assert summary["preview"]["rows"][0] == [20.0, "oslo", 0.0, "no"]
    assert summary["problems"][0]["row"] == 5 and summary["problems"][0]["column"] == "score"


def test_inspect_csv_upload_with_a_target_checks_everything(write_csv: Callable[..., str]) -> None:
    summary = inspect_upload(write_csv(CSV), "csv", {"target": "label"})
    assert summary["classes"] == ["no", "yes"] and summary["class_counts"] == {"no": 5, "yes": 10}
    city = next(c for c in summary["columns"] if c["name"] == "city")
    assert city["kind"] == "categorical" and city["role"] == "feature" and city["missing"] == 0
    with pytest.raises(DataError) as err:
        inspect_upload(write_csv(CSV), "csv", {"target": "label", "features": ["town"]})
    assert err.value.column == "town"


def test_inspect_image_upload(image_zip: str) -> None:
    summary = inspect_upload(image_zip, "images", {"size": [8, 8], "channels": 3})
    assert summary["class_counts"] == {"blue": 6, "green": 6, "red": 6}
    assert summary["skipped_entries"] == ["shapes/README.txt"]
    assert len(summary["preview"]["samples"]) == 8
    lazy = inspect_upload(image_zip, "images", {"size": [8, 8]}, DataLimits(in_memory_bytes=10))
    assert lazy["class_counts"] == summary["class_counts"]


def test_inspect_rejects_an_unknown_kind_and_bad_options(image_zip: str) -> None:
    with pytest.raises(DataError) as err:
        inspect_upload(image_zip, "video")
    assert err.value.field == "kind"
    with pytest.raises(DataError) as err:
        inspect_upload(image_zip, "images", {"colour": True})
    assert err.value.field == "source.colour"
