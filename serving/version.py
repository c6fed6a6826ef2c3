"""One registry version folder loaded: raw named inputs -> the exported pipeline -> the network.

The preprocessing is the export's own code (engine/export/predict_template.py, the `predict.py`
every export carries): `prepare` turns raw rows into the tensor, `answer` turns the network's
output into labels and probabilities. Nothing here knows HTTP or Django.
"""

from __future__ import annotations

import base64
import binascii
import importlib.util
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from engine.export.predict_template import InputError, answer, prepare


class BadInput(ValueError):
    """A request the version cannot take; `field` names the input (column) at fault."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def read_pipeline(folder: Path) -> dict[str, Any]:
    """The version's preprocessing: preprocess.json, else the pipeline inside data.json."""
    path = folder / "preprocess.json"
    if path.is_file():
        return json.loads(path.read_text(encoding="utf-8"))
    data = folder / "data.json"
    if data.is_file():
        pipeline = json.loads(data.read_text(encoding="utf-8")).get("pipeline")
        if pipeline:
            return dict(pipeline)
    raise FileNotFoundError(f"{folder} has neither preprocess.json nor a pipeline in data.json")


@dataclass
class Version:
    """A loaded version: the network (eval mode), its pipeline and what its inputs look like."""

    folder: Path
    network: torch.nn.Module
    pipeline: dict[str, Any]
    kind: str  # "table", "image" or "tensor"
    columns: list[dict[str, Any]] = field(default_factory=list)  # table: [{name, type}]

    @property
    def classes(self) -> list[str]:
        return list(self.pipeline.get("classes") or [])

    @property
    def classification(self) -> bool:
        return self.pipeline.get("task") == "classification"

    def input_types(self) -> list[dict[str, Any]]:
        """OIP v2 metadata of the inputs: one per raw column (FP32 or BYTES), or one tensor."""
        if self.kind == "table":
            return [{"name": c["name"], "datatype": "FP32" if c.get("type") == "numeric" else "BYTES",
                     "shape": [-1]} for c in self.columns]
        if self.kind == "image":
            return [{"name": "image", "datatype": "BYTES", "shape": [-1]}]
        shape = list(self.pipeline["output"]["shape"])
        return [{"name": "input", "datatype": "FP32", "shape": [-1, *shape]}]

    def output_types(self) -> list[dict[str, Any]]:
        if self.classification:
            return [{"name": "label", "datatype": "BYTES", "shape": [-1]},
                    # OIP's optional tensor parameters: the columns' class names (the try-it form's rows).
                    {"name": "probabilities", "datatype": "FP32", "shape": [-1, len(self.classes)],
                     "parameters": {"classes": self.classes}}]
        return [{"name": "value", "datatype": "FP32", "shape": [-1, -1]}]

    def samples(self, inputs: list[dict[str, Any]]) -> list[Any]:
        """OIP v2 inputs ([{name, datatype, shape, data}]) -> one raw sample per row, as `prepare` takes.

        BadInput names the input that does not fit.
        """
        if self.kind == "table":
            return _table_rows(self.columns, inputs)
        if len(inputs) != 1:
            raise BadInput("inputs", f"this model takes one input, {self.input_types()[0]['name']!r}")
        item = inputs[0]
        name = str(item.get("name") or "input")
        data = item.get("data")
        if not isinstance(data, list) or not data:
            raise BadInput(name, "data must be a non-empty list")
        if item.get("datatype") == "BYTES":
            return [_image_bytes(name, d) for d in data]
        shape = list(self.pipeline["output"]["shape"])
        try:
            arr = np.asarray(data, dtype=np.float32).reshape(-1, *shape)
        except (TypeError, ValueError):
            raise BadInput(name, f"expected numbers of shape [n, {', '.join(map(str, shape))}]") from None
        return list(arr)

    def prepare(self, samples: list[Any]) -> np.ndarray:
        """Raw samples -> the network's input batch (the export's pipeline); BadInput on a bad value."""
        raw: Any = np.stack(samples) if self.kind == "tensor" else samples
        try:
            return prepare(self.pipeline, raw)
        except InputError as exc:
            raise BadInput(exc.field, exc.message) from None

    def run(self, x: np.ndarray) -> list[dict[str, Any]]:
        """The network on a prepared batch -> one answer per sample (prediction, probabilities)."""
        with torch.no_grad():
            out = self.network(torch.from_numpy(x))
        return answer(self.pipeline, out)


def _image_bytes(name: str, value: Any) -> bytes:
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    if isinstance(value, str):
        try:
            return base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raise BadInput(name, "an image is sent as base64 text of its encoded bytes") from None
    raise BadInput(name, "expected an encoded image (base64 text)")


def _table_rows(columns: list[dict[str, Any]], inputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    by_name: dict[str, list[Any]] = {}
    for item in inputs:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise BadInput("inputs", "each input is an object with a name")
        data = item.get("data")
        if not isinstance(data, list):
            raise BadInput(item["name"], "data must be a list, one value per row")
        by_name[item["name"]] = data
    known = {c["name"] for c in columns}
    unknown = [n for n in by_name if n not in known]
    if unknown:
        raise BadInput(unknown[0], f"not a column of this model; its columns: {', '.join(sorted(known))}")
    missing = [c["name"] for c in columns if c["name"] not in by_name]
    if missing:
        raise BadInput(missing[0], "this column is missing from the inputs")
    counts = {len(v) for v in by_name.values()}
    if len(counts) != 1 or 0 in counts:
        name = next(n for n, v in by_name.items() if len(v) != max(counts) or not v)
        raise BadInput(name, f"every input needs the same, non-zero number of rows ({sorted(counts)})")
    n = counts.pop()
    return [{name: values[i] for name, values in by_name.items()} for i in range(n)]


def load_version(folder: str | Path) -> Version:
    """Load a version (or export) folder: model.py + model.safetensors + the preprocessing."""
    from safetensors.torch import load_file

    folder = Path(folder)
    pipeline = read_pipeline(folder)
    spec = importlib.util.spec_from_file_location(f"netloom_served_{abs(hash(str(folder)))}", folder / "model.py")
    if spec is None or spec.loader is None:
        raise FileNotFoundError(f"{folder} has no model.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    network = getattr(module, pipeline.get("class_name", "Net"))()
    network.load_state_dict(load_file(str(folder / "model.safetensors")))
    network.eval()
    kind = pipeline["input"]["kind"]
    if kind not in ("table", "image"):
        kind = "tensor"
    columns = [{"name": c["name"], "type": c.get("type", "numeric")} for c in pipeline["input"].get("columns", [])]
    return Version(folder=folder, network=network, pipeline=pipeline, kind=kind, columns=columns)
