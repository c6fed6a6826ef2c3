"""The op registry: catalog JSON, parameter checks, and shape rules against real modules."""

from __future__ import annotations

import json
from typing import Any

import pytest
import torch
from torch import nn

from engine.build import build
from engine.codegen import codegen
from engine.ops import (
    CATEGORIES,
    In,
    OpCatalog,
    ShapeError,
    catalog_json,
    catalog_json_schema,
    meta_infer,
    registry,
)
from engine.ops.registry import PARAM_KINDS, TORCH_DTYPES
from engine.validate import validate

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
    # PyTorch's own parameter types: an int or one per dimension, "same"/"valid", null = keep.
    (
        "Conv2d",
        {"out_channels": 4, "kernel_size": [3, 1], "stride": [2, 1]},
        [(2, 9, 7)],
        "float32",
    ),
    (
        "Conv2d",
        {"out_channels": 4, "kernel_size": [4, 3], "padding": "same"},
        [(2, 6, 5)],
        "float32",
    ),
    ("Conv2d", {"out_channels": 3, "kernel_size": 3, "padding": "valid"}, [(2, 6, 5)], "float32"),
    (
        "Conv2d",
        {"out_channels": 2, "kernel_size": [3, 2], "padding": [1, 0], "dilation": [2, 1]},
        [(1, 8, 8)],
        "float32",
    ),
    (
        "Conv1d",
        {"out_channels": 2, "kernel_size": 4, "padding": "same", "dilation": 2},
        [(3, 9)],
        "float32",
    ),
    (
        "ConvTranspose2d",
        {"out_channels": 2, "kernel_size": [3, 2], "stride": [2, 1], "output_padding": [1, 0]},
        [(3, 4, 5)],
        "float32",
    ),
    (
        "MaxPool2d",
        {"kernel_size": [3, 2], "stride": [1, 2], "padding": [1, 0]},
        [(2, 7, 6)],
        "float32",
    ),
    ("AvgPool2d", {"kernel_size": [2, 3], "padding": [1, 1]}, [(2, 6, 7)], "float32"),
    ("AdaptiveAvgPool2d", {"output_size": 1}, [(4, 7, 9)], "float32"),
    ("AdaptiveAvgPool2d", {"output_size": [None, 2]}, [(4, 7, 9)], "float32"),
    # The wider catalog.
    (
        "Conv3d",
        {"out_channels": 3, "kernel_size": [3, 2, 1], "padding": 1},
        [(2, 4, 5, 6)],
        "float32",
    ),
    ("Conv3d", {"out_channels": 2, "kernel_size": 3, "padding": "same"}, [(1, 4, 4, 4)], "float32"),
    ("MaxPool3d", {"kernel_size": 2}, [(2, 4, 6, 5)], "float32"),
    ("MaxPool3d", {"kernel_size": [1, 2, 2], "stride": [1, 2, 1]}, [(2, 3, 6, 5)], "float32"),
    ("AvgPool1d", {"kernel_size": 3, "stride": 2, "padding": 1}, [(2, 9)], "float32"),
    ("AdaptiveAvgPool1d", {"output_size": 3}, [(2, 10)], "float32"),
    ("AdaptiveMaxPool2d", {"output_size": [2, 3]}, [(3, 7, 8)], "float32"),
    ("AdaptiveMaxPool2d", {"output_size": 1}, [(3, 7, 8)], "float32"),
    ("Upsample", {}, [(2, 3, 4)], "float32"),
    ("Upsample", {"scale_factor": 1.5, "mode": "bilinear"}, [(2, 3, 5)], "float32"),
    ("Upsample", {"size": [5, 7], "mode": "bilinear"}, [(2, 3, 4)], "float32"),
    ("Upsample", {"size": 9}, [(2, 4)], "float32"),
    ("PixelShuffle", {"upscale_factor": 2}, [(8, 3, 4)], "float32"),
    ("Dropout2d", {"p": 0.3}, [(3, 4, 4)], "float32"),
    ("InstanceNorm1d", {"affine": True}, [(3, 7)], "float32"),
    ("InstanceNorm2d", {"track_running_stats": True}, [(3, 4, 5)], "float32"),
    ("RMSNorm", {}, [(5, 8)], "float32"),
    ("RMSNorm", {"eps": 1e-6, "elementwise_affine": False}, [(8,)], "float32"),
    ("PReLU", {}, [(3, 4)], "float32"),
    ("PReLU", {"num_parameters": 3, "init": 0.1}, [(3, 4, 4)], "float32"),
    ("Mish", {}, [(3, 4)], "float32"),
    ("Hardswish", {}, [(5,)], "float32"),
    ("Softplus", {"beta": 2.0, "threshold": 10.0}, [(5,)], "float32"),
    ("Transpose", {}, [(2, 3, 4)], "float32"),
    ("Transpose", {"dim0": -1, "dim1": 0}, [(2, 3, 4)], "int64"),
    ("Squeeze", {}, [(1, 3, 1, 4)], "float32"),
    ("Squeeze", {"dim": [0, 1]}, [(1, 3, 1)], "float32"),
    ("Squeeze", {"dim": -1}, [(3, 1)], "float32"),
    ("Unsqueeze", {}, [(8, 8)], "float32"),
    ("Unsqueeze", {"dim": -1}, [(8, 8)], "float32"),
    ("Mean", {"dim": [1, 2]}, [(3, 4, 5)], "float32"),
    ("Mean", {"dim": 0, "keepdim": True}, [(6, 4)], "float32"),
    ("Mean", {}, [(6, 4)], "float32"),
    # One value per sample: nothing to reduce, and the batch dimension stays.
    ("Mean", {}, [()], "float32"),
    ("Sum", {"keepdim": True}, [()], "int64"),
    ("Max", {}, [()], "float32"),
    ("Sum", {"dim": -1}, [(3, 4)], "int64"),
    ("Max", {"dim": [-1, 0], "keepdim": True}, [(3, 4, 2)], "float32"),
    ("MatMul", {}, [(3, 4), (4, 5)], "float32"),
    ("MatMul", {}, [(2, 3, 4), (1, 4, 2)], "float32"),
    ("Sub", {}, [(3, 4), (3, 4)], "float32"),
    ("Split", {"split_size_or_sections": 2}, [(5, 3)], "float32"),
    ("Split", {"split_size_or_sections": [1, 3], "dim": -1}, [(2, 4)], "float32"),
    ("Chunk", {"chunks": 4}, [(5, 2)], "float32"),
    ("Chunk", {"chunks": 2, "dim": 1}, [(3, 8)], "int64"),
    ("Pad", {"pad": [1, 2]}, [(3, 4)], "float32"),
    ("Pad", {"pad": [1, 1, 2, 0], "mode": "reflect"}, [(2, 4, 5)], "float32"),
    ("Pad", {"pad": [2, 1], "mode": "replicate"}, [(2, 5)], "float32"),
    ("Pad", {"pad": [1, 1, 1, 1], "mode": "circular"}, [(1, 3, 3)], "float32"),
    ("Pad", {"pad": [0, 1], "value": -1.5}, [(4,)], "float32"),
    ("TransformerDecoderLayer", {"nhead": 2, "dim_feedforward": 16}, [(5, 8), (3, 8)], "float32"),
    (
        "TransformerDecoderLayer",
        {"nhead": 4, "dim_feedforward": 8, "causal": False, "norm_first": True},
        [(4, 8), (6, 8)],
        "float32",
    ),
    ("PositionalEmbedding", {"max_len": 16}, [(5, 8)], "float32"),
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
            # The kinds the browser's forms know; the first five are the original ones.
            assert {"int", "float", "bool", "choice", "int_list"} <= set(PARAM_KINDS)
            assert param["type"] in set(PARAM_KINDS)
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
    if op.multi_output:
        # One shape per output port, each as the real call gives it.
        assert rule.ports == on_meta.ports
        assert rule.ports is not None and [tuple(o.shape) for o in out] == [
            (batch, *s) for s in rule.ports
        ]
        assert rule.shape == rule.ports[0]
    else:
        assert rule.ports is None
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


