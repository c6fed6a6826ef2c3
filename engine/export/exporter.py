"""The export directory: weights, source, spec, config, metrics, data stats and ONNX."""

from __future__ import annotations

import contextlib
import copy
import io
import json
import os
import re
import uuid
import warnings
import zipfile
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file

from engine.atomic import atomic_file, write_bytes_atomic
from engine.train.checkpoint import state_dict_for_save

__all__ = [
    "EXPORT_FORMAT_VERSION",
    "ExportError",
    "export_dir",
    "export_onnx",
    "load_exported",
    "read_export_manifest",
    "zip_export",
]

EXPORT_FORMAT_VERSION = 1
_ZIP_SKIP_DIRS = {"checkpoints"}
_ANSI = re.compile(r"\x1b\[[0-9;]*m")

_README = """\
# {name}

Exported by Netloom (export format {version}).

```python
import torch
from safetensors.torch import load_file
from model import {class_name}

model = {class_name}()
model.load_state_dict(load_file("model.safetensors"))
model.eval()
with torch.no_grad():
    out = model({example_args})  # {input_shapes}
```

{predict_section}`data.json` has the class names (`classes`, in output order), the normalisation statistics
and, for a CSV, how empty cells were filled (`missing_values`).
`spec.json` is the graph, `config.json` the training config, `metrics.json` the final
metrics{onnx_line}
"""

_README_PREDICT = """\
The network takes prepared tensors. `predict.py` takes the raw input the way you have it
(a CSV with the columns you uploaded, an image, the raw numbers) and applies
`preprocess.json`: every step between the raw input and the tensor, in order, fitted on the
training rows (column selection, missing-value fills, category vocabularies, built-in scaling,
image decoding and resizing, normalisation). It needs numpy, torch and safetensors (Pillow
for images) and nothing of Netloom:

```
python predict.py {example_input}        # prints each prediction with its class probabilities
python predict.py {example_input} --json
```

```python
from predict import load, predict

model = load()            # this folder
predict(model, {example_raw})
```

"""

_PREDICT_TEMPLATE = Path(__file__).with_name("predict_template.py")


class ExportError(ValueError):
    """An export directory that cannot be read or written."""


def _write_json(path: Path, obj: Any) -> None:
    write_bytes_atomic(path, (json.dumps(obj, indent=2, sort_keys=False) + "\n").encode("utf-8"))


def _as_spec(spec: Any) -> Any:
    from engine.spec import parse_spec

    return parse_spec(spec) if not hasattr(spec, "inputs") else spec


def _spec_dict(spec: Any) -> dict[str, Any]:
    return spec.model_dump(mode="json", exclude_none=True)


def _json_safe(obj: Any) -> Any:
    if isinstance(obj, Mapping):
        return {str(k): _json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_json_safe(v) for v in obj]
    if isinstance(obj, torch.Tensor):
        return obj.tolist()
    if hasattr(obj, "item") and callable(obj.item):
        return obj.item()
    return obj


def _config_dict(config: Any) -> dict[str, Any] | None:
    if config is None:
        return None
    if hasattr(config, "model_dump"):
        return config.model_dump(mode="json")
    return dict(config)


def _without_paths(data: dict[str, Any]) -> dict[str, Any]:
    """data.json without the server's file paths: the source file's name only."""
    source = (data.get("recipe") or {}).get("source")
    if isinstance(source, dict):
        source = dict(source)
        if source.get("path"):
            source["path"] = Path(str(source["path"])).name
        source.pop("table", None)
        data["recipe"] = {**data["recipe"], "source": source}
    return data


def _example(pipeline: dict[str, Any]) -> tuple[str, str]:
    """(command-line input, a raw value for the Python example) for the README."""
    kind = (pipeline.get("input") or {}).get("kind")
    if kind == "table":
        names = [c["name"] for c in pipeline["input"]["columns"]][:3]
        row = ", ".join(f"{json.dumps(n)}: ..." for n in names)
        return "input.csv", "{" + row + (", ...}" if len(pipeline["input"]["columns"]) > 3 else "}")
    if kind == "image" or (pipeline.get("input") or {}).get("image"):
        return "image.png", 'open("image.png", "rb").read()'
    shape = (pipeline.get("output") or {}).get("shape", [])
    return "values.json", f"numbers  # shape {shape} or (N, {', '.join(map(str, shape))})"


def _data_dict(data_info: Any) -> dict[str, Any] | None:
    if data_info is None:
        return None
    if hasattr(data_info, "to_json"):
        data = data_info.to_json()
        # A CSV's missing-value rules with the fills fitted on the train rows, per column, so
        # new raw rows are prepared as the training rows were (before the normalisation).
        missing = ((data.get("recipe") or {}).get("source") or {}).get("missing")
        if missing:
            data["missing_values"] = missing
        return _without_paths(data)
    if hasattr(data_info, "model_dump"):
        return data_info.model_dump(mode="json")
    return dict(data_info)


