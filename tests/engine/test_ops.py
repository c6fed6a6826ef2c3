"""The op registry: catalog JSON, parameter checks, and shape rules against real modules."""

from __future__ import annotations

import json
from typing import Any

import pytest
import torch
from torch import nn

from engine.ops import CATEGORIES, In, ShapeError, catalog_json, meta_infer, registry
from engine.ops.registry import TORCH_DTYPES

# (op, params, input shapes, input dtype): one representative call per op.
SAMPLES: list[tuple[str, dict[str, Any], list[tuple[int, ...]], str]] = [
    ("Linear", {"out_features": 5}, [(3, 7)], "float32"),
    (
        "Conv1d",
        {"out_channels": 4, "kernel_size": 3, "stride": 2, "padding": 1, "groups": 2},
        [(2, 11)],
        "float32",
    ),
    (
        "Conv2d",
        {"out_channels": 6, "kernel_size": 3, "dilation": 2, "bias": False},
        [(3, 9, 10)],
        "float32",
    ),
    (
        "ConvTranspose2d",
        {"out_channels": 4, "kernel_size": 3, "stride": 2, "output_padding": 1},
        [(2, 5, 6)],
        "float32",
    ),
    ("MaxPool1d", {"kernel_size": 3, "stride": 2, "padding": 1}, [(2, 9)], "float32"),
    ("MaxPool2d", {"kernel_size": 2}, [(3, 9, 8)], "float32"),
    ("AvgPool2d", {"kernel_size": 3, "stride": 1, "padding": 1}, [(2, 5, 5)], "float32"),
    ("AdaptiveAvgPool2d", {"output_size": [2, 3]}, [(4, 7, 9)], "float32"),
    ("BatchNorm1d", {}, [(6,)], "float32"),
    ("BatchNorm2d", {"affine": False}, [(3, 4, 4)], "float32"),
    ("LayerNorm", {}, [(5, 8)], "float32"),
    ("GroupNorm", {"num_groups": 2}, [(4, 3, 3)], "float32"),
    ("Dropout", {"p": 0.2}, [(5,)], "float32"),
    ("Embedding", {"num_embeddings": 11, "embedding_dim": 4}, [(6,)], "int64"),
    ("LSTM", {"hidden_size": 5, "num_layers": 2, "bidirectional": True}, [(7, 3)], "float32"),
    ("LSTM", {"hidden_size": 5, "output": "last", "bias": False}, [(7, 3)], "float32"),
    ("GRU", {"hidden_size": 4, "output": "last", "bidirectional": True}, [(6, 3)], "float32"),
    ("MultiheadAttention", {"num_heads": 2}, [(5, 8)], "float32"),
    ("MultiheadAttention", {"num_heads": 4, "bias": False}, [(5, 8)], "float32"),
    ("TransformerEncoderLayer", {"nhead": 2, "dim_feedforward": 16}, [(5, 8)], "float32"),
    ("ReLU", {}, [(3, 4)], "float32"),
    ("GELU", {"approximate": "tanh"}, [(3,)], "float32"),
    ("SiLU", {}, [(3,)], "float32"),
    ("LeakyReLU", {"negative_slope": 0.2}, [(3,)], "float32"),
    ("ELU", {"alpha": 0.5}, [(3,)], "float32"),
    ("Tanh", {}, [(3,)], "float32"),
    ("Sigmoid", {}, [(3,)], "float32"),
    ("Softmax", {"dim": 0}, [(3, 4)], "float32"),
    ("LogSoftmax", {}, [(3, 4)], "float32"),
    ("Flatten", {}, [(2, 3, 4)], "float32"),
    ("Flatten", {"start_dim": 1}, [(2, 3, 4)], "float32"),
    ("Reshape", {"shape": [4, -1]}, [(2, 3, 4)], "float32"),
    ("Permute", {"dims": [2, 0, 1]}, [(2, 3, 4)], "float32"),
    ("Identity", {}, [(2, 3)], "int64"),
    ("Add", {}, [(2, 3), (2, 3), (2, 3)], "float32"),
    ("Mul", {}, [(4,), (4,)], "float32"),
    ("Concat", {"dim": -1}, [(2, 3), (2, 5)], "float32"),
]


def test_catalog_lists_every_op_once_with_its_parameter_forms() -> None:
    catalog = catalog_json()
    json.dumps(catalog)
    names = [op["name"] for op in catalog["ops"]]
    assert len(names) == len(set(names)) == len(registry)
    assert {s[0] for s in SAMPLES} == set(names)
    for op in catalog["ops"]:
        assert op["category"] in CATEGORIES
        assert op["help"] and op["arity"]["min"] >= 1
        for param in op["params"]:
            assert set(param) >= {
                "name",
                "type",
                "default",
                "min",
                "max",
                "choices",
                "required",
                "help",
            }
            assert param["type"] in {"int", "float", "bool", "choice", "int_list"}
            if param["type"] == "choice":
                assert param["default"] in param["choices"]


def test_inferred_sizes_are_never_parameters() -> None:
    inferred = {"in_features", "in_channels", "num_features", "embed_dim", "input_size", "d_model"}
    for op in registry:
        assert not inferred & {p.name for p in op.params}, op.name


