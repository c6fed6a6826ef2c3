"""The preprocessing pipeline as data: every step from the raw input to the network's tensor.

`fit_pipeline(recipe, info)` writes down, in order, what `load_dataset` did to the user's raw
data with what it learned from the training split (column selection, missing-value fills,
category vocabularies, built-in scaling, image decoding and resizing, normalisation). The JSON
is stored with the run (`DatasetInfo.pipeline`) and in the export (`preprocess.json`), and is
applied by `engine/export/predict_template.py` (the export's `predict.py`), in the service too.

    {"format": "netloom-preprocess", "version": 1,
     "input": {"kind": "table" | "image" | "array", ...},
     "steps": [{"op": "read_columns" | "fill_missing" | "encode_columns" | "scale"
                      | "decode_image" | "normalize", ...}, ...],
     "output": {"shape": [...], "dtype": "float32" | "int64"},
     "task": ..., "classes": [...], "target": ...}
"""

from __future__ import annotations

from typing import Any

from engine.data.builtin import BUILTIN_DATASETS
from engine.data.csv_table import MISSING_TOKENS
from engine.data.limits import DataLimits
from engine.data.recipe import DataRecipe
from engine.data.tensorset import DatasetInfo

PIPELINE_FORMAT = "netloom-preprocess"
PIPELINE_VERSION = 1


def _table_steps(
    info: DatasetInfo, source: dict[str, Any]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    by_name = {c["name"]: c for c in info.columns}
    features = source.get("features") or [
        c["name"] for c in info.columns if c.get("role") == "feature"
    ]
    missing = source.get("missing") or {}
    read = [{"name": f, "type": by_name[f]["kind"]} for f in features]
    fills = {
        f: {
            "strategy": (missing.get(f) or {}).get("strategy", by_name[f].get("missing_strategy")),
            "fill": (missing.get(f) or {}).get("fill", by_name[f].get("missing_fill")),
        }
        for f in features
    }
    encode = []
    for f in features:
        col = by_name[f]
        entry: dict[str, Any] = {"name": f, "encoding": col.get("encoding", "numeric")}
        if entry["encoding"] != "numeric":
            entry["categories"] = list(col.get("categories") or [])
        entry["indicator"] = bool(col.get("missing_indicator"))
        encode.append(entry)
    steps: list[dict[str, Any]] = [
        {"op": "read_columns", "columns": read, "missing_tokens": sorted(MISSING_TOKENS)},
        {"op": "fill_missing", "columns": fills},
        {
            "op": "encode_columns",
            "columns": encode,
            "width": len(info.feature_names),
            "feature_names": list(info.feature_names),
        },
    ]
    inp: dict[str, Any] = {
        "kind": "table",
        "columns": read,
        "target": info.target_name,
        "delimiter": source.get("delimiter"),
    }
    return inp, steps


def _numeric_table(info: DatasetInfo) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A built-in table of numbers: every feature a numeric column, no gaps allowed."""
    read = [{"name": f, "type": "numeric"} for f in info.feature_names]
    steps: list[dict[str, Any]] = [
        {"op": "read_columns", "columns": read, "missing_tokens": sorted(MISSING_TOKENS)},
        {
            "op": "fill_missing",
            "columns": {f: {"strategy": "fail", "fill": None} for f in info.feature_names},
        },
        {
            "op": "encode_columns",
            "columns": [
                {"name": f, "encoding": "numeric", "indicator": False} for f in info.feature_names
            ],
            "width": len(info.feature_names),
            "feature_names": list(info.feature_names),
        },
    ]
    return {"kind": "table", "columns": read, "target": info.target_name, "delimiter": None}, steps


def fit_pipeline(
    recipe: DataRecipe, info: DatasetInfo, limits: DataLimits | None = None
) -> dict[str, Any]:
    """The pipeline `load_dataset` applied (fitted on the train split) as versioned JSON."""
    limits = limits or DataLimits()
    source = info.recipe.get("source") or recipe.source.model_dump(mode="json")
    kind = source["kind"]
    steps: list[dict[str, Any]]
    if kind == "csv":
        inp, steps = _table_steps(info, source)
    elif kind == "images":
        size = list(source.get("size") or [32, 32])
        channels = int(source.get("channels") or 3)
        inp = {"kind": "image", "channels": channels, "size": size}
        steps = [
            {
                "op": "decode_image",
                "channels": channels,
                "size": size,
                "resample": "bilinear",
                "max_pixels": limits.max_image_pixels,
            }
        ]
    elif kind == "builtin":
        builtin = BUILTIN_DATASETS[source["name"]]
        if len(info.feature_shape) == 1:
            inp, steps = _numeric_table(info)
        else:
            inp = {"kind": "array", "shape": list(info.feature_shape)}
            steps = []
        steps += [dict(s) for s in builtin.input_steps]
        if builtin.raw_range is not None:
            inp["range"] = list(builtin.raw_range)
        if builtin.image_input and len(info.feature_shape) == 3:
            channels, height, width = info.feature_shape
            # An image given to such a model: its [0, 1] pixels in the raw data's units.
            top = builtin.raw_range[1] if builtin.raw_range else 1.0
            inp["image"] = {
                "channels": channels,
                "size": [height, width],
                "scale": float(top),
                "max_pixels": limits.max_image_pixels,
            }
    else:  # tensors: numbers of the feature shape
        inp = {"kind": "array", "shape": list(info.feature_shape)}
        steps = []
    if info.mean is not None and info.std is not None and info.norm_axis is not None:
        steps.append(
            {
                "op": "normalize",
                "method": info.normalization,
                "axis": info.norm_axis,
                "mean": list(info.mean),
                "std": list(info.std),
            }
        )
    return {
        "format": PIPELINE_FORMAT,
        "version": PIPELINE_VERSION,
        "input": inp,
        "steps": steps,
        "output": {"shape": list(info.feature_shape), "dtype": info.x_dtype},
        "task": info.task,
        "classes": list(info.classes),
        "target": info.target_name,
        "feature_names": list(info.feature_names),
    }
