"""Tiny specs and real built-in datasets for the trainer tests."""

from __future__ import annotations

from typing import Any

import pytest

from engine.data import DataRecipe, Splits, load_dataset


def mlp_spec(in_shape: list[int], out: int, hidden: int = 32, dropout: float = 0.0) -> dict[str, Any]:
    """Flatten -> Linear -> ReLU [-> Dropout] -> Linear."""
    nodes: list[dict[str, Any]] = [
        {"id": "flat", "op": "Flatten", "inputs": ["x"]},
        {"id": "fc1", "op": "Linear", "params": {"out_features": hidden}, "inputs": ["flat"]},
        {"id": "act", "op": "ReLU", "inputs": ["fc1"]},
    ]
    last = "act"
    if dropout:
        nodes.append({"id": "drop", "op": "Dropout", "params": {"p": dropout}, "inputs": ["act"]})
        last = "drop"
    nodes.append({"id": "fc2", "op": "Linear", "params": {"out_features": out}, "inputs": [last]})
    return {"version": 1, "inputs": [{"id": "x", "shape": in_shape}], "nodes": nodes, "outputs": ["fc2"]}


def cnn_spec() -> dict[str, Any]:
    """A small digits CNN with BatchNorm (running stats must survive a resume too)."""
    return {
        "version": 1,
        "inputs": [{"id": "x", "shape": [1, 8, 8]}],
        "nodes": [
            {"id": "conv1", "op": "Conv2d", "params": {"out_channels": 8, "kernel_size": 3, "padding": 1}, "inputs": ["x"]},
            {"id": "bn1", "op": "BatchNorm2d", "inputs": ["conv1"]},
            {"id": "act1", "op": "ReLU", "inputs": ["bn1"]},
            {"id": "pool", "op": "MaxPool2d", "params": {"kernel_size": 2}, "inputs": ["act1"]},
            {"id": "flat", "op": "Flatten", "inputs": ["pool"]},
            {"id": "drop", "op": "Dropout", "params": {"p": 0.2}, "inputs": ["flat"]},
            {"id": "fc", "op": "Linear", "params": {"out_features": 10}, "inputs": ["drop"]},
        ],
        "outputs": ["fc"],
    }


def load(name: str, **recipe: Any) -> Splits:
    """Load a built-in dataset through the real data layer."""
    return load_dataset(DataRecipe.model_validate({"source": {"kind": "builtin", "name": name}, **recipe}))


@pytest.fixture(scope="session")
def digits() -> Splits:
    return load("digits")


@pytest.fixture(scope="session")
def digits_augmented() -> Splits:
    return load("digits", transforms={"augment": [{"op": "noise", "std": 0.05}]})


@pytest.fixture(scope="session")
def iris() -> Splits:
    return load("iris")


@pytest.fixture(scope="session")
def diabetes() -> Splits:
    return load("diabetes")