def _example_inputs(spec: Any, batch: int = 1) -> tuple[torch.Tensor, ...]:
    tensors = []
    for inp in spec.inputs:
        dtype = torch.int64 if inp.dtype == "int64" else torch.float32
        tensors.append(torch.zeros((batch, *inp.shape), dtype=dtype))
    return tuple(tensors)


def export_onnx(model: torch.nn.Module, spec: Any, path: Path) -> dict[str, Any]:
    """Write `model.onnx` if the graph exports and checks; never raises, returns a note."""
    import onnx

    spec = _as_spec(spec)
    path = Path(path)
    cpu_model = copy.deepcopy(model).to("cpu").float().eval()
    args = _example_inputs(spec, batch=2)
    input_names = [i.id for i in spec.inputs]
    output_names = list(spec.outputs)
    attempts: list[str] = []
    tmp = path.with_name(f".{path.name}.tmp-{uuid.uuid4().hex[:8]}")
    for exporter in ("torchscript", "dynamo"):
        try:
            # The exporters print progress and warn freely; the note below says what matters.
            quiet = io.StringIO()
            with warnings.catch_warnings(), contextlib.redirect_stdout(quiet), \
                    contextlib.redirect_stderr(quiet):
                warnings.simplefilter("ignore")
                if exporter == "torchscript":
                    torch.onnx.export(
                        cpu_model, args, str(tmp), dynamo=False, input_names=input_names,
                        output_names=output_names, opset_version=17,
                        dynamic_axes={n: {0: "batch"} for n in input_names + output_names},
                    )
                else:
                    batch = torch.export.Dim("batch", min=1, max=1 << 20)
                    torch.onnx.export(
                        cpu_model, args, str(tmp), dynamo=True, input_names=input_names,
                        output_names=output_names, external_data=False,
                        dynamic_shapes=tuple({0: batch} for _ in args),
                    )
            onnx.checker.check_model(str(tmp), full_check=True)
            os.replace(tmp, path)
            note: dict[str, Any] = {"exported": True, "exporter": exporter, "file": path.name}
            if attempts:
                note["earlier_attempts"] = attempts
            note.update(_onnx_check(cpu_model, path, args))
            return note
        except Exception as exc:  # any exporter failure means "no ONNX", never a failed export
            first_line = _ANSI.sub("", str(exc)).strip().splitlines()[:1] or [""]
            attempts.append(f"{exporter}: {type(exc).__name__}: {first_line[0][:300]}")
            tmp.unlink(missing_ok=True)
            for extra in tmp.parent.glob(f"{tmp.name}*"):
                extra.unlink(missing_ok=True)
    return {"exported": False, "note": "this graph could not be exported to ONNX", "errors": attempts}


def _onnx_check(model: torch.nn.Module, path: Path, args: tuple[torch.Tensor, ...]) -> dict[str, Any]:
    """Compare ONNX Runtime with torch on a random batch, when onnxruntime is installed."""
    try:
        import onnxruntime as ort
    except ImportError:
        return {}
    gen = torch.Generator().manual_seed(0)
    feeds = [
        torch.randn(a.shape, generator=gen) if a.is_floating_point() else a for a in args
    ]
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    got = session.run(None, {n: t.numpy() for n, t in zip(names, feeds, strict=True)})
    with torch.no_grad():
        want = model(*feeds)
    want = (want,) if isinstance(want, torch.Tensor) else tuple(want)
    diff = max(
        float((torch.from_numpy(g) - w.float()).abs().max()) for g, w in zip(got, want, strict=True)
    )
    return {"onnxruntime_max_abs_diff": diff}


