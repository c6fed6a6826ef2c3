"""build() and codegen(): every example runs with the predicted shapes, and the generated
source reproduces the built module exactly."""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import fx

from engine.build import InvalidSpec, build
from engine.codegen import codegen
from engine.validate import validate

EXAMPLE_NAMES = sorted(
    p.stem for p in (Path(__file__).parents[2] / "examples" / "specs").glob("*.json")
)


def load_generated(source: str, class_name: str = "Net") -> type[torch.nn.Module]:
    namespace: dict[str, Any] = {"__name__": "generated_model"}
    exec(compile(source, "model.py", "exec"), namespace)
    return namespace[class_name]


def as_tuple(out: Any) -> tuple[torch.Tensor, ...]:
    return out if isinstance(out, tuple) else (out,)


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_example_builds_runs_and_codegen_reproduces_it(
    name: str,
    load_example: Callable[[str], dict[str, Any]],
    random_inputs: Callable[..., list[torch.Tensor]],
) -> None:
    spec = load_example(name)
    report = validate(spec)
    assert report.valid, report.summary()
    model = build(spec, seed=0).eval()
    assert isinstance(model, fx.GraphModule)
    xs = random_inputs(spec, batch=5)
    with torch.no_grad():
        outs = as_tuple(model(*xs))
    assert [tuple(o.shape) for o in outs] == [(5, *report.outputs[o]) for o in spec["outputs"]]
    assert sum(p.numel() for p in model.parameters()) == report.total_params

    generated = load_generated(codegen(spec))().eval()
    generated.load_state_dict(model.state_dict(), strict=True)
    assert list(generated.state_dict()) == list(model.state_dict())
    with torch.no_grad():
        again = as_tuple(generated(*xs))
    assert all(torch.equal(a, b) for a, b in zip(outs, again, strict=True))


def test_parameter_names_are_node_ids(load_example: Callable[[str], dict[str, Any]]) -> None:
    model = build(load_example("digits_mlp"))
    assert list(model.state_dict()) == ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    gru = build(load_example("gru_classifier"))
    assert "gru.weight_ih_l0" in gru.state_dict() and "embed.weight" in gru.state_dict()


def test_same_seed_same_weights_and_global_rng_untouched(
    load_example: Callable[[str], dict[str, Any]],
) -> None:
    spec = load_example("digits_cnn")
    torch.manual_seed(123)
    expected_next = torch.rand(3)
    torch.manual_seed(123)
    a, b, c = build(spec, seed=7), build(spec, seed=7), build(spec, seed=8)
    assert torch.equal(torch.rand(3), expected_next)
    assert all(torch.equal(a.state_dict()[k], b.state_dict()[k]) for k in a.state_dict())
    assert not torch.equal(a.conv1.weight, c.conv1.weight)


def test_invalid_spec_raises_with_the_report() -> None:
    bad = {
        "version": 1,
        "inputs": [{"id": "x", "shape": [4]}],
        "nodes": [{"id": "fc", "op": "Linear", "inputs": ["x"]}],
        "outputs": ["fc"],
    }
    with pytest.raises(InvalidSpec) as err:
        build(bad)
    assert err.value.report.errors[0].code == "missing_param"
    assert "fc: Linear needs 'out_features'" in str(err.value)
    with pytest.raises(InvalidSpec):
        codegen(bad)


def test_several_outputs_come_back_as_a_tuple_in_spec_order() -> None:
    spec = {
        "version": 1,
        "inputs": [{"id": "a", "shape": [3]}, {"id": "b", "shape": [3]}],
        "nodes": [
            {"id": "total", "op": "Add", "inputs": ["a", "b", "a"]},
            {"id": "both", "op": "Concat", "inputs": ["b", "a"]},
            {"id": "grid", "op": "Reshape", "params": {"shape": [3, 2]}, "inputs": ["both"]},
            {"id": "turned", "op": "Permute", "params": {"dims": [1, 0]}, "inputs": ["grid"]},
        ],
        "outputs": ["turned", "total"],
    }
    a, b = torch.randn(2, 3), torch.randn(2, 3)
    turned, total = build(spec)(a, b)
    assert torch.equal(total, a + b + a)
    assert torch.equal(turned, torch.cat([b, a], 1).reshape(2, 3, 2).permute(0, 2, 1))
    turned2, total2 = load_generated(codegen(spec))()(a, b)
    assert torch.equal(turned, turned2) and torch.equal(total, total2)


def test_generated_source_is_readable_and_imports_only_torch(
    load_example: Callable[[str], dict[str, Any]],
) -> None:
    source = codegen(load_example("tiny_transformer"), class_name="TinyTransformer")
    tree = ast.parse(source)
    imported = {
        alias.name.split(".")[0]
        for n in ast.walk(tree)
        if isinstance(n, ast.Import | ast.ImportFrom)
        for alias in n.names
    }
    modules = {
        n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module
    }
    assert imported | modules <= {"torch", "nn"}
    assert "class TinyTransformer(nn.Module):" in source
    assert "self.proj = nn.Linear(in_features=8, out_features=32, bias=True)" in source
    assert "proj = self.proj(rows)  # (B, 8, 32)" in source
    assert "engine" not in source


def test_generated_wrappers_match_for_recurrent_and_attention_layers() -> None:
    spec = {
        "version": 1,
        "inputs": [{"id": "seq", "shape": [6, 4]}],
        "nodes": [
            {
                "id": "lstm",
                "op": "LSTM",
                "params": {"hidden_size": 4, "bidirectional": True, "num_layers": 2},
                "inputs": ["seq"],
            },
            {
                "id": "attn",
                "op": "MultiheadAttention",
                "params": {"num_heads": 2},
                "inputs": ["lstm"],
            },
            {
                "id": "gru",
                "op": "GRU",
                "params": {"hidden_size": 3, "output": "last"},
                "inputs": ["attn"],
            },
        ],
        "outputs": ["gru"],
    }
    source = codegen(spec)
    assert (
        "class LSTMLayer(nn.LSTM):" in source
        and "class SelfAttention(nn.MultiheadAttention):" in source
    )
    model = build(spec).eval()
    generated = load_generated(source)().eval()
    generated.load_state_dict(model.state_dict(), strict=True)
    x = torch.randn(2, 6, 4)
    with torch.no_grad():
        assert torch.equal(model(x), generated(x))
        assert model(x).shape == (2, 3)


def test_dead_nodes_are_left_out_of_the_model() -> None:
    spec = {
        "version": 1,
        "inputs": [{"id": "x", "shape": [4]}],
        "nodes": [
            {"id": "used", "op": "Linear", "params": {"out_features": 2}, "inputs": ["x"]},
            {"id": "dead", "op": "Linear", "params": {"out_features": 2}, "inputs": ["x"]},
        ],
        "outputs": ["used"],
    }
    assert list(build(spec).state_dict()) == ["used.weight", "used.bias"]
    assert "dead" not in codegen(spec)
