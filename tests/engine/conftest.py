"""Shared fixtures for the graph tests: example specs and random inputs that fit a spec."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

EXAMPLES_DIR = Path(__file__).resolve().parents[2] / "examples" / "specs"
EXAMPLE_NAMES = sorted(p.stem for p in EXAMPLES_DIR.glob("*.json"))


@pytest.fixture(scope="session")
def load_example() -> Callable[[str], dict[str, Any]]:
    """Load examples/specs/<name>.json as a dict."""

    def load(name: str) -> dict[str, Any]:
        return json.loads((EXAMPLES_DIR / f"{name}.json").read_text())

    return load


def make_inputs(spec: dict[str, Any], batch: int = 3, seed: int = 0) -> list[torch.Tensor]:
    """Random tensors for each spec input; int64 ids stay below every vocabulary they feed."""
    generator = torch.Generator().manual_seed(seed)
    vocab = min(
        (n["params"]["num_embeddings"] for n in spec["nodes"] if n["op"] == "Embedding"),
        default=10,
    )
    tensors = []
    for inp in spec["inputs"]:
        shape = (batch, *inp["shape"])
        if inp.get("dtype", "float32") == "int64":
            tensors.append(torch.randint(0, vocab, shape, generator=generator))
        else:
            tensors.append(torch.randn(shape, generator=generator))
    return tensors


@pytest.fixture(scope="session")
def random_inputs() -> Callable[..., list[torch.Tensor]]:
    """make_inputs as a fixture: random_inputs(spec, batch=3, seed=0)."""
    return make_inputs


def chain_spec(length: int, width: int = 4) -> dict[str, Any]:
    """x -> Linear -> ReLU -> Linear -> ReLU ... with `length` nodes."""
    nodes = []
    prev = "x"
    for i in range(length):
        node_id = f"n{i}"
        if i % 2 == 0:
            nodes.append(
                {"id": node_id, "op": "Linear", "params": {"out_features": width}, "inputs": [prev]}
            )
        else:
            nodes.append({"id": node_id, "op": "ReLU", "inputs": [prev]})
        prev = node_id
    return {
        "version": 1,
        "inputs": [{"id": "x", "shape": [width]}],
        "nodes": nodes,
        "outputs": [prev],
    }


@pytest.fixture(scope="session")
def make_chain() -> Callable[..., dict[str, Any]]:
    """chain_spec as a fixture: make_chain(length, width=4)."""
    return chain_spec
