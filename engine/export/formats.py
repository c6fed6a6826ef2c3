"""Formats for other runtimes, built from an export folder: `.pt2` (torch.export), int8 weights
(torchao) and AOTInductor; each measured against the fp32 model on the test split.

- **pt2** (`model.pt2`): the ExportedProgram of the fp32 model, batch dimension dynamic
  (`torch.export.Dim`), written by `torch.export.save`. Runs wherever torch runs:
  `torch.export.load(path).module()(x)`.
- **int8** (`model.int8.pt2`): the same, after torchao's `quantize_(model,
  Int8WeightOnlyConfig())` (every `nn.Linear`'s weight as int8 with a per-row scale) and
  `unwrap_tensor_subclass`, so the int8 weights are plain tensors of the program and the
  dequantisation is part of its graph. Load it with torchao imported (its ops are registered on
  import).
- **aoti** (`model.aoti.pt2`): the fp32 program compiled by AOTInductor into a shared library
  for this machine's CPU (`torch._inductor.aoti_load_package`). A compiler run: minutes on a busy
  machine. Native code: load only files you built.

Nothing is pickled. `torch.export.save` writes a zip of its own format (the graph as JSON, each
plain tensor as raw bytes described in `model_weights_config.json`); it would pickle a tensor
subclass (`use_pickle`), which is why the int8 weights are unwrapped first, and it keeps the
example inputs as a `torch.save` file that `torch.export.load` reads with `weights_only=True`
(falling back to a full unpickle if that fails). `pt2_check` refuses an archive with any pickled
weight or constant and reads its example inputs with `weights_only=True` first, so `load_pt2`
never reaches that fallback.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import statistics
import time
import warnings
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch

from engine.atomic import atomic_file

__all__ = [
    "FORMAT_FILES",
    "FORMATS",
    "FormatError",
    "build_format",
    "build_formats",
    "load_format",
    "load_pt2",
    "pt2_check",
]

FORMAT_FILES = {"pt2": "model.pt2", "int8": "model.int8.pt2", "aoti": "model.aoti.pt2"}
FORMATS = tuple(FORMAT_FILES)
MAX_BATCH = 1 << 16
LATENCY_BATCHES = {"b1": 1, "b64": 64}


class FormatError(ValueError):
    """A format that cannot be built or read."""


def _example_inputs(spec: Any, batch: int) -> tuple[torch.Tensor, ...]:
    return tuple(
        torch.zeros((batch, *inp.shape), dtype=torch.int64 if inp.dtype == "int64" else torch.float32)
        for inp in spec.inputs
    )


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """torch.export and torchao warn freely (and torchao's CUDA kernels fail to load on a CPU
    build); what matters is in the format's note."""
    sink = io.StringIO()
    with warnings.catch_warnings(), contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        warnings.simplefilter("ignore")
        yield


def _export(model: torch.nn.Module, spec: Any) -> torch.export.ExportedProgram:
    """The program of `model` with a dynamic batch dimension on every input."""
    args = _example_inputs(spec, batch=2)
    batch = torch.export.Dim("batch", min=1, max=MAX_BATCH)
    with torch.no_grad():
        # The example inputs (zeros) are kept in the archive: nothing of the data.
        return torch.export.export(model, args, dynamic_shapes=tuple({0: batch} for _ in args))


def _int8_model(model: torch.nn.Module) -> torch.nn.Module:
    from torchao.quantization import Int8WeightOnlyConfig, quantize_
    from torchao.utils import unwrap_tensor_subclass

    quantized = copy.deepcopy(model).eval()
    quantize_(quantized, Int8WeightOnlyConfig())
    # Plain int8 tensors (parametrizations) instead of a tensor subclass, which torch.export.save
    # would pickle.
    unwrap_tensor_subclass(quantized)
    return quantized


