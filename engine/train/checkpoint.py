"""Checkpoints as directories of safetensors + JSON; written atomically, never pickled.

Layout of one checkpoint directory:

    model.safetensors      model state dict (parameter names as the spec's node ids)
    optimizer.safetensors  every tensor of the optimizer state, keys `optimizer/state/3/exp_avg`
    rng.safetensors        torch CPU RNG, the shuffle generator, CUDA RNGs (uint8 tensors)
    state.json             counters, config, spec, optimizer/scheduler/scaler structure, RNG of
                           Python and NumPy, trainer bookkeeping (best metric, patience)
"""

from __future__ import annotations

import json
import os
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import load_file, save

from engine.atomic import atomic_dir
from engine.train.metrics import float_metrics

__all__ = [
    "FORMAT_VERSION",
    "Checkpoint",
    "save_checkpoint",
    "checkpoint_files",
    "write_checkpoint",
    "load_checkpoint",
    "latest_checkpoint",
    "capture_rng",
    "restore_rng",
    "atomic_dir",
    "state_dict_for_save",
    "checkpoint_metrics",
    "checkpoint_step",
]

FORMAT_VERSION = 1
_TENSOR = "__tensor__"
_TUPLE = "__tuple__"
_INT_KEYS = "__int_keys__"


@dataclass
class Checkpoint:
    """A loaded checkpoint; `state` is state.json, the rest are ready for `load_state_dict`."""

    path: Path
    state: dict[str, Any]
    model: dict[str, torch.Tensor]
    optimizer: dict[str, Any] | None = None
    scheduler: dict[str, Any] | None = None
    scaler: dict[str, Any] | None = None
    rng: dict[str, Any] = field(default_factory=dict)

    @property
    def step(self) -> int:
        """Completed optimizer steps."""
        return int(self.state["step"])

    @property
    def epoch(self) -> int:
        """Completed epochs."""
        return int(self.state["epoch"])


def _split_tensors(obj: Any, prefix: str, tensors: dict[str, torch.Tensor]) -> Any:
    """Replace tensors by markers (collected into `tensors`); keep the rest JSON-able."""
    if isinstance(obj, torch.Tensor):
        key = prefix
        tensors[key] = obj.detach().to("cpu").contiguous().clone()
        return {_TENSOR: key}
    if isinstance(obj, dict):
        if obj and all(isinstance(k, int) for k in obj):
            return {
                _INT_KEYS: {str(k): _split_tensors(v, f"{prefix}/{k}", tensors) for k, v in obj.items()}
            }
        return {str(k): _split_tensors(v, f"{prefix}/{k}", tensors) for k, v in obj.items()}
    if isinstance(obj, tuple):
        return {_TUPLE: [_split_tensors(v, f"{prefix}/{i}", tensors) for i, v in enumerate(obj)]}
    if isinstance(obj, list):
        return [_split_tensors(v, f"{prefix}/{i}", tensors) for i, v in enumerate(obj)]
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if isinstance(obj, (np.integer, np.floating)):
        return obj.item()
    raise TypeError(f"cannot store a {type(obj).__name__} at {prefix!r} in a checkpoint")


def _join_tensors(obj: Any, tensors: dict[str, torch.Tensor]) -> Any:
    """Inverse of `_split_tensors`."""
    if isinstance(obj, dict):
        if _TENSOR in obj and len(obj) == 1:
            return tensors[obj[_TENSOR]]
        if _TUPLE in obj and len(obj) == 1:
            return tuple(_join_tensors(v, tensors) for v in obj[_TUPLE])
        if _INT_KEYS in obj and len(obj) == 1:
            return {int(k): _join_tensors(v, tensors) for k, v in obj[_INT_KEYS].items()}
        return {k: _join_tensors(v, tensors) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_join_tensors(v, tensors) for v in obj]
    return obj


def _sharded(module: torch.nn.Module) -> bool:
    from torch.distributed.tensor import DTensor

    return any(isinstance(param, DTensor) for param in module.parameters())


