"""Property tests: random valid graphs build and run with exactly the inferred shapes;
random broken graphs give errors naming a node and never an exception."""

from __future__ import annotations

import copy
import math
from typing import Any

import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch.fx.passes.shape_prop import ShapeProp

from engine.build import build
from engine.codegen import codegen
from engine.ops import registry
from engine.validate import validate

PROPERTY_SETTINGS = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)

# Small values keep every generated model tiny; other parameters keep their defaults often.
SMALL_INTS: dict[str, tuple[int, int]] = {
    "out_features": (1, 12),
    "out_channels": (1, 8),
    "hidden_size": (1, 8),
    "embedding_dim": (1, 8),
    "num_embeddings": (5, 20),
    "kernel_size": (1, 4),
    "stride": (1, 3),
    "padding": (0, 2),
    "output_padding": (0, 1),
    "dilation": (1, 2),
    "groups": (1, 2),
    "num_layers": (1, 2),
    "num_heads": (1, 4),
    "nhead": (1, 4),
    "num_groups": (1, 4),
    "dim_feedforward": (2, 16),
    "dim": (-2, 1),
    "start_dim": (-2, 1),
    "end_dim": (-2, 1),
    "dim0": (-2, 1),
    "dim1": (-2, 1),
    "upscale_factor": (1, 2),
    "chunks": (1, 3),
    "split_size_or_sections": (1, 3),
    "num_parameters": (1, 3),
    "max_len": (4, 8),
    "size": (1, 7),
    "output_size": (1, 3),
}
OPS = [op.name for op in registry]


@st.composite
def param_values(draw: st.DrawFn, op_name: str, shape: tuple[int, ...]) -> dict[str, Any]:
    """Values for an op's parameters, drawn from its own parameter model."""
    params: dict[str, Any] = {}
    for p in registry[op_name].params:
        if not p.required and draw(st.booleans()):
            continue  # keep the default
        if p.name == "shape":  # Reshape: a factorisation of the element count
            total = math.prod(shape)
            divisors = [d for d in range(1, min(total, 16) + 1) if total % d == 0]
            d = draw(st.sampled_from(divisors))
            params["shape"] = draw(st.sampled_from([[-1], [total], [d, -1], [-1, d]]))
        elif p.name == "dims":  # Permute: a permutation of the input's dimensions
            params["dims"] = draw(st.permutations(list(range(len(shape)))))
        elif p.type == "int":
            lo, hi = SMALL_INTS.get(p.name, (int(p.min or 0), int(p.min or 0) + 3))
            params[p.name] = draw(st.integers(lo, hi))
        elif p.type == "float":
            params[p.name] = draw(st.sampled_from([0.0, 0.1, 0.5])) if p.max == 1.0 else 0.2
        elif p.type == "bool":
            params[p.name] = draw(st.booleans())
        elif p.type == "choice":
            params[p.name] = draw(st.sampled_from(list(p.choices or ())))
        elif p.type == "int_or_tuple":
            params[p.name] = draw(int_or_tuple(p))
        else:
            params[p.name] = draw(
                st.lists(st.integers(1, 3), min_size=p.min_items or 1, max_size=p.max_items or 2)
            )
    return params


@st.composite
def int_or_tuple(draw: st.DrawFn, p: Any) -> Any:
    """What PyTorch takes for a size: one int, one per dimension (None keeps one), or a word."""
    lo, hi = SMALL_INTS.get(p.name, (int(p.min or 0), int(p.min or 0) + 3))
    forms = ["int", "tuple"] + (["word"] if p.choices else [])
    form = draw(st.sampled_from(forms))
    if form == "int":
        return draw(st.integers(lo, hi))
    if form == "word":
        return draw(st.sampled_from(list(p.choices)))
    length = p.dims or draw(st.integers(p.min_items or 1, min(p.max_items or 3, 3)))
    item = st.one_of(st.none(), st.integers(lo, hi)) if p.item_nullable else st.integers(lo, hi)
    return draw(st.lists(item, min_size=length, max_size=length))


