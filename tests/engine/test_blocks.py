"""Blocks (spec version 2): a subgraph defined once, placed many times, nested; shapes flow
through instances, errors inside one name it and the inner node, build nests the parameter
names, codegen writes one class per block that reproduces the built model."""

from __future__ import annotations

import copy
import importlib.metadata as md
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors.torch import save_file

from engine.blocks import block_from_nodes, check_block
from engine.build import build
from engine.cli import main
from engine.codegen import codegen
from engine.data import DataRecipe, load_dataset
from engine.spec import SpecError, graph_json_schema, parse_spec, spec_hash
from engine.train import train
from engine.validate import validate

ROOT = Path(__file__).resolve().parents[2]
SPECS = ROOT / "examples" / "specs"


def resnet() -> dict[str, Any]:
    """examples/specs/resnet_blocks.json: a stem, ResBlock@1 three times, a linear head."""
    return json.loads((SPECS / "resnet_blocks.json").read_text())


def res_block(version: int = 1, **changes: Any) -> dict[str, Any]:
    return {**copy.deepcopy(resnet()["blocks"][0]), "version": version, **changes}


def node(node_id: str, op: str, inputs: list[str], **params: Any) -> dict[str, Any]:
    return {"id": node_id, "op": op, "params": params, "inputs": inputs}


def graph(
    nodes: list[dict[str, Any]],
    blocks: list[dict[str, Any]],
    outputs: list[str],
    shape: list[int] | None = None,
) -> dict[str, Any]:
    return {
        "version": 2,
        "inputs": [{"id": "x", "shape": shape or [1, 8, 8]}],
        "nodes": nodes,
        "outputs": outputs,
        "blocks": blocks,
    }


STAGE = {
    "name": "Stage",
    "version": 1,
    "params": [{"name": "channels", "default": 16}],
    "inputs": [{"id": "x"}],
    "nodes": [
        node("res1", "ResBlock@1", ["x"], channels={"$param": "channels"}),
        node("res2", "ResBlock@1", ["res1"], channels={"$param": "channels"}),
    ],
    "outputs": ["res2"],
}


def staged() -> dict[str, Any]:
    """stem -> Stage(ResBlock, ResBlock) -> head."""
    spec = resnet()
    spec["nodes"] = [
        *spec["nodes"][:2],
        node("stage1", "Stage@1", ["stem_act"], channels=16),
        node("pool", "AdaptiveAvgPool2d", ["stage1"]),
        node("flat", "Flatten", ["pool"]),
        node("logits", "Linear", ["flat"], out_features=10),
    ]
    spec["blocks"] = [res_block(), copy.deepcopy(STAGE)]
    spec["layout"] = {}
    return spec


def errors(spec: Any) -> list[dict[str, Any]]:
    report = validate(spec)
    assert not report.valid
    return report.to_json()["errors"]