def full_state_dict(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The module's state dict with whole tensors: a sharded (FSDP) module's gathered on every rank
    by torch.distributed.checkpoint's state-dict API (a collective: every rank calls it)."""
    if not _sharded(module):
        return module.state_dict()
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

    return get_model_state_dict(module, options=StateDictOptions(full_state_dict=True))


def full_optimizer_state(optimizer: torch.optim.Optimizer) -> dict[str, Any]:
    """`optimizer.state_dict()` with each sharded (DTensor) state gathered whole, keyed by parameter
    index as a 1-process run's: a sharded run's checkpoint resumes anywhere. Collective for FSDP."""
    from torch.distributed.tensor import DTensor

    saved = optimizer.state_dict()
    saved["state"] = {
        index: {key: value.full_tensor() if isinstance(value, DTensor) else value for key, value in state.items()}
        for index, state in saved["state"].items()
    }
    return saved


def state_dict_for_save(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    """A CPU, contiguous state dict with no shared storage (safetensors refuses aliasing); whole
    tensors for a sharded module (`full_state_dict`)."""
    seen: set[tuple[int, int]] = set()
    out: dict[str, torch.Tensor] = {}
    for name, tensor in full_state_dict(module).items():
        t = tensor.detach().to("cpu").contiguous()
        key = (t.untyped_storage().data_ptr(), t.storage_offset())
        if (t.numel() and key in seen) or t.untyped_storage().nbytes() != t.numel() * t.element_size():
            t = t.clone()
        seen.add((t.untyped_storage().data_ptr(), t.storage_offset()))
        out[name] = t
    return out


def capture_rng(
    generator_state: torch.Tensor | None,
) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    """RNG states: tensors (torch CPU, shuffle generator, CUDA) and JSON (Python, NumPy).

    `generator_state` is passed rather than read so that a mid-epoch checkpoint can store the
    shuffle generator as it was at the start of that epoch (the epoch's order is then redrawn).
    """
    tensors = {"torch_cpu": torch.get_rng_state()}
    if generator_state is not None:
        tensors["shuffle_generator"] = generator_state.clone()
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        for i, s in enumerate(torch.cuda.get_rng_state_all()):
            tensors[f"cuda_{i}"] = s
    py_version, py_state, py_gauss = random.getstate()
    np_name, np_keys, np_pos, np_has_gauss, np_gauss = np.random.get_state()
    extra = {
        "python": [py_version, list(py_state), py_gauss],
        "numpy": [np_name, [int(k) for k in np_keys], int(np_pos), int(np_has_gauss), float(np_gauss)],
    }
    return tensors, extra


def restore_rng(
    tensors: dict[str, torch.Tensor], extra: dict[str, Any], generator: torch.Generator | None
) -> None:
    """Put every RNG back where `capture_rng` found it."""
    torch.set_rng_state(tensors["torch_cpu"])
    if generator is not None and "shuffle_generator" in tensors:
        generator.set_state(tensors["shuffle_generator"])
    cuda = [tensors[k] for k in sorted(k for k in tensors if k.startswith("cuda_"))]
    if cuda and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(cuda[: torch.cuda.device_count()])
    if "python" in extra:
        version, state, gauss = extra["python"]
        random.setstate((version, tuple(state), gauss))
    if "numpy" in extra:
        name, keys, pos, has_gauss, gauss = extra["numpy"]
        np.random.set_state((name, np.asarray(keys, dtype=np.uint32), pos, has_gauss, gauss))


def checkpoint_files(
    *,
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer | None,
    scheduler: Any = None,
    scaler: Any = None,
    generator_state: torch.Tensor | None = None,
    state: dict[str, Any],
) -> dict[str, bytes]:
    """The files of a checkpoint directory as bytes (name -> content), not written yet.

    A snapshot: later steps of training do not change it, so a run can hold its best epoch's
    checkpoint in memory and write it later (`write_checkpoint`).
    """
    opt_tensors: dict[str, torch.Tensor] = {}
    opt_json = _split_tensors(full_optimizer_state(optimizer), "optimizer", opt_tensors) if optimizer else None
    sched_tensors: dict[str, torch.Tensor] = {}
    sched_json = _split_tensors(scheduler.state_dict(), "scheduler", sched_tensors) if scheduler else None
    scaler_json = (
        _split_tensors(scaler.state_dict(), "scaler", sched_tensors)
        if scaler is not None and scaler.is_enabled()
        else None
    )
    rng_tensors, rng_json = capture_rng(generator_state)
    document = dict(state)
    document.update(
        format_version=FORMAT_VERSION,
        optimizer=opt_json,
        scheduler=sched_json,
        scaler=scaler_json,
        rng=rng_json,
    )
    # Compact JSON: with an indent json falls back to its pure-Python encoder, 4x slower, on every
    # checkpoint of a run.
    return {
        "model.safetensors": save(state_dict_for_save(model), metadata={"format": "pt"}),
        "optimizer.safetensors": save({**opt_tensors, **sched_tensors}),
        "rng.safetensors": save(rng_tensors),
        "state.json": json.dumps(document, sort_keys=True).encode("utf-8"),
    }


def write_checkpoint(path: Path, files: dict[str, bytes]) -> Path:
    """Write a checkpoint directory from `checkpoint_files` atomically (state.json synced last)."""
    path = Path(path)
    with atomic_dir(path) as tmp:
        for name, content in files.items():
            with open(tmp / name, "wb") as f:
                f.write(content)
                if name == "state.json":
                    f.flush()
                    os.fsync(f.fileno())
    return path


def save_checkpoint(
    path: Path,
    *,
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer | None,
    scheduler: Any = None,
    scaler: Any = None,
    generator_state: torch.Tensor | None = None,
    state: dict[str, Any],
) -> Path:
    """Write a checkpoint directory atomically; `state` must hold epoch and step."""
    return write_checkpoint(path, checkpoint_files(
        model=model, optimizer=optimizer, scheduler=scheduler, scaler=scaler,
        generator_state=generator_state, state=state,
    ))


def load_checkpoint(path: Path) -> Checkpoint:
    """Read a checkpoint directory written by `save_checkpoint` (no pickle involved)."""
    path = Path(path)
    state_file = path / "state.json"
    if not state_file.is_file():
        raise FileNotFoundError(f"{path} is not a checkpoint: state.json is missing")
    state = json.loads(state_file.read_text(encoding="utf-8"))
    if state.get("format_version") != FORMAT_VERSION:
        raise ValueError(
            f"checkpoint {path} has format version {state.get('format_version')!r}; "
            f"this engine reads version {FORMAT_VERSION}"
        )
    model = load_file(path / "model.safetensors", device="cpu")
    opt_file = path / "optimizer.safetensors"
    tensors = load_file(opt_file, device="cpu") if opt_file.is_file() else {}
    rng_tensors = load_file(path / "rng.safetensors", device="cpu")
    return Checkpoint(
        path=path,
        state=state,
        model=model,
        optimizer=_join_tensors(state["optimizer"], tensors) if state.get("optimizer") else None,
        scheduler=_join_tensors(state["scheduler"], tensors) if state.get("scheduler") else None,
        scaler=_join_tensors(state["scaler"], tensors) if state.get("scaler") else None,
        rng={"tensors": rng_tensors, "extra": state.get("rng", {})},
    )


def latest_checkpoint(directory: Path) -> Path | None:
    """The checkpoint with the most steps under `directory` (a run's `checkpoints/`), if any."""
    directory = Path(directory)
    if (directory / "state.json").is_file():
        return directory
    best: tuple[int, str] | None = None
    found: Path | None = None
    if not directory.is_dir():
        return None
    for child in directory.iterdir():
        if child.name.startswith("."):
            continue
        step = checkpoint_step(child)
        if step is None:  # not a complete checkpoint
            continue
        # "best" is a copy of an epoch checkpoint; prefer the numbered one on a tie.
        key = (step, "" if child.name == "best" else child.name)
        if best is None or key > best:
            best, found = key, child
    return found


def checkpoint_step(path: Path | str) -> int | None:
    """The step a checkpoint folder holds (from its state.json); None when it is not a
    complete checkpoint (missing, half-written, or no step recorded)."""
    try:
        return int(json.loads((Path(path) / "state.json").read_text(encoding="utf-8"))["step"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def checkpoint_metrics(path: Path | str) -> dict[str, float]:
    """The validation metrics the checkpoint's weights had (`val/loss`, ...); reads state.json only.

    A checkpoint written at an epoch's end holds the validation pass of those weights
    (`trainer.last_val`; for `best`, the pass that made it the best). One written within an
    epoch (a cancelled run's `step-*`) has weights no validation has seen: {}. So has a run
    without a validation split.
    """
    state_file = Path(path) / "state.json"
    try:
        state = json.loads(state_file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(f"{path} is not a checkpoint: state.json is missing") from None
    if int(state.get("batch_in_epoch", 0)):
        return {}
    return float_metrics(state.get("trainer", {}).get("last_val") or {})