def _save_program(program: torch.export.ExportedProgram, path: Path) -> None:
    with atomic_file(path) as tmp:
        staged = tmp.with_name(tmp.name + ".pt2")  # torch.export.save warns about any other name
        try:
            torch.export.save(program, str(staged))
            staged.replace(tmp)
        finally:
            staged.unlink(missing_ok=True)
    pt2_check(path)


def build_format(fmt: str, model: torch.nn.Module, spec: Any, folder: Path | str) -> Path:
    """Write format `fmt` of the fp32 `model` into `folder`; returns the file."""
    if fmt not in FORMAT_FILES:
        raise FormatError(f"unknown format {fmt!r}; one of {', '.join(FORMATS)}")
    path = Path(folder) / FORMAT_FILES[fmt]
    model = copy.deepcopy(model).to("cpu").float().eval()
    with _quiet():
        if fmt == "pt2":
            _save_program(_export(model, spec), path)
        elif fmt == "int8":
            _save_program(_export(_int8_model(model), spec), path)
        else:
            with atomic_file(path) as tmp:
                # aoti_compile_and_package wants a name ending .pt2
                staged = tmp.with_name(tmp.name + ".pt2")
                try:
                    torch._inductor.aoti_compile_and_package(_export(model, spec), package_path=str(staged))
                    staged.replace(tmp)
                finally:
                    staged.unlink(missing_ok=True)
    return path


def pt2_check(path: Path | str) -> None:
    """Refuse a `.pt2` archive of torch.export that would unpickle anything: a weight or constant
    stored with `use_pickle`, or example inputs that `torch.load(weights_only=True)` refuses."""
    try:
        archive = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile) as exc:
        raise FormatError(f"{Path(path).name} is not a .pt2 archive: {exc}") from None
    with archive:
        for name in archive.namelist():
            if name.endswith(("_weights_config.json", "_constants_config.json")):
                config = json.loads(archive.read(name)).get("config", {})
                pickled = sorted(k for k, v in config.items() if v.get("use_pickle"))
                if pickled:
                    raise FormatError(f"{Path(path).name} pickles {', '.join(pickled)}; not loaded")
            elif "/data/sample_inputs/" in name:
                try:
                    torch.load(io.BytesIO(archive.read(name)), weights_only=True)
                except Exception as exc:
                    raise FormatError(f"{Path(path).name}: its example inputs are not plain tensors "
                                      f"({type(exc).__name__}); not loaded") from None


def load_pt2(path: Path | str) -> torch.nn.Module:
    """The module of a `.pt2` ExportedProgram (pt2 or int8), after `pt2_check`."""
    pt2_check(path)
    with _quiet():
        if Path(path).name == FORMAT_FILES["int8"]:
            import torchao  # noqa: F401 - registers the ops of the int8 graph
        return torch.export.load(str(path)).module()


def load_format(fmt: str, path: Path | str) -> Callable[..., Any]:
    """A callable running format `fmt` from its file."""
    if fmt == "aoti":
        with _quiet():
            return torch._inductor.aoti_load_package(str(path))
    return load_pt2(path)


@torch.inference_mode()
def _outputs(run: Callable[..., Any], data: Any, batch_size: int = 512) -> tuple[torch.Tensor, torch.Tensor]:
    outs, targets = [], []
    for xb, yb in data.batches(batch_size, augment=False):
        out = run(xb)
        out = out[0] if isinstance(out, (tuple, list)) else out
        outs.append(out.float().reshape(len(out), -1))
        targets.append(yb)
    if not outs:
        raise FormatError("the test split is empty: nothing to measure on")
    return torch.cat(outs), torch.cat(targets)


def _metric(outputs: torch.Tensor, target: torch.Tensor, task: str) -> tuple[str, float]:
    """(name, value) of the task's headline metric: accuracy, or RMSE for a regression."""
    if task == "classification":
        if outputs.shape[1] == 1:  # one logit for two classes
            predicted = (outputs[:, 0] > 0).long()
        else:
            predicted = outputs.argmax(dim=1)
        return "accuracy", float((predicted == target.reshape(-1).long()).float().mean())
    return "rmse", float(((outputs - target.float().reshape(outputs.shape)) ** 2).mean().sqrt())


