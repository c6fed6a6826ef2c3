"""validate(): every problem named against its node, shapes for the canvas, limits."""

from __future__ import annotations

import json
import resource
from collections.abc import Callable
from typing import Any

import pytest

from engine.validate import Limits, validate


def spec(
    *nodes: dict[str, Any],
    outputs: list[str] | None = None,
    shape: list[int] | None = None,
    dtype: str = "float32",
) -> dict[str, Any]:
    """A spec with one input `x` and the given nodes; the last node is the output by default."""
    return {
        "version": 1,
        "inputs": [{"id": "x", "shape": shape or [8], "dtype": dtype}],
        "nodes": list(nodes),
        "outputs": outputs if outputs is not None else [nodes[-1]["id"]],
    }


def node(node_id: str, op: str, inputs: list[str], **params: Any) -> dict[str, Any]:
    return {"id": node_id, "op": op, "inputs": inputs, "params": params}


def codes(report: Any) -> list[tuple[str | None, str]]:
    return [(e.node, e.code) for e in report.errors]


def test_valid_report_has_shapes_params_and_totals(
    load_example: Callable[[str], dict[str, Any]],
) -> None:
    report = validate(load_example("digits_mlp"))
    data = report.to_json()
    assert data["valid"] is True and data["errors"] == []
    assert data["nodes"]["x"] == {"op": "Input", "shape": [1, 8, 8], "params": 0}
    assert data["nodes"]["fc1"] == {"op": "Linear", "shape": [128], "params": 64 * 128 + 128}
    assert data["outputs"] == {"fc2": [10]}
    assert data["total_params"] == 9610
    assert data["activation_bytes"] == 4 * (64 + 64 + 128 + 128 + 10)
    json.dumps(data)


def test_unknown_op_suggests_the_close_name() -> None:
    report = validate(spec(node("fc", "Lineer", ["x"], out_features=3)))
    (error,) = report.errors
    assert (error.node, error.code, error.field) == ("fc", "unknown_op", "op")
    assert "did you mean 'Linear'" in error.message


def test_bad_and_missing_params_name_node_and_field() -> None:
    report = validate(
        spec(
            node("fc", "Linear", ["x"], out_features="10"),
            node("conv", "Conv1d", ["x"]),
            node("drop", "Dropout", ["x"], p=-0.1),
            outputs=["fc", "conv", "drop"],
        )
    )
    found = {(e.node, e.code, e.field) for e in report.errors}
    assert found == {
        ("fc", "bad_param", "out_features"),
        ("conv", "missing_param", "out_channels"),
        ("drop", "bad_param", "p"),
    }


def test_arity_dangling_and_duplicate() -> None:
    report = validate(
        spec(
            node("a", "ReLU", ["x", "x"]),
            node("b", "Add", ["x"]),
            node("c", "ReLU", ["ghost"]),
            node("c", "Tanh", ["x"]),
            outputs=["a", "b", "c"],
        )
    )
    assert set(codes(report)) == {
        ("a", "arity"),
        ("b", "arity"),
        ("c", "dangling_input"),
        ("c", "duplicate_id"),
    }
    messages = {e.code: e.message for e in report.errors}
    assert messages["arity"] in {"ReLU takes 1 input, got 2", "Add takes at least 2 inputs, got 1"}
    assert messages["dangling_input"] == "input 'ghost' is not a node or input id"


def test_cycle_names_every_node_on_it_and_not_the_ones_downstream() -> None:
    report = validate(
        spec(
            node("a", "ReLU", ["c"]),
            node("b", "ReLU", ["a"]),
            node("c", "ReLU", ["b"]),
            node("after", "ReLU", ["c"]),
            node("self_loop", "ReLU", ["self_loop"]),
            outputs=["after", "self_loop"],
        )
    )
    assert sorted(codes(report)) == [
        ("a", "cycle"),
        ("b", "cycle"),
        ("c", "cycle"),
        ("self_loop", "cycle"),
    ]
    assert report.errors[0].message == "cycle: a -> b -> c -> a"
    assert report.nodes["after"].shape is None


def test_outputs_missing_or_unknown() -> None:
    assert codes(validate(spec(node("a", "ReLU", ["x"]), outputs=[]))) == [(None, "no_outputs")]
    report = validate(spec(node("a", "ReLU", ["x"]), outputs=["a", "nowhere"]))
    assert codes(report) == [("nowhere", "unreachable")]