def test_size_parameters_take_an_int_or_one_per_dimension_like_pytorch() -> None:
    conv = registry["Conv2d"]
    for value in (3, [3, 1], (2, 2)):
        params, problems = conv.resolve_params({"out_channels": 4, "kernel_size": value})
        assert problems == [] and params["kernel_size"] == (
            value if isinstance(value, int) else list(value)
        )
    for padding in ("same", "valid", 1, [1, 0]):
        assert conv.resolve_params({"out_channels": 4, "padding": padding})[1] == []
    _, problems = conv.resolve_params(
        {
            "out_channels": 4,
            "kernel_size": [3, 1, 1],
            "stride": [1, "2"],
            "padding": "full",
            "dilation": True,
        }
    )
    by_field = {f: m for _, f, m in problems}
    assert by_field["kernel_size"] == (
        "Conv2d 'kernel_size' needs one integer or a list of 2 (one per dimension), got a list of 3"
    )
    assert by_field["stride"] == "Conv2d 'stride' item 1 must be an integer, got '2'"
    assert by_field["padding"] == (
        "Conv2d 'padding' must be an integer, a list of integers or one of 'same', 'valid', got 'full'"
    )
    assert (
        by_field["dilation"]
        == "Conv2d 'dilation' must be an integer or a list of integers, got true"
    )
    _, problems = conv.resolve_params({"out_channels": 4, "kernel_size": [3, 0]})
    assert problems == [
        ("bad_param", "kernel_size", "Conv2d 'kernel_size' item 1 must be at least 1, got 0")
    ]
    # The example: PyTorch takes output_size=1, and None keeps a size.
    pool = registry["AdaptiveAvgPool2d"]
    assert pool.resolve_params({"output_size": 1}) == ({"output_size": 1}, [])
    assert pool.resolve_params({"output_size": [None, 3]}) == ({"output_size": [None, 3]}, [])
    assert pool.resolve_params({"output_size": [1, 1]}) == ({"output_size": [1, 1]}, [])
    _, problems = registry["AdaptiveAvgPool1d"].resolve_params({"output_size": [None]})
    assert (
        problems[0][1] == "output_size" and "item 0 must be an integer, got None" in problems[0][2]
    )


