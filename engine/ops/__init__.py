"""The op catalog: one registry, filled by the definition modules below."""

from typing import Any

from engine.ops import activations, layers, structure  # noqa: F401  (registration side effects)
from engine.ops.catalog import OpCatalog, OpInfo, ParamInfo, catalog_json_schema
from engine.ops.registry import (
    In,
    Inferred,
    OpDef,
    Param,
    ShapeError,
    fmt_shape,
    meta_infer,
    registry,
)

CATALOG_VERSION = 1
# Palette order: the layers people reach for first come first.
CATEGORIES = (
    "Linear",
    "Convolution",
    "Pooling",
    "Upsampling",
    "Normalization",
    "Activation",
    "Recurrent",
    "Attention",
    "Embedding",
    "Regularization",
    "Shape",
    "Reduction",
    "Merge",
)


def catalog_json() -> dict[str, Any]:
    """The catalog the browser draws its palette and parameter forms from."""
    rank = {c: i for i, c in enumerate(CATEGORIES)}
    ops = sorted(registry, key=lambda op: rank.get(op.category, len(rank)))
    catalog = OpCatalog.model_validate(
        {
            "version": CATALOG_VERSION,
            "categories": list(CATEGORIES),
            "ops": [op.to_json() for op in ops],
        }
    )
    return catalog.model_dump(mode="json")


__all__ = [
    "CATEGORIES",
    "In",
    "Inferred",
    "OpCatalog",
    "OpDef",
    "OpInfo",
    "Param",
    "ParamInfo",
    "ShapeError",
    "catalog_json",
    "catalog_json_schema",
    "fmt_shape",
    "meta_infer",
    "registry",
]