def test_shape_mismatch_names_both_shapes() -> None:
    report = validate(
        spec(
            node("fc1", "Linear", ["x"], out_features=64),
            node("fc2", "Linear", ["x"], out_features=32),
            node("sum", "Add", ["fc1", "fc2"]),
        )
    )
    (error,) = report.errors
    assert (error.node, error.code) == ("sum", "shape_mismatch")
    assert error.message == "Add needs equal shapes, got [64] from fc1 and [32] from fc2"


def test_embedding_needs_int64_ids() -> None:
    report = validate(spec(node("emb", "Embedding", ["x"], num_embeddings=10, embedding_dim=4)))
    (error,) = report.errors
    assert (error.node, error.code) == ("emb", "dtype_mismatch")
    assert error.message == "Embedding needs int64 input, got float32 from x"
    ok = validate(
        spec(node("emb", "Embedding", ["x"], num_embeddings=10, embedding_dim=4), dtype="int64")
    )
    assert ok.valid and ok.outputs["emb"] == (8, 4)


def test_broken_node_does_not_cascade_errors_downstream() -> None:
    report = validate(
        spec(
            node("conv", "Conv2d", ["x"], out_channels=4),  # x is [8]: not an image
            node("act", "ReLU", ["conv"]),
            node("flat", "Flatten", ["act"]),
            node("fc", "Linear", ["flat"], out_features=2),
        )
    )
    assert codes(report) == [("conv", "shape_mismatch")]
    assert report.errors[0].message == "Conv2d needs a [C, H, W] input, got [8] from x"
    assert report.to_json()["nodes"]["fc"] == {"op": "Linear", "shape": None, "params": None}


def test_reserved_and_malformed_ids_are_node_errors() -> None:
    report = validate(
        spec(
            node("forward", "ReLU", ["x"]),
            node("2fast", "ReLU", ["forward"]),
            node("class", "ReLU", ["2fast"]),
        )
    )
    assert codes(report) == [("forward", "bad_id"), ("2fast", "bad_id"), ("class", "bad_id")]
    assert "reserved" in report.errors[0].message


def test_billion_output_linear_reports_too_many_params_without_allocating() -> None:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    report = validate(spec(node("huge", "Linear", ["x"], out_features=10**9)))
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert ("huge", "too_many_params") in codes(report)
    assert report.nodes["huge"].params == 9 * 10**9
    assert grown_kib < 200 * 1024  # the weights alone would be 36 GB


def test_activation_memory_limit() -> None:
    report = validate(
        spec(node("wide", "Linear", ["x"], out_features=1000)), Limits(max_activation_bytes=1000)
    )
    assert codes(report) == [("wide", "too_much_memory")]
    assert "4,000" in report.errors[0].message


def test_too_many_nodes_is_refused_before_any_work(
    make_chain: Callable[..., dict[str, Any]],
) -> None:
    report = validate(make_chain(10_000))
    assert codes(report) == [(None, "too_many_nodes")]
    assert report.errors[0].message == "the graph has 10000 nodes, the limit is 2000"


def test_ten_thousand_node_chain_validates_without_recursion(
    make_chain: Callable[..., dict[str, Any]],
) -> None:
    chain = make_chain(10_000)
    report = validate(chain, Limits(max_nodes=20_000))
    assert report.valid, report.summary()
    assert report.outputs["n9999"] == (4,)
    # The same chain closed into one long cycle.
    chain["nodes"][0]["inputs"] = ["n9999"]
    cyclic = validate(chain, Limits(max_nodes=20_000))
    assert len(cyclic.errors) == 10_000 and {e.code for e in cyclic.errors} == {"cycle"}


@pytest.mark.parametrize(
    "garbage", [None, 5, "{", b"\xff", "[]", {"nodes": 3}, {"inputs": "x"}, []]
)
def test_not_a_spec_is_reported_not_raised(garbage: Any) -> None:
    report = validate(garbage)
    assert not report.valid
    assert {e.code for e in report.errors} == {"not_a_spec"}
    assert all(e.node is None for e in report.errors)


def test_oversized_text_is_not_a_spec() -> None:
    report = validate('{"inputs": []}', Limits(max_spec_bytes=5))
    assert codes(report) == [(None, "not_a_spec")] and "too large" in report.errors[0].message