def test_catalog_describes_the_new_kinds_ports_and_search_words() -> None:
    ops = {op["name"]: op for op in catalog_json()["ops"]}
    params = {p["name"]: p for p in ops["Conv2d"]["params"]}
    assert params["kernel_size"] | {"help": ""} == params["kernel_size"] | {
        "help": "",
        "type": "int_or_tuple",
        "dims": 2,
        "default": 3,
        "min": 1,
        "item_nullable": False,
    }
    assert params["padding"]["choices"] == ["same", "valid"] and params["padding"]["min"] == 0
    assert {p["name"]: p for p in ops["Conv3d"]["params"]}["stride"]["dims"] == 3
    output_size = ops["AdaptiveAvgPool2d"]["params"][0]
    assert (output_size["type"], output_size["default"], output_size["item_nullable"]) == (
        "int_or_tuple",
        1,
        True,
    )
    assert ops["Split"]["multi_output"] and ops["Chunk"]["multi_output"]
    assert not ops["Conv2d"]["multi_output"]
    assert ops["Conv2d"]["torch_name"] == "nn.Conv2d" and "convolution" in ops["Conv2d"]["keywords"]
    assert ops["Split"]["torch_name"] == "torch.split"
    assert ops["Pad"]["torch_name"] == "nn.functional.pad"
    for op in ops.values():
        assert op["torch_name"] or op["name"] == "PositionalEmbedding", op["name"]
    # The catalog's typed shape: the served document validates against its own schema model.
    assert OpCatalog.model_validate(catalog_json()).model_dump(mode="json") == catalog_json()
    kinds = catalog_json_schema()["$defs"]["ParamInfo"]["properties"]["type"]["enum"]
    assert kinds == list(PARAM_KINDS)