def export_dir(
    model: torch.nn.Module,
    spec: Any,
    config: Any,
    metrics: Mapping[str, Any] | None,
    out_dir: Path | str,
    *,
    data_info: Any = None,
    onnx: bool = True,
    class_name: str = "Net",
) -> Path:
    """Write everything a user needs to run or fine-tune the model outside Netloom.

    Files: model.safetensors (spec + format version in its metadata), model.py, spec.json,
    config.json, metrics.json, data.json (when `data_info` is given; no server path in it),
    preprocess.json + predict.py (when `data_info` has a pipeline: raw input -> prediction),
    model.onnx (when the graph exports), README.md and export.json (the manifest).
    """
    from engine.codegen import codegen

    spec = _as_spec(spec)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    spec_json = _spec_dict(spec)
    spec_text = json.dumps(spec_json, sort_keys=True, separators=(",", ":"))
    weights = state_dict_for_save(model)
    metadata = {
        "format": "pt",
        "netloom_format_version": str(EXPORT_FORMAT_VERSION),
        "netloom_spec": spec_text,
    }
    buf_path = out / "model.safetensors"
    with atomic_file(buf_path) as tmp:
        save_file(weights, str(tmp), metadata=metadata)
    write_bytes_atomic(out / "model.py", codegen(spec, class_name=class_name).encode("utf-8"))
    _write_json(out / "spec.json", spec_json)
    config_json = _config_dict(config)
    if config_json is not None:
        _write_json(out / "config.json", config_json)
    _write_json(out / "metrics.json", _json_safe(dict(metrics or {})))
    data_json = _data_dict(data_info)
    if data_json is not None:
        _write_json(out / "data.json", data_json)
    pipeline = dict(getattr(data_info, "pipeline", None) or (data_json or {}).get("pipeline") or {})
    if pipeline:
        pipeline["class_name"] = class_name
        _write_json(out / "preprocess.json", pipeline)
        write_bytes_atomic(out / "predict.py", _PREDICT_TEMPLATE.read_bytes())
    onnx_note: dict[str, Any] = {"exported": False, "note": "ONNX export was not asked for"}
    if onnx:
        onnx_note = export_onnx(model, spec, out / "model.onnx")
    example_args = ", ".join(
        f"torch.zeros(1, {', '.join(str(s) for s in i.shape)}"
        + (", dtype=torch.long)" if i.dtype == "int64" else ")")
        for i in spec.inputs
    )
    readme = _README.format(
        name=class_name,
        version=EXPORT_FORMAT_VERSION,
        class_name=class_name,
        example_args=example_args,
        input_shapes="; ".join(f"{i.id}: (batch, {', '.join(map(str, i.shape))})" for i in spec.inputs),
        onnx_line=", `model.onnx` the same network for ONNX Runtime." if onnx_note.get("exported") else ".",
        predict_section=_README_PREDICT.format(
            example_input=_example(pipeline)[0], example_raw=_example(pipeline)[1]
        ) if pipeline else "",
    )
    write_bytes_atomic(out / "README.md", readme.encode("utf-8"))
    files = sorted(
        p.name for p in out.iterdir() if p.is_file() and not p.name.startswith(".")
    )
    manifest = {
        "format_version": EXPORT_FORMAT_VERSION,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "torch_version": torch.__version__.split("+")[0],
        "class_name": class_name,
        "parameters": int(sum(p.numel() for p in model.parameters())),
        "files": sorted(set(files) | {"export.json"}),
        "onnx": onnx_note,
    }
    _write_json(out / "export.json", manifest)
    return out


def read_export_manifest(directory: Path | str) -> dict[str, Any]:
    """The export.json of an export directory."""
    path = Path(directory) / "export.json"
    if not path.is_file():
        raise ExportError(f"{directory} is not an export directory: export.json is missing")
    return json.loads(path.read_text(encoding="utf-8"))


def load_exported(directory: Path | str) -> tuple[Any, torch.nn.Module]:
    """Rebuild `(spec, model)` from an export directory, to predict or to keep training."""
    from engine.build import build
    from engine.spec import parse_spec

    directory = Path(directory)
    weights_path = directory / "model.safetensors"
    if not weights_path.is_file():
        raise ExportError(f"{directory} has no model.safetensors")
    with safe_open(str(weights_path), framework="pt") as f:
        metadata = f.metadata() or {}
    version = metadata.get("netloom_format_version")
    if version is not None and int(version) > EXPORT_FORMAT_VERSION:
        raise ExportError(
            f"{weights_path} has export format {version}; this engine reads up to "
            f"{EXPORT_FORMAT_VERSION}"
        )
    spec_file = directory / "spec.json"
    if spec_file.is_file():
        spec = parse_spec(spec_file.read_text(encoding="utf-8"))
    elif "netloom_spec" in metadata:
        spec = parse_spec(metadata["netloom_spec"])
    else:
        raise ExportError(f"{directory} has neither spec.json nor a spec in the weights' metadata")
    model = build(spec, seed=0)
    state = load_file(str(weights_path), device="cpu")
    try:
        model.load_state_dict(state)
    except RuntimeError as exc:
        raise ExportError(
            f"model.safetensors does not fit spec.json: {str(exc).splitlines()[0]}"
        ) from None
    model.eval()
    return spec, model


def zip_export(directory: Path | str, dest: Path | str | None = None) -> bytes | Path:
    """Zip an export directory (checkpoints left out): bytes, or the path when `dest` is given."""
    directory = Path(directory)
    read_export_manifest(directory)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(directory.rglob("*")):
            rel = path.relative_to(directory)
            if not path.is_file() or rel.parts[0] in _ZIP_SKIP_DIRS:
                continue
            if any(part.startswith(".") for part in rel.parts):
                continue
            zf.write(path, arcname=rel.as_posix())
    data = buf.getvalue()
    if dest is None:
        return data
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    write_bytes_atomic(dest, data)
    return dest