def test_dead_nodes_and_unused_inputs_are_warnings() -> None:
    report = validate(
        {
            "version": 1,
            "inputs": [{"id": "x", "shape": [4]}, {"id": "unused", "shape": [2]}],
            "nodes": [node("a", "ReLU", ["x"]), node("dead", "Tanh", ["x"])],
            "outputs": ["a"],
        }
    )
    assert report.valid
    assert {(w.node, w.code) for w in report.warnings} == {
        ("unused", "unused"),
        ("dead", "unreachable"),
    }
    assert report.order == ["a"]


def test_bad_input_shape_is_a_node_error() -> None:
    report = validate(spec(node("a", "ReLU", ["x"]), shape=[0, 3]))
    assert codes(report) == [("x", "bad_param")]
    assert report.errors[0].field == "shape"


def test_output_ports_are_referred_to_as_node_colon_index() -> None:
    report = validate(
        spec(
            node("halves", "Chunk", ["x"], chunks=2),
            node("gate", "Sigmoid", ["halves:1"]),
            node("gated", "Mul", ["halves:0", "gate"]),
            outputs=["gated", "halves:1"],
        )
    )
    assert report.valid, report.summary()
    assert report.to_json()["nodes"]["halves"] == {
        "op": "Chunk",
        "shape": [4],
        "params": 0,
        "ports": [[4], [4]],
    }
    assert "ports" not in report.to_json()["nodes"]["gate"]
    assert report.outputs == {"gated": (4,), "halves:1": (4,)}


def test_wrong_port_references_name_the_reading_node_and_field() -> None:
    report = validate(
        spec(
            node("halves", "Chunk", ["x"], chunks=2),
            node("whole", "ReLU", ["halves"]),
            node("third", "ReLU", ["halves:2"]),
            node("port_of_one", "ReLU", ["whole:0"]),
            node("nowhere", "ReLU", ["ghost:1"]),
            outputs=["third", "port_of_one", "nowhere", "halves"],
        )
    )
    problems = {(e.node, e.field, e.code): e.message for e in report.errors}
    assert problems[("whole", "inputs", "dangling_input")] == (
        "'halves' has 2 outputs; refer to one of them as 'halves:0' .. 'halves:1'"
    )
    assert problems[("third", "inputs", "dangling_input")] == (
        "'halves' has 2 outputs (0..1); there is no output 2"
    )
    assert problems[("nowhere", "inputs", "dangling_input")] == (
        "input 'ghost:1' is not a node or input id"
    )
    assert ("halves", "outputs", "unreachable") in problems
    # 'whole' is broken, so 'port_of_one' (reading it) stays quiet instead of cascading.
    assert not any(e.node == "port_of_one" for e in report.errors)
    report = validate(spec(node("one", "ReLU", ["x"]), node("two", "ReLU", ["one:0"])))
    assert [(e.node, e.field, e.message) for e in report.errors] == [
        ("two", "inputs", "'one' has one output; refer to it as 'one', not 'one:0'")
    ]


def test_pytorch_size_types_are_checked_per_node_and_field() -> None:
    report = validate(
        spec(
            node(
                "conv",
                "Conv2d",
                ["x"],
                out_channels=4,
                kernel_size=[3, 1],
                padding="same",
                stride=2,
            ),
            node("pool", "AdaptiveAvgPool2d", ["x"], output_size="one"),
            node("ok", "AdaptiveAvgPool2d", ["x"], output_size=1),
            outputs=["conv", "pool", "ok"],
            shape=[1, 8, 8],
        )
    )
    by_node = {e.node: (e.code, e.field) for e in report.errors}
    assert by_node == {"conv": ("bad_param", "padding"), "pool": ("bad_param", "output_size")}
    assert report.outputs["ok"] == (1, 1, 1)


def test_instance_norm_over_one_element_per_channel_is_refused_on_its_node() -> None:
    # Found by the property tests: PyTorch raises at the first forward; validation says it first.
    spec = {
        "version": 1,
        "inputs": [{"id": "x", "shape": [4, 1], "dtype": "float32"}],
        "nodes": [{"id": "norm", "op": "InstanceNorm1d", "inputs": ["x"]}],
        "outputs": ["norm"],
    }
    report = validate(spec)
    assert not report.valid
    (error,) = report.errors
    assert error.node == "norm" and "only one element per channel" in error.message