@pytest.mark.parametrize(
    ("name", "params", "shapes", "field", "text"),
    [
        (
            "Conv2d",
            {"out_channels": 4, "padding": "same", "stride": 2},
            [(1, 8, 8)],
            "padding",
            "'padding' 'same' needs stride 1",
        ),
        (
            "Conv2d",
            {"out_channels": 4, "kernel_size": [5, 1]},
            [(1, 3, 3)],
            None,
            "window of (5, 1) (kernel_size (5, 1), dilation 1) does not fit the input [1, 3, 3]",
        ),
        ("Conv3d", {"out_channels": 2}, [(1, 8, 8)], None, "Conv3d needs a [C, D, H, W] input"),
        (
            "MaxPool2d",
            {"kernel_size": [2, 2], "padding": [0, 2]},
            [(1, 8, 8)],
            "padding",
            "at most half",
        ),
        ("Upsample", {"mode": "bilinear"}, [(2, 8)], "mode", "'bilinear' needs a [C, H, W] input"),
        ("Upsample", {"size": [4, 4, 4]}, [(2, 8, 8)], "size", "needs one number or 2"),
        (
            "PixelShuffle",
            {"upscale_factor": 2},
            [(6, 4, 4)],
            "upscale_factor",
            "must divide the channels",
        ),
        ("PReLU", {"num_parameters": 4}, [(3, 5)], "num_parameters", "1 or the number of channels"),
        ("Squeeze", {"dim": [0, -2]}, [(1, 3)], "dim", "names a dimension twice"),
        ("Unsqueeze", {"dim": 3}, [(1, 3)], "dim", "between -3 and 2"),
        ("Mean", {"dim": 2}, [(3, 4)], "dim", "between -2 and 1"),
        ("MatMul", {}, [(3, 4), (5, 2)], None, "last dimension of the first input"),
        ("MatMul", {}, [(3, 4), (2, 4, 2)], None, "the same number of dimensions"),
        ("Sub", {}, [(3,), (4,)], None, "Sub needs equal shapes"),
        (
            "Split",
            {"split_size_or_sections": [1, 2]},
            [(4, 2)],
            "split_size_or_sections",
            "add up to 3",
        ),
        ("Chunk", {"chunks": 2, "dim": 2}, [(4, 2)], "dim", "between -2 and 1"),
        ("Pad", {"pad": [1, 2, 3]}, [(4, 2)], "pad", "needs pairs"),
        ("Pad", {"pad": [4, 0], "mode": "reflect"}, [(2, 4)], "pad", "smaller than the dimension"),
        (
            "Pad",
            {"pad": [1, 1], "mode": "replicate"},
            [(2, 3, 4)],
            "pad",
            "1- or 2-dimensional input",
        ),
        (
            "TransformerDecoderLayer",
            {"nhead": 2},
            [(5, 8), (3, 6)],
            None,
            "memory with the target's embedding size 8",
        ),
        ("PositionalEmbedding", {"max_len": 4}, [(5, 8)], "max_len", "shorter than the sequence"),
        ("InstanceNorm2d", {}, [(3, 4)], None, "InstanceNorm2d needs a [C, H, W] input"),
    ],
)
def test_new_shape_rules_explain_what_is_wrong(
    name: str, params: dict[str, Any], shapes: list[tuple[int, ...]], field: str | None, text: str
) -> None:
    op = registry[name]
    resolved, problems = op.resolve_params(params)
    assert problems == []
    with pytest.raises(ShapeError) as err:
        op.run_infer(resolved, [In(f"in{i}", s) for i, s in enumerate(shapes)])
    assert text in err.value.message
    assert err.value.field == field


