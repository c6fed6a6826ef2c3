"""Predictions of a trained run on raw input, and its samples as the user uploaded them (reads).

The input goes through the run's preprocessing pipeline (`preprocess.json` of its export, the
same code as the export's `predict.py`: engine/export/predict_template.py), then its network.
Bad input raises DomainError("invalid_input") naming the field: `input.<column>` for a table
row, `input` for numbers, `image` for an upload, `index` for a test-split index.
"""

from __future__ import annotations

import json
from typing import Any

from webapp.errors import Conflict, DomainError

from ..models import Run, RunStatus
from ..selectors import run_data_recipe, run_export_dir
from .weights import run_trained_model


def _require_trained(run: Run) -> None:
    if (
        run.status != RunStatus.SUCCEEDED
        or not (run_export_dir(run) / "model.safetensors").is_file()
    ):
        raise Conflict("run_not_trained", f"Run {run.pk} has no trained model ({run.status}).")


def run_pipeline(*, run: Run) -> dict[str, Any]:
    """The run's preprocessing pipeline: its export's preprocess.json, or fitted again from its recipe."""
    path = run_export_dir(run) / "preprocess.json"
    if path.is_file():
        return json.loads(path.read_text(encoding="utf-8"))
    from engine.data import load_dataset

    return load_dataset(run_data_recipe(run)).info.pipeline  # a run exported before pipelines


def _invalid(field: str, message: str) -> DomainError:
    return DomainError("invalid_input", message, field=field)


def run_predict(
    *, run: Run, input: Any = None, image: bytes | None = None, index: int | None = None
) -> dict[str, Any]:
    """The prediction of a succeeded run for one raw input: a row, numbers, an image or a test index.

    Returns {"run", "input_kind", "prediction", "index"?, "probability"?, "probabilities"?:
    [{"class", "probability"}] (classification, in output order), "input_shape" (the preprocessed
    tensor's, batch included), "true"? (for a test index: the stored label)}.
    """
    import torch

    from engine.export.predict_template import InputError, answer, prepare

    _require_trained(run)
    given = [
        name for name, v in (("input", input), ("image", image), ("index", index)) if v is not None
    ]
    if len(given) != 1:
        raise DomainError(
            "invalid_input",
            "Give exactly one of input (a row or numbers), image or index.",
            fields={
                name: ["Give exactly one of input, image or index."]
                for name in (given or ["input"])
            },
        )
    pipeline = run_pipeline(run=run)
    true: Any = None
    if index is not None:
        from engine.data import load_dataset

        splits = load_dataset(run_data_recipe(run))
        test_x = getattr(splits.test, "x", None)
        n = len(splits.test)
        if not 0 <= index < n:
            raise _invalid("index", f"Index {index} is outside the test split (0..{n - 1}).")
        if test_x is None:  # an archive too big to hold decoded: decode just this sample
            x = next(iter(_one(splits.test, index)))
        else:
            x = test_x[index : index + 1]
        label = splits.test.y[index]
        true = (
            {"class": pipeline["classes"][int(label)], "index": int(label)}
            if pipeline.get("task") == "classification"
            else label.reshape(-1).tolist()
        )
        kind = "index"
    else:
        raw = image if image is not None else input
        kind = "image" if image is not None else ("row" if isinstance(input, dict) else "values")
        takes_images = pipeline["input"]["kind"] == "image" or "image" in pipeline["input"]
        if image is not None and not takes_images:
            raise _invalid("image", "This model takes " + _takes(pipeline) + ", not images.")
        try:
            x = torch.from_numpy(prepare(pipeline, raw))
        except InputError as exc:
            field = exc.field
            if kind == "row" and field not in ("input", "image"):
                field = f"input.{field}"
            elif kind == "values" and field == "image":
                field = "input"
            raise _invalid(field, exc.message) from None
        if len(x) != 1:
            raise _invalid("input", f"Give one sample; this input holds {len(x)}.")
    model = run_trained_model(run=run)
    with torch.no_grad():
        out = model(x)
    result = answer(pipeline, out)[0]
    body: dict[str, Any] = {
        "run": run.pk,
        "input_kind": kind,
        "input_shape": list(x.shape),
        **result,
    }
    if "probabilities" in result:
        body["probabilities"] = [
            {"class": c, "probability": p} for c, p in result["probabilities"].items()
        ]
    if true is not None:
        body["true"] = true
    if image is not None:
        body["seen"] = _network_view(pipeline, image)
    return body


