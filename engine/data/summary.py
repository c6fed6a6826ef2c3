"""Summaries for the dataset page: counts, columns, class balance and a small preview."""

from __future__ import annotations

import base64
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch

from engine.data.archive import LazyImageSet
from engine.data.augment import png_grid
from engine.data.csv_read import (
    CsvFormat,
    Progress,
    build_csv_table,
    read_table,
    sniff_format,
    table_format,
    table_matches,
)
from engine.data.csv_table import parse_csv, table_preview, typed_table
from engine.data.errors import DataError
from engine.data.limits import DataLimits
from engine.data.load import Loaded, load
from engine.data.recipe import DataRecipe, parse_recipe
from engine.data.tensorset import DatasetInfo, Splits, TensorSet

PREVIEW_ROWS = 5
PREVIEW_IMAGES = 8
UPLOAD_KINDS = ("csv", "images", "tensors")


def _class_counts(y: torch.Tensor, classes: list[str]) -> dict[str, int]:
    counts = (
        torch.bincount(y.reshape(-1).long(), minlength=len(classes))
        if len(y)
        else torch.zeros(len(classes))
    )
    return {c: int(n) for c, n in zip(classes, counts.tolist(), strict=True)}


def _sample(part: Any, i: int) -> torch.Tensor:
    """Sample i of a split as the model sees it (normalised)."""
    if isinstance(part, LazyImageSet):
        x, _ = part.images[i]
        if part.mean is not None and part.std is not None:
            x = (x - part.mean[0]) / part.std[0]
        return x
    return part.x[i]


def _round(values: list[float]) -> list[float]:
    return [float(f"{v:.6g}") for v in values]


def _preview_from_splits(splits: Splits) -> dict[str, Any]:
    info, train = splits.info, splits.train
    y = train.y
    if len(info.feature_shape) == 3:
        picked: list[int] = []
        if info.task == "classification":
            for k in range(len(info.classes)):  # one per class first: the page shows the variety
                hits = torch.nonzero(y == k)
                if len(hits):
                    picked.append(int(hits[0]))
        picked = (picked + [i for i in range(len(train)) if i not in picked])[:PREVIEW_IMAGES]
        samples = []
        for i in picked:
            img = info.denormalize(_sample(train, i).unsqueeze(0).float())
            samples.append(
                {
                    "label": info.classes[int(y[i])]
                    if info.task == "classification"
                    else y[i].tolist(),
                    "png": base64.b64encode(png_grid(img, pad=0, min_tile=32)).decode("ascii"),
                }
            )
        return {"kind": "images", "samples": samples}
    rows = []
    for i in range(min(PREVIEW_ROWS, len(train))):
        x = _sample(train, i)
        raw = info.denormalize(x.unsqueeze(0).float())[0] if x.is_floating_point() else x
        values = raw.reshape(-1)[:64].tolist()
        target = (
            info.classes[int(y[i])]
            if info.task == "classification"
            else _round(y[i].reshape(-1).tolist())
        )
        rows.append((_round(values) if x.is_floating_point() else values) + [target])
    names = (
        info.feature_names
        if len(info.feature_names) == len(rows[0]) - 1
        else [f"x{j}" for j in range(len(rows[0]) - 1)]
        if rows
        else []
    )
    return {"kind": "table", "columns": names + [info.target_name or "target"], "rows": rows}


def _columns(info: DatasetInfo) -> list[dict[str, Any]]:
    if info.columns:
        return info.columns
    if len(info.feature_shape) != 1:
        return []
    cols: list[dict[str, Any]] = [
        {"name": n, "kind": "numeric", "missing": 0, "role": "feature"} for n in info.feature_names
    ]
    cols.append(
        {
            "name": info.target_name or "target",
            "kind": "categorical" if info.task == "classification" else "numeric",
            "missing": 0,
            "role": "target",
        }
    )
    return cols