@st.composite
def valid_graphs(draw: st.DrawFn) -> dict[str, Any]:
    """A random DAG of mixed ops: each candidate node is kept only if the graph stays valid."""
    kind = draw(st.sampled_from(["vector", "image", "sequence", "tokens"]))
    shape = {
        "vector": [draw(st.integers(1, 10))],
        "image": [draw(st.integers(1, 3)), 6, 6],
        "sequence": [5, 4],
        "tokens": [6],
    }[kind]
    dtype = "int64" if kind == "tokens" else "float32"
    spec: dict[str, Any] = {
        "version": 1,
        "inputs": [{"id": "x", "shape": shape, "dtype": dtype}],
        "nodes": [],
        "outputs": ["x"],
    }
    shapes: dict[str, tuple[int, ...]] = {"x": tuple(shape)}
    for step in range(draw(st.integers(1, 12))):
        # Token ids only make sense to an Embedding; start those graphs with one.
        op = "Embedding" if step == 0 and kind == "tokens" else draw(st.sampled_from(OPS))
        lo, hi = registry[op].arity
        first = draw(st.sampled_from(sorted(shapes)))
        inputs = [first]
        if lo > 1:
            # Merges mostly pick partners of the same shape so that some of them are valid.
            same = [n for n, s in shapes.items() if s == shapes[first]]
            pool = same if draw(st.booleans()) else sorted(shapes)
            inputs += draw(st.lists(st.sampled_from(sorted(pool)), min_size=lo - 1, max_size=lo))
        node = {
            "id": f"{op.lower()}_{step}",
            "op": op,
            "inputs": inputs,
            "params": draw(param_values(op, shapes[first])),
        }
        candidate = copy.deepcopy(spec)
        candidate["nodes"].append(node)
        ports = registry[op].multi_output
        candidate["outputs"] = [f"{node['id']}:0" if ports else node["id"]]
        report = validate(candidate)
        if report.valid:
            spec = candidate
            info = report.nodes[node["id"]]
            if info.ports is not None:
                # Each output of a Split/Chunk is its own reference: "split_3:1".
                shapes.update({f"{node['id']}:{k}": s for k, s in enumerate(info.ports)})
            else:
                shapes[node["id"]] = tuple(report.outputs[node["id"]])
    ids = [ref for ref in shapes if ref != "x"] or ["x"]
    extra = draw(st.sampled_from(ids))
    spec["outputs"] = [ids[-1]] + ([extra] if extra != ids[-1] else [])
    return spec


def example_inputs(spec: dict[str, Any], batch: int = 3) -> list[torch.Tensor]:
    vocab = min(
        (n["params"]["num_embeddings"] for n in spec["nodes"] if n["op"] == "Embedding"), default=5
    )
    out = []
    for inp in spec["inputs"]:
        size = (batch, *inp["shape"])
        out.append(torch.randint(0, vocab, size) if inp["dtype"] == "int64" else torch.randn(size))
    return out


@PROPERTY_SETTINGS
@given(valid_graphs())
def test_valid_graphs_run_with_exactly_the_inferred_shapes(spec: dict[str, Any]) -> None:
    report = validate(spec)
    assert report.valid, report.summary()
    model = build(spec, seed=1).eval()
    xs = example_inputs(spec)
    with torch.no_grad():
        ShapeProp(model).propagate(*xs)
    for fx_node in model.graph.nodes:
        if fx_node.op in {"placeholder", "output"} or fx_node.name not in report.nodes:
            continue  # intermediate parts of a variadic Add/Mul
        info = report.nodes[fx_node.name]
        if info.ports is not None:  # several outputs: one tensor per port
            got = [tuple(m.shape) for m in fx_node.meta["tensor_meta"]]
            assert got == [(3, *s) for s in info.ports], fx_node.name
            continue
        assert tuple(fx_node.meta["tensor_meta"].shape) == (3, *info.shape), fx_node.name
    for name, module in model.named_children():
        assert sum(p.numel() for p in module.parameters()) == report.nodes[name].params, name
    assert sum(p.numel() for p in model.parameters()) == report.total_params


MUTATIONS = ["dangling", "cycle", "bad_type", "out_of_range", "unknown_op", "arity", "mismatch"]


@PROPERTY_SETTINGS
@given(valid_graphs(), st.sampled_from(MUTATIONS), st.data())
def test_broken_graphs_name_a_node_and_never_raise(
    spec: dict[str, Any], mutation: str, data: st.DataObject
) -> None:
    broken = copy.deepcopy(spec)
    nodes = broken["nodes"]
    if not nodes:
        nodes.append({"id": "only", "op": "Identity", "inputs": ["x"], "params": {}})
        broken["outputs"] = ["only"]
    victim = data.draw(st.sampled_from(nodes))
    expected = {
        "dangling": "dangling_input",
        "cycle": "cycle",
        "bad_type": "bad_param",
        "out_of_range": "bad_param",
        "unknown_op": "unknown_op",
        "arity": "arity",
        "mismatch": "shape_mismatch",
    }[mutation]
    if mutation == "dangling":
        victim["inputs"][0] = "missing_node"
    elif mutation == "cycle":
        victim["inputs"][0] = victim["id"]
    elif mutation == "bad_type":
        victim["op"], victim["params"] = "Linear", {"out_features": "many"}
    elif mutation == "out_of_range":
        victim["op"], victim["params"] = "Dropout", {"p": 3}
    elif mutation == "unknown_op":
        victim["op"] = "Convolution9d"
    elif mutation == "arity":
        victim["op"], victim["params"], victim["inputs"] = "Add", {}, victim["inputs"][:1]
    else:
        width = data.draw(st.integers(1, 4))
        nodes.append(
            {"id": "left", "op": "Linear", "params": {"out_features": width}, "inputs": ["x"]}
        )
        nodes.append(
            {"id": "right", "op": "Linear", "params": {"out_features": width + 1}, "inputs": ["x"]}
        )
        nodes.append({"id": "joined", "op": "Add", "inputs": ["left", "right"], "params": {}})
        broken["outputs"].append("joined")
        if broken["inputs"][0]["dtype"] == "int64":
            expected = "dtype_mismatch"
    report = validate(broken)
    assert not report.valid
    known_ids = {n["id"] for n in nodes} | {"x"}
    assert all(e.node in known_ids for e in report.errors), report.errors
    assert expected in {e.code for e in report.errors}