def _image_step(pipeline: dict[str, Any]) -> dict[str, Any] | None:
    """How the pipeline decodes an image: {channels, size, max_pixels}; None for other input."""
    step = next((s for s in pipeline["steps"] if s["op"] == "decode_image"), None)
    return step or pipeline["input"].get("image")


def _network_view(pipeline: dict[str, Any], image: bytes) -> dict[str, Any] | None:
    """The upload as the network's input has it (grey or colour, resized), before standardising:
    {"png": a data URL, "size": [H, W], "channels", "mean": brightness 0..1}."""
    import base64
    import io

    import numpy as np
    from PIL import Image

    from engine.export.predict_template import decode_image

    step = _image_step(pipeline)
    if step is None:
        return None
    pixels = decode_image(image, step["channels"], step["size"], step["max_pixels"])  # (C, H, W)
    grey = pixels[0] if pixels.shape[0] == 1 else pixels.transpose(1, 2, 0)
    buffer = io.BytesIO()
    Image.fromarray(np.round(grey * 255).astype(np.uint8)).save(buffer, format="PNG")
    return {
        "png": "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii"),
        "size": list(step["size"]),
        "channels": int(step["channels"]),
        "mean": round(float(pixels.mean()), 4),
    }


def _takes(pipeline: dict[str, Any]) -> str:
    inp = pipeline["input"]
    if inp["kind"] == "table":
        names = [c["name"] for c in inp["columns"]]
        shown = ", ".join(names[:10]) + (", ..." if len(names) > 10 else "")
        return f"a row of named values ({shown})"
    return f"numbers of shape {pipeline['output']['shape']}"


def _one(test: Any, index: int) -> Any:
    """The index-th sample of a lazily decoded split, as a batch of one."""
    seen = 0
    for xb, _ in test.batches(64, augment=False):
        if seen + len(xb) > index:
            yield xb[index - seen : index - seen + 1]
            return
        seen += len(xb)


def run_sample_rows(*, run: Run, split: str) -> dict[str, Any]:
    """Which rows of the user's own file (or archive entries) a split holds, in the split's order.

    {"split", "count", "rows": [source position], "file_rows"?: [CSV spreadsheet row, header = 1],
    "entries"?: [archive entry name]}
    """
    from engine.data import DataError
    from engine.data.samples import SPLITS, split_rows

    if split not in SPLITS:
        raise DomainError(
            "invalid", f"No split {split!r}; one of {', '.join(SPLITS)}.", field="split"
        )
    try:
        rows = split_rows(run_data_recipe(run))
    except DataError as exc:
        raise Conflict("dataset_unreadable", f"The run's dataset cannot be read: {exc}") from None
    part = [int(i) for i in rows.rows[split]]
    body: dict[str, Any] = {"split": split, "count": len(part), "rows": part}
    if rows.first_row is not None:
        body["file_rows"] = [i + rows.first_row for i in part]
    if rows.entries is not None:
        body["entries"] = [rows.entries[i] for i in part]
    return body


def run_sample(*, run: Run, split: str, index: int) -> dict[str, Any]:
    """Sample `index` of a split as uploaded: {"kind": "table", "values", ...} or {"kind": "image", "png"}."""
    from engine.data import DataError
    from engine.data.samples import raw_sample

    try:
        return raw_sample(run_data_recipe(run), split, index)
    except DataError as exc:
        if exc.field in ("split", "index"):
            raise DomainError("invalid", exc.message, field=exc.field) from None
        raise Conflict("dataset_unreadable", f"The run's dataset cannot be read: {exc}") from None