@torch.inference_mode()
def _latency_ms(run: Callable[..., Any], args: tuple[torch.Tensor, ...], repeats: int) -> float:
    """Median milliseconds of one call, after a few warm-up calls."""
    for _ in range(max(3, repeats // 10)):
        run(*args)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run(*args)
        times.append(time.perf_counter() - start)
    return round(statistics.median(times) * 1e3, 4)


def _sample_args(data: Any, spec: Any, batch: int) -> tuple[torch.Tensor, ...]:
    """`batch` rows of the split (repeated if it has fewer): what a caller would send."""
    xb, _ = next(iter(data.batches(batch, augment=False)))
    if len(xb) < batch:
        xb = xb.repeat((batch + len(xb) - 1) // len(xb), *([1] * (xb.dim() - 1)))[:batch]
    return (xb,) if len(spec.inputs) == 1 else _example_inputs(spec, batch)


def _latencies(run: Callable[..., Any], data: Any, spec: Any, repeats: int) -> dict[str, float]:
    return {key: _latency_ms(run, _sample_args(data, spec, n), repeats)
            for key, n in LATENCY_BATCHES.items()}


@contextlib.contextmanager
def _threads(n: int) -> Iterator[None]:
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def build_formats(
    model: torch.nn.Module,
    spec: Any,
    folder: Path | str,
    formats: list[str] | tuple[str, ...],
    *,
    test: Any,
    task: str,
    repeats: int = 200,
    threads: int = 1,
    progress: Callable[[float], None] | None = None,
) -> dict[str, dict[str, Any]]:
    """Build each of `formats` into `folder` and measure it against the fp32 `model`.

    Returns {fmt: {"file", "size", "metric", "value", "fp32_value", "accuracy_delta",
    "max_abs_diff", "latency_ms": {"b1", "b64"}, "fp32_latency_ms": {...}, "threads"}}, or
    {fmt: {"error"}} for a format the graph does not allow (another format is still built).
    `accuracy_delta` is the format's metric minus fp32's (accuracy, or RMSE for a regression);
    `max_abs_diff` the largest difference of any output on the test split.
    """
    unknown = [f for f in formats if f not in FORMAT_FILES]
    if unknown:
        raise FormatError(f"unknown format {unknown[0]!r}; one of {', '.join(FORMATS)}")
    model = copy.deepcopy(model).to("cpu").float().eval()
    tick = progress or (lambda fraction: None)
    with _threads(threads):
        reference, target = _outputs(model, test)
        metric, fp32_value = _metric(reference, target, task)
        fp32_latency = _latencies(model, test, spec, repeats)
        tick(0.1)
        results: dict[str, dict[str, Any]] = {}
        for i, fmt in enumerate(formats):
            try:
                path = build_format(fmt, model, spec, folder)
                run = load_format(fmt, path)
                outputs, _ = _outputs(run, test)
                value = _metric(outputs, target, task)[1]
                results[fmt] = {
                    "file": path.name,
                    "size": path.stat().st_size,
                    "metric": metric,
                    "value": round(value, 6),
                    "fp32_value": round(fp32_value, 6),
                    "accuracy_delta": round(value - fp32_value, 6),
                    "max_abs_diff": float((outputs - reference).abs().max()),
                    "rows": len(outputs),
                    "latency_ms": _latencies(run, test, spec, repeats),
                    "fp32_latency_ms": fp32_latency,
                    "threads": threads,
                    "torch": torch.__version__.split("+")[0],
                }
            except Exception as exc:  # a graph one format cannot take still gets the others
                (Path(folder) / FORMAT_FILES[fmt]).unlink(missing_ok=True)
                first = (str(exc).strip().splitlines() or [""])[0][:300]
                results[fmt] = {"error": f"{type(exc).__name__}: {first}"}
            tick(0.1 + 0.9 * (i + 1) / len(formats))
    return results
