"""Samples of a split as the user has them: which source rows a split holds, raw values, images.

"Test row 7" is the 8th row of the test split; `split_rows` says which row of the user's own
file (or entry of the archive) that is, and `raw_sample` gives it back as it was uploaded: the
cells of a CSV row (before any fill or encoding), or a PNG for images.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.data.archive import open_archive, read_entry, scan_archive
from engine.data.builtin import BUILTIN_DATASETS
from engine.data.csv_table import FIRST_ROW, _rules, csv_raw, source_table
from engine.data.errors import DataError
from engine.data.limits import DataLimits
from engine.data.recipe import CsvSource, DataRecipe, ImagesSource, parse_recipe
from engine.data.split import split_indices
from engine.data.tensor_file import tensors_raw

SPLITS = ("train", "val", "test")


@dataclass
class SplitRows:
    """Per split, the source position of each of its samples (0-based data row / archive entry)."""

    rows: dict[str, np.ndarray]
    # CSV: the spreadsheet row of source position 0 (the header is row 1; blank lines not counted)
    first_row: int | None = None
    entries: list[str] | None = None  # image archive: entry names by source position


def _csv_kept(source: CsvSource, limits: DataLimits) -> tuple[Any, np.ndarray]:
    """The table and the source rows left after drop_row rules (as csv_raw drops them)."""
    table = source_table(source, limits)
    features = (
        list(source.features)
        if source.features
        else [h for h in table.header if h != source.target]
    )
    rules = _rules(source, table, features)
    gone = np.zeros(table.n_rows, dtype=bool)
    for name in [*features, source.target]:
        if rules[name].strategy == "drop_row":
            gone |= table.column(name).missing
    return table, np.flatnonzero(~gone)


def split_rows(recipe: DataRecipe | dict[str, Any], limits: DataLimits | None = None) -> SplitRows:
    """Which source rows each split holds, in the split's order (the order of its tensors)."""
    model = parse_recipe(recipe)
    limits = limits or DataLimits()
    source = model.source
    if isinstance(source, ImagesSource):
        index = scan_archive(source.path, limits)
        parts = split_indices(len(index), model.split, index.labels)
        return SplitRows(dict(zip(SPLITS, parts, strict=True)), entries=list(index.entries))
    if source.kind == "csv":
        raw = csv_raw(source, limits)
        _, kept = _csv_kept(source, limits)
        parts = split_indices(
            len(raw), model.split, raw.y if raw.task == "classification" else None
        )
        rows = {name: kept[p] for name, p in zip(SPLITS, parts, strict=True)}
        return SplitRows(rows, first_row=FIRST_ROW)
    raw = (
        BUILTIN_DATASETS[source.name].load(source.seed)
        if source.kind == "builtin"
        else tensors_raw(source, limits)
    )
    parts = split_indices(len(raw), model.split, raw.y if raw.task == "classification" else None)
    return SplitRows(dict(zip(SPLITS, parts, strict=True)))


def _png(pixels: np.ndarray, scale: int = 1) -> bytes:
    """(C, H, W) in [0, 1] -> PNG bytes (nearest-neighbour enlarged by `scale`)."""
    from PIL import Image

    arr = (np.clip(pixels, 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8)
    img = (
        Image.fromarray(arr[0], mode="L")
        if arr.shape[0] == 1
        else Image.fromarray(arr[:3].transpose(1, 2, 0), mode="RGB")
    )
    if scale > 1:
        img = img.resize((img.width * scale, img.height * scale), Image.Resampling.NEAREST)
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def _cell(col: Any, row: int) -> Any:
    if col.missing[row]:
        return None
    if col.kind == "numeric":
        value = float(col.values[row])
        return int(value) if value.is_integer() else value
    assert col.labels is not None and col.codes is not None
    return col.labels[int(col.codes[row])]


def raw_sample(
    recipe: DataRecipe | dict[str, Any], split: str, index: int, limits: DataLimits | None = None
) -> dict[str, Any]:
    """Sample `index` of `split` as uploaded.

    Returns {"split", "index", "source_index", "kind": "table", "values": {column: raw cell},
    "file_row"?} for tables, or {..., "kind": "image", "png": bytes, "entry"?} for images.
    Raises DataError (field "split" / "index") for a split or index that is not there.
    """
    if split not in SPLITS:
        raise DataError(f"no split {split!r}; one of {', '.join(SPLITS)}", field="split")
    model = parse_recipe(recipe)
    limits = limits or DataLimits()
    rows = split_rows(model, limits)
    part = rows.rows[split]
    if not 0 <= index < len(part):
        raise DataError(
            f"index {index} is outside the {split} split (0..{len(part) - 1})", field="index"
        )
    pos = int(part[index])
    out: dict[str, Any] = {"split": split, "index": index, "source_index": pos}
    source = model.source
    if isinstance(source, ImagesSource):
        assert rows.entries is not None
        name = rows.entries[pos]
        from PIL import Image

        with open_archive(source.path, limits) as zf:
            data = read_entry(zf, name, limits)
        with Image.open(io.BytesIO(data)) as img:
            img.thumbnail((256, 256))
            buf = io.BytesIO()
            img.convert("RGBA" if img.mode in ("P", "LA", "RGBA") else "RGB").save(
                buf, format="PNG"
            )
        return {**out, "kind": "image", "entry": name, "png": buf.getvalue()}
    if source.kind == "csv":
        table, _ = _csv_kept(source, limits)
        values = {col.name: _cell(col, pos) for col in table.columns}
        return {**out, "kind": "table", "values": values, "file_row": pos + FIRST_ROW}
    raw = (
        BUILTIN_DATASETS[source.name].load(source.seed)
        if source.kind == "builtin"
        else tensors_raw(source, limits)
    )
    assert raw.x is not None
    x = raw.x[pos]
    if x.ndim == 3 and x.shape[0] in (1, 3):
        lo, hi = float(x.min()), float(x.max())
        pixels = x if (lo >= 0.0 and hi <= 1.0) else (x - lo) / ((hi - lo) or 1.0)
        return {**out, "kind": "image", "png": _png(pixels, scale=max(1, 64 // max(x.shape[1:])))}
    if x.ndim == 1 and len(raw.feature_names) == len(x):
        values = {n: float(v) for n, v in zip(raw.feature_names, x.tolist(), strict=True)}
    else:
        values = {"values": np.asarray(x).tolist()}
    return {**out, "kind": "table", "values": values}