def summarize(
    data: DataRecipe | dict[str, Any] | str | Splits | Loaded,
    limits: DataLimits | None = None,
    *,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Rows per split, task, shapes, class balance, columns and a small preview, as JSON."""
    if isinstance(data, Splits):
        loaded = Loaded(data)
    elif isinstance(data, Loaded):
        loaded = data
    else:
        loaded = load(data, limits, progress=progress)
    splits, info = loaded.splits, loaded.splits.info
    out: dict[str, Any] = {
        "task": info.task,
        "feature_shape": info.feature_shape,
        "rows": dict(info.rows),
        "num_classes": info.num_classes,
        "classes": info.classes,
        "target_name": info.target_name,
        "feature_names": info.feature_names,
        "normalization": {
            "method": info.normalization,
            "per": info.norm_axis,
            "mean": info.mean,
            "std": info.std,
        },
        "columns": _columns(info),
        "preview": loaded.preview or _preview_from_splits(splits),
        "skipped_entries": loaded.skipped,
    }
    if info.task == "classification":
        per_split = {
            name: _class_counts(part.y, info.classes)
            for name, part in (("train", splits.train), ("val", splits.val), ("test", splits.test))
        }
        out["class_counts"] = {c: sum(per_split[s][c] for s in per_split) for c in info.classes}
        out["split_class_counts"] = per_split
    else:
        ys = [
            p.y
            for p in (splits.train, splits.val, splits.test)
            if isinstance(p, TensorSet) and len(p)
        ]
        y = torch.cat(ys).double()
        out["class_counts"] = None
        out["target_stats"] = {
            "mean": _round(y.mean(0).tolist()),
            "std": _round(y.std(0, correction=0).tolist()),
            "min": _round(y.amin(0).tolist()),
            "max": _round(y.amax(0).tolist()),
        }
    return out


def _missing_summary(columns: list[dict[str, Any]]) -> dict[str, Any]:
    """Columns with gaps: how many, and the strategy in force (with its fitted fill, once known)."""
    return {
        c["name"]: {
            "count": c.get("missing", 0),
            "strategy": c.get("missing_strategy"),
            **({"fill": c["missing_fill"]} if c.get("missing_fill") is not None else {}),
        }
        for c in columns
        if c.get("missing")
    }


def _csv_text(
    path: str,
    options: dict[str, Any],
    limits: DataLimits,
    table_path: str | Path | None,
    progress: Progress | None,
    *,
    typed: bool,
) -> tuple[Any, CsvFormat]:
    """The upload's format and, when `typed`, its typed table (else None: the load that follows
    reads it); with `table_path`, the Arrow copy is (re)built there first."""
    delimiter = options.get("delimiter")
    encoding = options.get("encoding", "auto")
    if table_path is None:
        if not typed:
            sniffed = sniff_format(
                path, limits, delimiter=delimiter, encoding=encoding, guess_encoding=True
            )
            return None, sniffed
        table = parse_csv(path, limits, delimiter, encoding=encoding, guess_encoding=True)
        assert table.format is not None
        return table, table.format
    fmt = table_format(table_path)
    if not table_matches(fmt, path, delimiter=delimiter, encoding=encoding):
        fmt = build_csv_table(
            path,
            table_path,
            limits,
            delimiter=delimiter,
            encoding=encoding,
            guess_encoding=True,
            progress=progress,
        )
    assert fmt is not None
    if not typed:
        return None, fmt
    return typed_table(read_table(table_path), limits, fmt), fmt


def inspect_upload(
    path: str | Path,
    kind: str,
    options: dict[str, Any] | None = None,
    limits: DataLimits | None = None,
    *,
    table_path: str | Path | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Check an uploaded file completely and summarise it; raises DataError on any bad input.

    Args:
        kind: "csv", "images" or "tensors".
        options: source fields besides kind and path (CSV target/features/..., image size/channels),
            plus optional "split" and "transforms". A CSV without a target gets a structural check
            (header, row lengths, limits, encoding) and per-column facts; column problems are
            listed under "problems" rather than raised, since the user has not picked columns yet.
        table_path: CSV only: where the columnar copy (Arrow IPC) is written, or kept when it
            already matches the file and options; the check then reads it.
        progress: called with the fraction of the CSV read, or of an image archive decoded.
    Returns:
        For a CSV also "csv" (encoding, delimiter, quotechar, whether the encoding was detected)
        and "missing" (per column with gaps: count, strategy in force, fitted fill).
    """
    limits = limits or DataLimits()
    if kind not in UPLOAD_KINDS:
        raise DataError(
            f"unknown upload kind {kind!r}; use one of {', '.join(UPLOAD_KINDS)}", field="kind"
        )
    options = dict(options or {})
    extra: dict[str, Any] = {k: options.pop(k) for k in ("split", "transforms") if k in options}
    csv_format: dict[str, Any] = {}
    if kind == "csv":
        table, fmt = _csv_text(
            str(path), options, limits, table_path, progress, typed="target" not in options
        )
        csv_format = {
            "encoding": fmt.encoding,
            "encoding_detected": fmt.detected_encoding,
            "delimiter": fmt.delimiter,
            "quotechar": fmt.quotechar,
        }
        if options.get("encoding", "auto") == "auto":
            options["encoding"] = fmt.encoding  # what was detected holds for the check below
    if kind == "csv" and "target" not in options:
        problems = []
        for col in table.columns:
            if col.kind == "numeric" and col.text_cells:
                row, value = col.text_cells[0]
                problems.append(
                    DataError(
                        f"{value!r} is not a number ({col.n_text} such cells in this numeric column)",
                        row=row,
                        column=col.name,
                    ).to_json()
                )
        columns = [col.describe() for col in table.columns]
        return {
            "kind": "csv",
            "task": None,
            "rows": {"total": table.n_rows},
            "columns": columns,
            "missing": _missing_summary(columns),
            "preview": table_preview(table),
            "problems": problems,
            "csv": csv_format,
        }
    options.pop("table", None)
    if kind == "csv" and table_path is not None:
        options["table"] = str(table_path)
    # The file is the one given here, whatever the options say.
    recipe = parse_recipe({"source": {**options, "kind": kind, "path": str(path)}, **extra})
    if kind == "images":
        # The check streams through the archive a chunk at a time, never holding it decoded,
        # so its memory is the same whatever the archive's length.
        limits = replace(limits, in_memory_bytes=0)
    summary = {"kind": kind, **summarize(recipe, limits, progress=progress)}
    if kind == "csv":
        summary["missing"] = _missing_summary(summary["columns"])
        summary["csv"] = csv_format
    return summary