def run_in_process(source: str, model: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    namespace: dict[str, Any] = {"__name__": "generated_model"}
    exec(compile(source, "model.py", "exec"), namespace)
    generated = namespace["Net"]().eval()
    generated.load_state_dict(model.state_dict(), strict=True)
    with torch.no_grad():
        return generated(x)


# ---------------------------------------------------------------- the residual network


def test_resnet_of_one_block_validates_with_shapes_through_each_instance() -> None:
    report = validate(resnet())
    assert report.valid, report.summary()
    assert report.warnings == []
    nodes = report.to_json()["nodes"]
    assert [nodes[f"res{i}"]["shape"] for i in (1, 2, 3)] == [[16, 8, 8]] * 3
    # Two 3x3 convs 16->16 with bias, two BatchNorms: 2 * 2320 + 2 * 32.
    assert nodes["res1"]["params"] == 4704 and nodes["res1"]["op"] == "ResBlock@1"
    model = build(resnet())
    assert report.total_params == sum(p.numel() for p in model.parameters())


def test_resnet_parameters_are_named_by_instance_then_inner_node() -> None:
    keys = list(build(resnet()).state_dict())
    assert keys[:4] == ["stem.weight", "stem.bias", "res1.conv1.weight", "res1.conv1.bias"]
    assert {"res2.bn2.running_mean", "res3.conv2.weight", "logits.weight"} <= set(keys)
    assert not any(k.startswith("conv1") for k in keys)


def test_resnet_trains_on_digits() -> None:
    digits = load_dataset(
        DataRecipe.model_validate(
            {"source": {"kind": "builtin", "name": "digits"}, "split": {"val": 0.2, "test": 0.0}}
        )
    )
    result = train(
        resnet(),
        digits,
        {"epochs": 1, "max_steps": 12, "batch_size": 64, "optimizer": {"lr": 0.01}},
    )
    assert result.status == "succeeded" and result.steps == 12
    assert result.metrics["val/accuracy"] > 0.1
    assert "res3.conv2.weight" in result.model.state_dict()


def test_codegen_writes_one_block_class_used_three_times() -> None:
    source = codegen(resnet())
    assert source.count("class ResBlock(nn.Module)") == 1
    assert source.count("= ResBlock(") == 3
    assert "self.res1 = ResBlock(channels=16)" in source
    # The class reads like hand-written code: its sizes follow the parameter.
    assert "self.conv1 = nn.Conv2d(in_channels=channels, out_channels=channels" in source
    assert "def __init__(self, channels: int = 16) -> None:" in source
    assert source.index("class ResBlock") < source.index("class Net")


def _torch_only_site(tmp: Path) -> Path:
    """A directory holding only torch, safetensors and what they require (symlinks)."""
    todo, seen, site = ["torch", "safetensors"], set(), tmp / "site"
    site.mkdir()
    while todo:
        name = re.split(r"[\s;<>=!~\[(]", todo.pop(), maxsplit=1)[0].lower().replace("_", "-")
        if name in seen:
            continue
        seen.add(name)
        dist = md.distribution(name)
        for f in dist.files or []:
            top = f.parts[0]
            if top.endswith((".dist-info", ".egg-info", ".pth")) or top in ("..", "__pycache__"):
                continue
            if not (site / top).exists():
                (site / top).symlink_to(Path(dist.locate_file("")) / top)
        todo += [r for r in dist.requires or [] if "extra ==" not in r and "extra==" not in r]
    return site


CHILD = r"""
import importlib.util, json, sys
sys.path = [p for p in sys.path if 'site-packages' not in p] + [SITE]
for banned in ('engine', 'pydantic', 'numpy'):
    assert importlib.util.find_spec(banned) is None, banned + ' is importable'
import torch
from safetensors.torch import load_file
spec = importlib.util.spec_from_file_location('model', 'model.py')
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
model = module.Net()
model.load_state_dict(load_file('model.safetensors'), strict=True)
model.eval()
with torch.no_grad():
    out = model(load_file('x.safetensors')['x'])
open('out.json', 'w').write(json.dumps(out.tolist()))
"""


def test_generated_source_reproduces_the_built_resnet_in_a_plain_process(tmp_path: Path) -> None:
    model = build(resnet(), seed=3)
    with torch.no_grad():  # move BatchNorm's running statistics off their initial values
        model.train()(torch.randn(32, 1, 8, 8))
    model.eval()
    x = torch.randn(6, 1, 8, 8)
    (tmp_path / "model.py").write_text(codegen(resnet()))
    save_file(
        {k: v.contiguous() for k, v in model.state_dict().items()}, tmp_path / "model.safetensors"
    )
    save_file({"x": x}, tmp_path / "x.safetensors")
    code = CHILD.replace("SITE", repr(str(_torch_only_site(tmp_path))))
    proc = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = torch.tensor(json.loads((tmp_path / "out.json").read_text()))
    with torch.no_grad():
        want = model(x)
    assert torch.allclose(got, want, atol=1e-6)


def test_cli_validates_and_codegens_a_v2_spec(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(SPECS / "resnet_blocks.json")
    assert main(["validate", path]) == 0
    assert json.loads(capsys.readouterr().out)["nodes"]["res3"]["shape"] == [16, 8, 8]
    assert main(["codegen", path]) == 0
    assert "class ResBlock(nn.Module)" in capsys.readouterr().out


# ---------------------------------------------------------------- nesting, variants


def test_nested_stage_of_two_resblocks_builds_and_codegens() -> None:
    spec = staged()
    report = validate(spec)
    assert report.valid, report.summary()
    assert report.nodes["stage1"].params == 2 * 4704
    model = build(spec).eval()
    keys = list(model.state_dict())
    assert "stage1.res1.conv1.weight" in keys and "stage1.res2.bn2.running_var" in keys
    source = codegen(spec)
    assert source.count("class ResBlock(nn.Module)") == 1
    assert source.count("class Stage(nn.Module)") == 1
    assert "self.res1 = ResBlock(channels=channels)" in source
    assert "self.stage1 = Stage(channels=16)" in source
    assert source.index("class ResBlock") < source.index("class Stage") < source.index("class Net")
    x = torch.randn(4, 1, 8, 8)
    with torch.no_grad():
        want = model(x)
    assert torch.equal(run_in_process(source, model, x), want)


def test_sizes_that_differ_between_instances_become_keyword_arguments() -> None:
    dense = {
        "name": "Dense",
        "version": 1,
        "params": [{"name": "width", "default": 8}],
        "inputs": [{"id": "x"}],
        "nodes": [
            node("fc", "Linear", ["x"], out_features={"$param": "width"}),
            node("act", "ReLU", ["fc"]),
        ],
        "outputs": ["act"],
    }
    spec = graph(
        [node("d1", "Dense@1", ["x"], width=12), node("d2", "Dense@1", ["d1"], width=5)],
        [dense],
        ["d2"],
        shape=[20],
    )
    model = build(spec).eval()
    source = codegen(spec)
    assert source.count("class Dense(nn.Module)") == 1
    assert "def __init__(self, width: int = 8, *, fc_in_features: int) -> None:" in source
    assert "self.d1 = Dense(width=12, fc_in_features=20)" in source
    assert "self.d2 = Dense(width=5, fc_in_features=12)" in source
    x = torch.randn(3, 20)
    with torch.no_grad():
        assert torch.equal(run_in_process(source, model, x), model(x))


def test_two_versions_of_one_block_get_two_classes() -> None:
    v2 = res_block(2)
    v2["nodes"][0]["params"]["kernel_size"] = 5
    v2["nodes"][0]["params"]["padding"] = 2
    spec = resnet()
    spec["blocks"].append(v2)
    spec["nodes"][3]["op"] = "ResBlock@2"
    model = build(spec).eval()
    source = codegen(spec)
    assert "class ResBlock(nn.Module)" in source and "class ResBlock_v2(nn.Module)" in source
    assert "self.res2 = ResBlock_v2(channels=16)" in source
    x = torch.randn(2, 1, 8, 8)
    with torch.no_grad():
        assert torch.equal(run_in_process(source, model, x), model(x))


def test_block_with_two_outputs_is_read_port_by_port() -> None:
    halves = {
        "name": "Halves",
        "version": 1,
        "inputs": [{"id": "x"}],
        "nodes": [
            node("split", "Split", ["x"], split_size_or_sections=4),
            node("act", "ReLU", ["split:1"]),
        ],
        "outputs": ["split:0", "act"],
    }
    spec = graph(
        [node("h", "Halves@1", ["x"]), node("sum", "Add", ["h:0", "h:1"])],
        [halves],
        ["sum"],
        shape=[8],
    )
    report = validate(spec)
    assert report.valid, report.summary()
    assert report.to_json()["nodes"]["h"]["ports"] == [[4], [4]]
    model = build(spec)
    x = torch.randn(2, 8)
    assert torch.equal(model(x), x[:, :4] + torch.relu(x[:, 4:]))
    assert torch.equal(run_in_process(codegen(spec), model, x), model(x))


# ---------------------------------------------------------------- errors


def test_shape_error_inside_an_instance_names_instance_and_inner_node() -> None:
    spec = resnet()
    spec["nodes"][3]["params"]["channels"] = 8  # res2: the skip adds 8 to 16 channels
    (problem,) = errors(spec)
    assert problem["node"] == "res2" and problem["path"] == ["res2", "skip"]
    assert problem["code"] == "shape_mismatch"
    assert problem["message"].startswith("in block ResBlock@1, node skip: Add needs equal shapes")


def test_bad_value_from_an_instance_parameter_points_at_that_parameter() -> None:
    spec = resnet()
    spec["nodes"][2]["params"]["channels"] = 0
    problems = errors(spec)
    assert {(p["node"], p["field"], tuple(p["path"])) for p in problems} == {
        ("res1", "channels", ("res1", "conv1")),
        ("res1", "channels", ("res1", "conv2")),
    }
    assert "Conv2d 'out_channels' must be at least 1, got 0" in problems[0]["message"]


def test_error_deep_inside_nested_blocks_has_the_whole_path() -> None:
    spec = staged()
    spec["blocks"][1]["nodes"][1]["params"]["channels"] = 4
    (problem,) = errors(spec)
    assert problem["node"] == "stage1"
    assert problem["path"] == ["stage1", "res2", "skip"]
    assert problem["message"].startswith(
        "in block Stage@1, node res2: in block ResBlock@1, node skip: "
    )


def test_unknown_block_names_the_node() -> None:
    spec = resnet()
    spec["nodes"][2]["op"] = "Foo@1"
    (problem,) = errors(spec)
    assert (problem["node"], problem["code"], problem["field"]) == ("res1", "unknown_op", "op")
    assert "unknown block 'Foo@1'" in problem["message"]
    spec["nodes"][2]["op"] = "ResBlock@4"
    assert "this spec has ResBlock@1" in errors(spec)[0]["message"]


def test_instance_parameters_unknown_is_an_error_missing_takes_the_default() -> None:
    spec = resnet()
    spec["nodes"][2]["params"] = {"chanels": 16}
    (problem,) = errors(spec)
    assert (problem["node"], problem["field"]) == ("res1", "chanels")
    assert "ResBlock@1 has no parameter 'chanels' (known: channels)" in problem["message"]
    spec["nodes"][2]["params"] = {}
    report = validate(spec)
    assert report.valid and report.resolved["res1"] == {"channels": 16}


def test_block_parameter_without_default_is_refused_where_it_is() -> None:
    spec = resnet()
    del spec["blocks"][0]["params"][0]["default"]
    with pytest.raises(SpecError) as caught:
        parse_spec(spec)
    assert [p["path"] for p in caught.value.problems] == ["blocks[0].params[0].default"]


def test_reference_to_an_undeclared_parameter_names_block_node_and_parameter() -> None:
    spec = resnet()
    spec["blocks"][0]["nodes"][3]["params"]["kernel_size"] = {"$param": "k"}
    (problem,) = errors(spec)
    assert problem["node"] == "res1" and problem["path"] == ["res1", "conv2"]
    assert problem["message"] == (
        "in block ResBlock@1, node conv2: 'kernel_size' refers to parameter 'k', which block "
        "ResBlock@1 does not declare (declared: channels)"
    )


def test_block_that_contains_itself_is_an_error_naming_the_cycle() -> None:
    inner = {
        "name": "Inner",
        "version": 1,
        "inputs": [{"id": "x"}],
        "nodes": [node("back", "ResBlock@1", ["x"])],
        "outputs": ["back"],
    }
    spec = resnet()
    spec["blocks"][0]["nodes"].append(node("loop", "Inner@1", ["act"]))
    spec["blocks"][0]["outputs"] = ["loop"]
    spec["blocks"].append(inner)
    problems = errors(spec)
    messages = [p["message"] for p in problems]
    assert "a block contains itself: ResBlock@1 -> Inner@1 -> ResBlock@1" in messages
    assert any(p["node"] == "res1" and p["code"] == "block_cycle" for p in problems)


def test_blocks_nested_more_than_eight_deep_are_refused() -> None:
    levels = [
        {
            "name": "L0",
            "version": 1,
            "inputs": [{"id": "x"}],
            "nodes": [node("act", "ReLU", ["x"])],
            "outputs": ["act"],
        }
    ]
    for i in range(1, 9):
        levels.append(
            {
                "name": f"L{i}",
                "version": 1,
                "inputs": [{"id": "x"}],
                "nodes": [node("inner", f"L{i - 1}@1", ["x"])],
                "outputs": ["inner"],
            }
        )
    assert validate(graph([node("top", "L7@1", ["x"])], levels[:8], ["top"], [4])).valid
    (problem,) = errors(graph([node("top", "L8@1", ["x"])], levels, ["top"], [4]))
    assert problem["node"] == "top" and problem["code"] == "too_deep"
    assert "blocks nest 9 deep (L8@1 -> L7@1 -> " in problem["message"]


def test_version_1_spec_with_blocks_is_refused_at_blocks() -> None:
    spec = resnet()
    spec["version"] = 1
    with pytest.raises(SpecError) as caught:
        parse_spec(spec)
    assert caught.value.problems == [{"path": "blocks", "message": "blocks need spec version 2"}]
    assert errors(spec)[0]["field"] == "blocks"


def test_wrong_number_of_instance_inputs() -> None:
    spec = resnet()
    spec["nodes"][3]["inputs"] = ["res1", "stem_act"]
    (problem,) = errors(spec)
    assert (problem["node"], problem["code"], problem["field"]) == ("res2", "arity", "inputs")
    assert problem["message"] == "ResBlock@1 takes 1 input (x), got 2"


def test_unused_block_is_a_warning() -> None:
    spec = resnet()
    spec["blocks"].append(res_block(2))
    report = validate(spec)
    assert report.valid
    assert [w.to_json() for w in report.warnings] == [
        {
            "node": None,
            "code": "unused_block",
            "field": "blocks",
            "message": "block ResBlock@2 is defined but not used",
        }
    ]


# ---------------------------------------------------------------- spec, hashing, schema


def test_v1_hash_ignores_an_empty_blocks_list_and_v2_ignores_block_layout() -> None:
    v1 = json.loads((SPECS / "digits_cnn.json").read_text())
    assert spec_hash({**v1, "blocks": []}) == spec_hash(v1)
    moved = resnet()
    moved["blocks"][0]["layout"] = {"conv1": {"x": 0, "y": 0}}
    moved["blocks"][0]["ui"] = {"color": "teal"}
    assert spec_hash(moved) == spec_hash(resnet())
    changed = resnet()
    changed["blocks"][0]["params"][0]["default"] = 32
    assert spec_hash(changed) != spec_hash(resnet())


def test_json_schema_describes_blocks() -> None:
    schema = graph_json_schema()
    assert schema["properties"]["version"]["enum"] == [1, 2]
    block = schema["$defs"]["BlockSpec"]
    assert {"name", "version", "params", "inputs", "nodes", "outputs"} <= set(block["properties"])
    assert block["additionalProperties"] is False
    assert "default" in schema["$defs"]["BlockParam"]["required"]


# ---------------------------------------------------------------- check_block


def test_check_block_alone_and_with_input_shapes() -> None:
    report = check_block(res_block())
    assert report.valid and report.warnings == []
    shaped = check_block(res_block(), input_shapes=[[16, 8, 8]])
    assert shaped.valid and shaped.nodes["act"].shape == (16, 8, 8)
    assert shaped.total_params == 4704
    wrong = check_block(res_block(), input_shapes=[[3, 8, 8]])
    assert [(e.node, e.code) for e in wrong.errors] == [("skip", "shape_mismatch")]


def test_check_block_reports_structure_problems_by_inner_node() -> None:
    bad = res_block()
    bad["nodes"][1]["op"] = "BatchNorm"
    bad["nodes"][2]["inputs"] = ["nowhere"]
    bad["nodes"][3]["params"]["padding"] = {"$param": "pad"}
    report = check_block(bad)
    assert {(e.node, e.code) for e in report.errors} == {
        ("bn1", "unknown_op"),
        ("act1", "dangling_input"),
        ("conv2", "bad_param"),
    }
    (unparsed,) = check_block({**res_block(), "version": 0}).errors
    assert unparsed.code == "not_a_spec" and unparsed.field == "block.version"


def test_check_block_uses_its_dependencies() -> None:
    missing = check_block(STAGE)
    assert [(e.node, e.code) for e in missing.errors] == [
        ("res1", "unknown_op"),
        ("res2", "unknown_op"),
    ]
    report = check_block(STAGE, dependencies=[res_block()], input_shapes=[[16, 4, 4]])
    assert report.valid, report.summary()
    assert report.nodes["res2"].shape == (16, 4, 4)


# ---------------------------------------------------------------- block_from_nodes


RESIDUAL_PART = ["conv_a", "bn_a", "act_a", "conv_b", "bn_b", "skip", "act"]


def test_block_from_nodes_keeps_the_model_with_its_weights_renamed() -> None:
    original = json.loads((SPECS / "residual_block.json").read_text())
    block, spec = block_from_nodes(
        original,
        RESIDUAL_PART,
        "ResBlock",
        {"channels": [("conv_a", "out_channels"), ("conv_b", "out_channels")]},
        instance_id="res1",
    )
    assert block.key == "ResBlock@1" and [i.id for i in block.inputs] == ["x"]
    assert block.outputs == ["act"] and block.params[0].default == 16
    assert block.nodes[0].params["out_channels"] == {"$param": "channels"}
    assert block.nodes[5].inputs == ["bn_b", "x"]
    assert spec["version"] == 2 and [b["name"] for b in spec["blocks"]] == ["ResBlock"]
    res1 = next(n for n in spec["nodes"] if n["id"] == "res1")
    assert res1 == {
        "id": "res1",
        "op": "ResBlock@1",
        "params": {"channels": 16},
        "inputs": ["stem_act"],
    }
    assert next(n for n in spec["nodes"] if n["id"] == "pool")["inputs"] == ["res1"]
    assert spec["layout"]["res1"] == original["layout"]["conv_a"]
    assert validate(spec).valid

    old, new = build(original, seed=1).eval(), build(spec, seed=2).eval()
    renamed = {
        (f"res1.{k}" if k.split(".")[0] in RESIDUAL_PART else k): v
        for k, v in old.state_dict().items()
    }
    assert set(renamed) == set(new.state_dict())
    new.load_state_dict(renamed, strict=True)
    x = torch.randn(5, 1, 8, 8)
    with torch.no_grad():
        assert torch.equal(new(x), old(x))


def test_block_from_nodes_refuses_selections_that_make_no_block() -> None:
    original = json.loads((SPECS / "residual_block.json").read_text())
    with pytest.raises(ValueError, match="'x' is a graph input"):
        block_from_nodes(original, ["x", "stem"], "B")
    with pytest.raises(ValueError, match="reads the selection and feeds"):
        block_from_nodes(original, ["stem_act", "skip"], "B")  # conv_a .. bn_b lie between
    with pytest.raises(ValueError, match="which differ"):
        block_from_nodes(
            original,
            RESIDUAL_PART,
            "B",
            {"c": [("conv_a", "out_channels"), ("conv_a", "kernel_size")]},
        )


def test_check_block_names_a_cycle_through_its_dependencies() -> None:
    back = {
        "name": "Back",
        "version": 1,
        "inputs": [{"id": "x"}],
        "nodes": [node("stage", "Stage@1", ["x"])],
        "outputs": ["stage"],
    }
    looping = copy.deepcopy(STAGE)
    looping["nodes"][1]["op"] = "Back@1"
    report = check_block(looping, dependencies=[res_block(), back])
    assert [(e.node, e.code, e.field, e.message) for e in report.errors] == [
        (
            None,
            "block_cycle",
            "dependencies",
            "a block contains itself: Stage@1 -> Back@1 -> Stage@1",
        )
    ]


def test_one_mistake_in_a_block_placed_side_by_side_stays_a_few_messages() -> None:
    wide = {
        "name": "Wide",
        "version": 1,
        "params": [{"name": "channels", "default": 16}],
        "inputs": [{"id": "x"}],
        "nodes": [
            node(f"r{i}", "ResBlock@1", ["x"], channels={"$param": "channels"}) for i in range(12)
        ]
        + [node("sum", "Add", [f"r{i}" for i in range(12)])],
        "outputs": ["sum"],
    }
    spec = graph([node("w", "Wide@1", ["x"], channels=0)], [res_block(), wide], ["w"], [16, 4, 4])
    problems = errors(spec)
    assert len(problems) == 11 and problems[-1]["code"] == "more_errors"
    assert problems[0]["path"] == ["w", "r0", "conv1"] and problems[0]["field"] == "channels"


def test_block_from_instances_nests_them_and_keeps_the_outputs() -> None:
    block, spec = block_from_nodes(
        resnet(),
        ["res1", "res2"],
        "Stage",
        {"channels": [("res1", "channels"), ("res2", "channels")]},
        instance_id="stage1",
    )
    assert [n.op for n in block.nodes] == ["ResBlock@1", "ResBlock@1"]
    assert [b["name"] for b in spec["blocks"]] == ["ResBlock", "Stage"]
    assert next(n for n in spec["nodes"] if n["id"] == "res3")["inputs"] == ["stage1"]
    old, new = build(resnet(), seed=1).eval(), build(spec, seed=2).eval()
    renamed = {
        (f"stage1.{k}" if k.split(".")[0] in ("res1", "res2") else k): v
        for k, v in old.state_dict().items()
    }
    new.load_state_dict(renamed, strict=True)
    x = torch.randn(3, 1, 8, 8)
    with torch.no_grad():
        assert torch.equal(new(x), old(x))
    assert "self.stage1 = Stage(channels=16)" in codegen(spec)