@pytest.mark.parametrize(
    ("name", "params", "shapes", "dtype"),
    SAMPLES,
    ids=[f"{s[0]}-{i}" for i, s in enumerate(SAMPLES)],
)
def test_shape_rule_matches_meta_and_real_module(
    name: str, params: dict[str, Any], shapes: list[tuple[int, ...]], dtype: str
) -> None:
    op = registry[name]
    resolved, problems = op.resolve_params(params)
    assert problems == []
    ins = [In(f"in{i}", s, dtype) for i, s in enumerate(shapes)]
    rule = op.run_infer(resolved, ins)
    on_meta = meta_infer(op, resolved, ins)
    assert (rule.shape, rule.params, rule.dtype) == (on_meta.shape, on_meta.params, on_meta.dtype)
    # And with real tensors, as build() will run it.
    batch = 2
    if dtype == "int64":
        xs = [torch.randint(0, 5, (batch, *s)) for s in shapes]
    else:
        xs = [torch.randn(batch, *s, dtype=TORCH_DTYPES[dtype]) for s in shapes]
    if op.function is not None:
        out = op.function.apply(xs, resolved, ins)
        count = 0
    else:
        module = op.make_module(resolved, ins).eval()
        out = module(*xs)
        count = sum(p.numel() for p in module.parameters())
    assert tuple(out.shape) == (batch, *rule.shape)
    assert count == rule.params


def test_wrong_param_types_name_the_field() -> None:
    linear = registry["Linear"]
    _, problems = linear.resolve_params({"out_features": "ten", "bias": 1, "colour": "red"})
    by_field = {field: (code, message) for code, field, message in problems}
    assert by_field["out_features"] == (
        "bad_param",
        "Linear 'out_features' must be an integer, got 'ten'",
    )
    assert by_field["bias"][1] == "Linear 'bias' must be true or false, got 1"
    assert by_field["colour"][0] == "bad_param" and "no parameter 'colour'" in by_field["colour"][1]


def test_out_of_range_and_missing_params() -> None:
    _, problems = registry["Conv2d"].resolve_params({"kernel_size": 0})
    assert ("missing_param", "out_channels", "Conv2d needs 'out_channels'") in problems
    assert (
        "bad_param",
        "kernel_size",
        "Conv2d 'kernel_size' must be at least 1, got 0",
    ) in problems
    _, problems = registry["Dropout"].resolve_params({"p": 1.5})
    assert problems == [("bad_param", "p", "Dropout 'p' must be at most 1, got 1.5")]
    _, problems = registry["GRU"].resolve_params({"hidden_size": 4, "output": "first"})
    assert problems[0][1] == "output" and "'sequence', 'last'" in problems[0][2]


def test_defaults_are_filled_in() -> None:
    params, problems = registry["MaxPool2d"].resolve_params({})
    assert problems == []
    assert params == {"kernel_size": 2, "stride": None, "padding": 0, "dilation": 1}
    cls, kwargs = registry["MaxPool2d"].module_call(params, [In("x", (1, 4, 4))])
    assert cls is nn.MaxPool2d and kwargs["stride"] == 2


@pytest.mark.parametrize(
    ("name", "params", "shapes", "field", "text"),
    [
        (
            "Conv2d",
            {"out_channels": 4},
            [(16,)],
            None,
            "Conv2d needs a [C, H, W] input, got [16] from in0",
        ),
        (
            "Conv2d",
            {"out_channels": 4, "kernel_size": 5},
            [(1, 3, 3)],
            None,
            "does not fit the input [1, 3, 3] from in0",
        ),
        (
            "Conv2d",
            {"out_channels": 4, "groups": 2},
            [(3, 8, 8)],
            "groups",
            "must divide the input channels",
        ),
        ("MultiheadAttention", {"num_heads": 3}, [(4, 8)], "num_heads", "must divide"),
        ("Reshape", {"shape": [5, -1]}, [(2, 4)], "shape", "cannot fit [2, 4] from in0"),
        ("Permute", {"dims": [0, 0]}, [(2, 4)], "dims", "once each"),
        (
            "Add",
            {},
            [(64,), (32,)],
            None,
            "Add needs equal shapes, got [64] from in0 and [32] from in1",
        ),
        ("Concat", {"dim": 0}, [(2, 3), (2, 4)], None, "needs all other dimensions equal"),
        ("Softmax", {"dim": 2}, [(3, 4)], "dim", "between -2 and 1"),
        ("Flatten", {"start_dim": 2, "end_dim": 1}, [(2, 3, 4)], "start_dim", "comes after"),
    ],
)
def test_shape_rules_explain_what_is_wrong(
    name: str, params: dict[str, Any], shapes: list[tuple[int, ...]], field: str | None, text: str
) -> None:
    op = registry[name]
    resolved, problems = op.resolve_params(params)
    assert problems == []
    with pytest.raises(ShapeError) as err:
        op.run_infer(resolved, [In(f"in{i}", s) for i, s in enumerate(shapes)])
    assert text in err.value.message
    assert err.value.field == field
