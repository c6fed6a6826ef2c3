"""Fine-tuning: start a run from a checkpoint's weights wherever names and shapes match.

    plan = init_plan(spec, checkpoint_dir)      # what would be loaded; builds on `meta`, trains nothing
    plan.to_json() -> {"loaded": [...], "mismatched": [...], "new": [...], "unused": [...]}
    train(spec, splits, cfg, init_from=checkpoint_dir)   # result.init_plan is the same plan

The graph may differ from the checkpoint's: every state-dict tensor (parameters and buffers)
whose name and shape match is copied after the model is built with its seeded init; the
rest keep that init. A tensor's node is the part of its name before the first ".". Only
`model.safetensors` is read (its header alone for a plan), so a checkpoint directory and an
export directory both serve.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
from safetensors import safe_open
from safetensors.torch import load_file

from engine.train.errors import TrainingError
from engine.train.state import InitPlan

__all__ = ["InitPlan", "apply_init", "checkpoint_shapes", "graph_shapes", "init_plan", "plan_for"]


def _weights(checkpoint_dir: Path | str) -> Path:
    path = Path(checkpoint_dir)
    weights = path if path.suffix == ".safetensors" else path / "model.safetensors"
    if not weights.is_file():
        raise TrainingError(
            f"init_from {path} is not a checkpoint: it has no model.safetensors", field="init_from"
        )
    return weights


def _node(name: str) -> str:
    return name.split(".", 1)[0]


def checkpoint_shapes(checkpoint_dir: Path | str) -> dict[str, list[int]]:
    """Name -> shape of every tensor in a checkpoint's weights (reads the header only)."""
    with safe_open(str(_weights(checkpoint_dir)), framework="pt") as f:
        return {name: list(f.get_slice(name).get_shape()) for name in f.keys()}  # noqa: SIM118


def graph_shapes(spec: Any) -> dict[str, list[int]]:
    """Name -> shape of every state-dict tensor `build(spec)` has, built on `meta` (no memory)."""
    from engine.build import build
    from engine.spec import parse_spec

    if not hasattr(spec, "inputs"):
        spec = parse_spec(spec)
    try:
        with torch.device("meta"):
            model = build(spec, seed=0)
    except (RuntimeError, NotImplementedError):  # an initialiser that cannot run on meta
        model = build(spec, seed=0)
    return {name: list(t.shape) for name, t in model.state_dict().items()}


def plan_for(graph: Mapping[str, list[int]], checkpoint: Mapping[str, list[int]]) -> InitPlan:
    """Compare the graph's tensors with the checkpoint's, in the graph's order."""
    plan = InitPlan()
    for name, shape in graph.items():
        if name not in checkpoint:
            plan.new.append({"node": _node(name), "parameter": name, "shape": list(shape)})
        elif list(checkpoint[name]) != list(shape):
            plan.mismatched.append({
                "node": _node(name), "parameter": name,
                "checkpoint_shape": list(checkpoint[name]), "graph_shape": list(shape),
            })
        else:
            plan.loaded.append(name)
    plan.unused = [
        {"node": _node(name), "parameter": name, "shape": list(shape)}
        for name, shape in checkpoint.items()
        if name not in graph
    ]
    return plan


def init_plan(spec: Any, checkpoint_dir: Path | str) -> InitPlan:
    """What `train(spec, ..., init_from=checkpoint_dir)` would load, without loading or training."""
    return plan_for(graph_shapes(spec), checkpoint_shapes(checkpoint_dir))


def apply_init(model: torch.nn.Module, checkpoint_dir: Path | str) -> InitPlan:
    """Copy every checkpoint tensor whose name and shape match into `model`; the plan it followed."""
    saved = load_file(str(_weights(checkpoint_dir)), device="cpu")
    own = model.state_dict()
    plan = plan_for({k: list(v.shape) for k, v in own.items()}, {k: list(v.shape) for k, v in saved.items()})
    with torch.no_grad():
        for name in plan.loaded:
            own[name].copy_(saved[name])
    return plan