def assert_codegen_reproduces(spec: dict[str, Any]) -> None:
    """The generated source with the built model's weights gives exactly the same outputs."""
    model = build(spec, seed=2).eval()
    namespace: dict[str, Any] = {"__name__": "generated_model"}
    exec(compile(codegen(spec), "model.py", "exec"), namespace)
    generated = namespace["Net"]().eval()
    generated.load_state_dict(model.state_dict(), strict=True)
    xs = example_inputs(spec)
    with torch.no_grad():
        want, got = model(*xs), generated(*xs)
    want = want if isinstance(want, tuple) else (want,)
    got = got if isinstance(got, tuple) else (got,)
    assert len(want) == len(got) == len(spec["outputs"])
    for a, b in zip(want, got, strict=True):
        # Exactly equal, NaN where the model gives NaN (a zero-variance norm with eps 0 does).
        torch.testing.assert_close(a, b, rtol=0, atol=0, equal_nan=True)


@PROPERTY_SETTINGS
@given(valid_graphs())
def test_generated_source_reproduces_random_graphs_exactly(spec: dict[str, Any]) -> None:
    assert_codegen_reproduces(spec)


@st.composite
def conv_stacks(draw: st.DrawFn) -> dict[str, Any]:
    """A CNN whose layers all use PyTorch's own size types: tuple kernels, padding "same"
    (or per-dimension padding), tuple pooling windows, and an adaptive pool to 1 or (1, None)."""
    spatial = draw(st.sampled_from([1, 2, 3]))
    size = {1: [12], 2: [7, 6], 3: [5, 4, 4]}[spatial]
    conv, pool, adaptive = {
        1: ("Conv1d", "MaxPool1d", "AdaptiveAvgPool1d"),
        2: ("Conv2d", "MaxPool2d", "AdaptiveAvgPool2d"),
        3: ("Conv3d", "MaxPool3d", "AdaptiveAvgPool2d"),
    }[spatial]
    kernel = st.lists(st.integers(1, 4), min_size=spatial, max_size=spatial)
    nodes: list[dict[str, Any]] = []
    prev = "x"
    for i in range(draw(st.integers(1, 4))):
        params: dict[str, Any] = {
            "out_channels": draw(st.integers(1, 4)),
            "kernel_size": draw(st.one_of(kernel, st.integers(1, 3))),
            "padding": "same",
        }
        if draw(st.booleans()):
            params["dilation"] = draw(
                st.one_of(
                    st.integers(1, 2),
                    st.lists(st.integers(1, 2), min_size=spatial, max_size=spatial),
                )
            )
        nodes.append({"id": f"conv{i}", "op": conv, "params": params, "inputs": [prev]})
        prev = f"conv{i}"
        if i < 2 and draw(st.booleans()):  # two halvings still leave every size >= 1
            window = [draw(st.integers(1, 2)) for _ in range(spatial)]
            nodes.append(
                {"id": f"pool{i}", "op": pool, "params": {"kernel_size": window}, "inputs": [prev]}
            )
            prev = f"pool{i}"
    if spatial == 3:  # fold depth into channels, then pool the image
        nodes.append(
            {
                "id": "fold",
                "op": "Flatten",
                "params": {"start_dim": 0, "end_dim": 1},
                "inputs": [prev],
            }
        )
        prev = "fold"
    target = draw(st.sampled_from([1, [1, None], [None, 1]] if spatial > 1 else [1, 2, [1]]))
    nodes.append({"id": "gap", "op": adaptive, "params": {"output_size": target}, "inputs": [prev]})
    nodes.append({"id": "flat", "op": "Flatten", "inputs": ["gap"]})
    nodes.append({"id": "head", "op": "Linear", "params": {"out_features": 3}, "inputs": ["flat"]})
    return {
        "version": 1,
        "inputs": [{"id": "x", "shape": [draw(st.integers(1, 3)), *size], "dtype": "float32"}],
        "nodes": nodes,
        "outputs": ["head"],
    }


@PROPERTY_SETTINGS
@given(conv_stacks())
def test_tuple_sizes_and_same_padding_validate_build_run_and_reproduce(
    spec: dict[str, Any],
) -> None:
    report = validate(spec)
    assert report.valid, report.summary()
    for node in spec["nodes"]:
        if node["op"].startswith("Conv"):  # "same" keeps every spatial size
            src = node["inputs"][0]
            assert report.nodes[node["id"]].shape[1:] == report.nodes[src].shape[1:]
    model = build(spec, seed=0).eval()
    with torch.no_grad():
        out = model(*example_inputs(spec))
    assert tuple(out.shape) == (3, 3)
    assert_codegen_reproduces(spec)