@pytest.mark.parametrize("op", ["Mean", "Sum", "Max"])
@pytest.mark.parametrize("keepdim", [False, True])
def test_reducing_all_dims_of_one_value_per_sample_keeps_the_batch(op: str, keepdim: bool) -> None:
    spec = {
        "version": 1,
        "inputs": [{"id": "x", "shape": [4]}],
        "nodes": [
            {"id": "avg", "op": "Mean", "inputs": ["x"]},  # [4] -> []
            {"id": "again", "op": op, "params": {"keepdim": keepdim}, "inputs": ["avg"]},
        ],
        "outputs": ["again"],
    }
    report = validate(spec)
    assert report.valid, report.summary()
    assert report.nodes["again"].shape == ()
    x = torch.randn(3, 4)
    out = build(spec).eval()(x)
    assert out.shape == (3,)
    torch.testing.assert_close(out, x.mean(dim=1), rtol=0, atol=0)
    source = codegen(spec)
    assert "again = avg  # (B, )" in source
    namespace: dict[str, Any] = {"__name__": "generated_model"}
    exec(compile(source, "model.py", "exec"), namespace)
    torch.testing.assert_close(namespace["Net"]()(x), out, rtol=0, atol=0)


@pytest.mark.parametrize(
    ("name", "params", "shape", "text"),
    [
        (
            "MaxPool1d",
            {"kernel_size": 3, "padding": 2},
            (2, 12),
            "'padding' 2 must be at most half",
        ),
        # PyTorch halves kernel_size itself: a dilated window does not allow more padding.
        (
            "MaxPool1d",
            {"kernel_size": 3, "padding": 2, "dilation": 2},
            (2, 12),
            "'padding' 2 must be at most half of kernel_size 3 (at most 1; PyTorch does not "
            "count dilation 2 here)",
        ),
        (
            "MaxPool2d",
            {"kernel_size": [3, 3], "padding": [1, 2], "dilation": [1, 3]},
            (2, 12, 12),
            "'padding' 2 must be at most half of kernel_size 3 in spatial dimension 1",
        ),
        (
            "MaxPool3d",
            {"kernel_size": 2, "padding": 2},
            (1, 8, 8, 8),
            "'padding' 2 must be at most half of kernel_size 2 (at most 1)",
        ),
        ("AvgPool1d", {"kernel_size": 3, "padding": 2}, (2, 12), "kernel_size 3 (at most 1)"),
        (
            "AvgPool2d",
            {"kernel_size": [2, 4], "padding": [2, 1]},
            (2, 12, 12),
            "'padding' 2 must be at most half of kernel_size 2 in spatial dimension 0",
        ),
    ],
)
def test_pooling_refuses_padding_over_half_the_kernel_like_pytorch(
    name: str, params: dict[str, Any], shape: tuple[int, ...], text: str
) -> None:
    op = registry[name]
    resolved, problems = op.resolve_params(params)
    assert problems == []
    with pytest.raises(ShapeError) as err:
        op.run_infer(resolved, [In("in0", shape)])
    assert text in err.value.message and err.value.field == "padding"
    # PyTorch refuses the same layer when it runs.
    module = op.make_module(resolved, [In("in0", shape)])
    with pytest.raises(RuntimeError, match="half of (effective )?kernel size"):
        module(torch.randn(2, *shape))
    # And validation names the node and the field.
    spec = {
        "version": 1,
        "inputs": [{"id": "x", "shape": list(shape)}],
        "nodes": [{"id": "pool", "op": name, "params": params, "inputs": ["x"]}],
        "outputs": ["pool"],
    }
    (error,) = validate(spec).errors
    assert (error.node, error.code, error.field) == ("pool", "bad_param", "padding")
    assert text in error.message


def test_pooling_takes_padding_of_exactly_half_the_kernel() -> None:
    for name, params, shape in [
        ("MaxPool1d", {"kernel_size": 3, "padding": 1, "dilation": 2}, (2, 12)),
        ("MaxPool2d", {"kernel_size": [4, 2], "padding": [2, 1]}, (2, 8, 8)),
        ("AvgPool1d", {"kernel_size": 4, "padding": 2}, (2, 8)),
    ]:
        op = registry[name]
        resolved, _ = op.resolve_params(params)
        rule = op.run_infer(resolved, [In("in0", shape)])
        out = op.make_module(resolved, [In("in0", shape)])(torch.randn(2, *shape))
        assert tuple(out.shape) == (2, *rule.shape), name
