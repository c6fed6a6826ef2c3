"""Datasets that ship inside scikit-learn or are generated from a seed; nothing is downloaded."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn import datasets as skd  # type: ignore[import-untyped]

from engine.data.raw import RawData


@dataclass(frozen=True)
class BuiltinDataset:
    """One entry of the built-in catalog."""

    name: str
    title: str
    task: str
    feature_shape: tuple[int, ...]
    num_classes: int | None
    rows: int
    description: str
    load: Callable[[int], RawData]  # seed -> data (the seed matters only for generated data)
    # What `load` does to the raw values before normalisation, as pipeline steps
    # (engine.data.pipeline): the digits are divided by 16 so that 0..16 becomes 0..1.
    input_steps: tuple[dict[str, Any], ...] = ()
    raw_range: tuple[float, float] | None = None  # the raw values' range, where it is fixed
    image_input: bool = False  # an image may stand in for a sample (greyscale digits)

    def to_json(self) -> dict[str, Any]:
        """Catalog entry for the dataset picker."""
        return {
            "name": self.name,
            "title": self.title,
            "task": self.task,
            "feature_shape": list(self.feature_shape),
            "num_classes": self.num_classes,
            "rows": self.rows,
            "description": self.description,
        }


def _tabular_classes(bunch: Any, target_name: str) -> RawData:
    x = np.asarray(bunch.data, dtype=np.float32)
    return RawData(
        x=x,
        y=np.asarray(bunch.target, dtype=np.int64),
        task="classification",
        classes=[str(c) for c in bunch.target_names],
        feature_names=[str(f) for f in bunch.feature_names],
        target_name=target_name,
        feature_shape=[x.shape[1]],
    )


def _iris(seed: int) -> RawData:
    return _tabular_classes(skd.load_iris(), "species")


def _wine(seed: int) -> RawData:
    return _tabular_classes(skd.load_wine(), "cultivar")


def _breast_cancer(seed: int) -> RawData:
    return _tabular_classes(skd.load_breast_cancer(), "diagnosis")


def _diabetes(seed: int) -> RawData:
    bunch = skd.load_diabetes(scaled=False)
    x = np.asarray(bunch.data, dtype=np.float32)
    return RawData(
        x=x,
        y=np.asarray(bunch.target, dtype=np.float32).reshape(-1, 1),
        task="regression",
        classes=[],
        feature_names=[str(f) for f in bunch.feature_names],
        target_name="progression",
        feature_shape=[x.shape[1]],
    )


DIGITS_SCALE: dict[str, Any] = {"op": "scale", "divide": 16.0}


def _digits(seed: int) -> RawData:
    bunch = skd.load_digits()
    # (N, 1, 8, 8) in [0, 1]; DIGITS_SCALE is recorded as the pipeline's "scale" step
    x = (np.asarray(bunch.images, dtype=np.float32) / DIGITS_SCALE["divide"])[:, None, :, :]
    return RawData(
        x=x,
        y=np.asarray(bunch.target, dtype=np.int64),
        task="classification",
        classes=[str(c) for c in bunch.target_names],
        feature_names=[f"pixel_{r}_{c}" for r in range(8) for c in range(8)],
        target_name="digit",
        feature_shape=[1, 8, 8],
    )


def _moons(seed: int) -> RawData:
    x, y = skd.make_moons(n_samples=600, noise=0.2, random_state=seed)
    return RawData(
        x=x.astype(np.float32),
        y=y.astype(np.int64),
        task="classification",
        classes=["0", "1"],
        feature_names=["x1", "x2"],
        target_name="class",
        feature_shape=[2],
    )


def _spirals(seed: int, per_class: int = 300, turns: float = 1.75) -> RawData:
    """Two interleaved spirals, one per class (the playground classic)."""
    rng = np.random.default_rng(seed)
    xs, ys = [], []
    for label in (0, 1):
        r = np.linspace(0.05, 1.0, per_class)
        theta = 2 * np.pi * turns * r + label * np.pi + rng.normal(0.0, 0.15, per_class)
        xs.append(np.stack([r * np.cos(theta), r * np.sin(theta)], axis=1))
        ys.append(np.full(per_class, label))
    return RawData(
        x=np.concatenate(xs).astype(np.float32),
        y=np.concatenate(ys).astype(np.int64),
        task="classification",
        classes=["0", "1"],
        feature_names=["x1", "x2"],
        target_name="class",
        feature_shape=[2],
    )


BUILTIN_DATASETS: dict[str, BuiltinDataset] = {
    d.name: d
    for d in [
        BuiltinDataset(
            "iris",
            "Iris flowers",
            "classification",
            (4,),
            3,
            150,
            "Four measurements of 150 iris flowers, three species.",
            _iris,
        ),
        BuiltinDataset(
            "wine",
            "Wine cultivars",
            "classification",
            (13,),
            3,
            178,
            "Chemical analysis of 178 wines from three cultivars.",
            _wine,
        ),
        BuiltinDataset(
            "breast_cancer",
            "Breast cancer (Wisconsin)",
            "classification",
            (30,),
            2,
            569,
            "30 features of cell nuclei; malignant or benign.",
            _breast_cancer,
        ),
        BuiltinDataset(
            "diabetes",
            "Diabetes progression",
            "regression",
            (10,),
            None,
            442,
            "Ten baseline variables; disease progression one year later.",
            _diabetes,
        ),
        BuiltinDataset(
            "digits",
            "Handwritten digits 8x8",
            "classification",
            (1, 8, 8),
            10,
            1797,
            "1797 greyscale 8x8 images of the digits 0-9.",
            _digits,
            input_steps=(DIGITS_SCALE,),
            raw_range=(0.0, 16.0),
            image_input=True,
        ),
        BuiltinDataset(
            "moons",
            "Two moons",
            "classification",
            (2,),
            2,
            600,
            "Two interleaving half circles with noise, generated from the seed.",
            _moons,
        ),
        BuiltinDataset(
            "spirals",
            "Two spirals",
            "classification",
            (2,),
            2,
            600,
            "Two interleaved spirals with noise, generated from the seed.",
            _spirals,
        ),
    ]
}


def builtin_catalog() -> list[dict[str, Any]]:
    """The built-in datasets as JSON, for the dataset picker."""
    return [d.to_json() for d in BUILTIN_DATASETS.values()]


def builtin_digest(name: str, seed: int = 0) -> str:
    """sha256 of a built-in's generated data in a canonical form (its dataset version's digest).

    The bytes hashed: a JSON header (name, shapes, dtypes, classes, feature names) then x and y as
    C-ordered little-endian arrays; the same data gives the same digest on every machine.
    """
    import hashlib
    import json

    raw = BUILTIN_DATASETS[name].load(int(seed))
    x = np.ascontiguousarray(raw.x, dtype=np.dtype(raw.x.dtype).newbyteorder("<")) if raw.x is not None else None
    y = np.ascontiguousarray(raw.y, dtype=np.dtype(raw.y.dtype).newbyteorder("<"))
    header = {"name": name, "seed": int(seed), "y": [list(y.shape), y.dtype.str], "classes": raw.classes,
              "features": raw.feature_names, "x": [list(x.shape), x.dtype.str] if x is not None else None}
    digest = hashlib.sha256(json.dumps(header, sort_keys=True).encode())
    if x is not None:
        digest.update(x.tobytes())
    digest.update(y.tobytes())
    return digest.hexdigest()
