"""The graph spec: parsing, hashing, schema."""

from __future__ import annotations

import json

import pytest

from engine.spec import GraphSpec, SpecError, graph_json_schema, parse_spec, spec_hash

MLP = {
    "version": 1,
    "inputs": [{"id": "x", "shape": [4]}],
    "nodes": [{"id": "fc1", "op": "Linear", "params": {"out_features": 3}, "inputs": ["x"]}],
    "outputs": ["fc1"],
}


def test_parse_accepts_dict_text_and_bytes() -> None:
    text = json.dumps(MLP)
    for form in (MLP, text, text.encode()):
        spec = parse_spec(form)
        assert isinstance(spec, GraphSpec)
        assert spec.nodes[0].params == {"out_features": 3}
        assert spec.inputs[0].dtype == "float32"


def test_hash_ignores_layout_and_ui_but_not_params() -> None:
    base = spec_hash(MLP)
    moved = {**MLP, "layout": {"fc1": {"x": 10, "y": 20}}, "ui": {"title": "mine"}}
    changed = json.loads(json.dumps(MLP))
    changed["nodes"][0]["params"]["out_features"] = 4
    assert spec_hash(moved) == base
    assert spec_hash(changed) != base
    assert len(base) == 64 and int(base, 16) >= 0


def test_not_json_names_line_and_column() -> None:
    with pytest.raises(SpecError) as err:
        parse_spec('{"version": 1,\n  "inputs": [}')
    assert "not JSON" in str(err.value) and "line 2" in str(err.value)


@pytest.mark.parametrize("document", ["[1, 2]", "null", "3", '"text"'])
def test_json_that_is_not_an_object_is_refused(document: str) -> None:
    with pytest.raises(SpecError, match="expected a JSON object"):
        parse_spec(document)


def test_wrong_structure_names_each_path() -> None:
    bad = {
        "version": 3,  # 1 and 2 exist (2 carries blocks)
        "inputs": [{"id": "x", "shape": ["4"]}],
        "nodes": [{"id": "a", "op": "ReLU", "inputs": ["x"], "colour": "red"}],
        "outputs": "a",
    }
    with pytest.raises(SpecError) as err:
        parse_spec(bad)
    paths = {p["path"] for p in err.value.problems}
    assert {"version", "inputs[0].shape[0]", "nodes[0].colour", "outputs"} <= paths


def test_extra_top_level_key_is_refused_but_ui_is_free_form() -> None:
    with pytest.raises(SpecError) as err:
        parse_spec({**MLP, "comment": "hi"})
    assert err.value.problems[0]["path"] == "comment"
    spec = parse_spec({**MLP, "ui": {"anything": [1, {"deep": True}]}})
    assert spec.ui["anything"][1]["deep"] is True


def test_bool_is_not_an_integer_dimension() -> None:
    with pytest.raises(SpecError) as err:
        parse_spec({**MLP, "inputs": [{"id": "x", "shape": [True]}]})
    assert err.value.problems[0]["path"] == "inputs[0].shape[0]"


def test_50_megabyte_spec_is_refused_before_parsing() -> None:
    huge = b"[" + b"0," * (25 * 1024 * 1024) + b"0]"
    with pytest.raises(SpecError, match="too large"):
        parse_spec(huge)


def test_size_cap_is_configurable() -> None:
    text = json.dumps(MLP)
    with pytest.raises(SpecError, match="too large"):
        parse_spec(text, max_bytes=10)
    assert parse_spec(text, max_bytes=len(text)).outputs == ["fc1"]


@pytest.mark.parametrize(
    "document", ['{"a": NaN}', '{"a": Infinity}', "[" * 100_000 + "]" * 100_000, b"\xff\xfe{"]
)
def test_hostile_json_is_a_spec_error(document: str | bytes) -> None:
    with pytest.raises(SpecError):
        parse_spec(document)


def test_json_schema_describes_the_spec() -> None:
    schema = graph_json_schema()
    top = {"version", "inputs", "nodes", "outputs", "blocks", "layout", "ui"}
    assert set(schema["properties"]) == top
    node = schema["$defs"]["NodeSpec"]
    assert node["additionalProperties"] is False
    assert node["properties"]["id"]["pattern"].startswith("^[A-Za-z_]")
    json.dumps(schema)


def test_references_split_into_node_and_port() -> None:
    from engine.spec import port_ref, split_ref

    assert split_ref("split1:1") == ("split1", 1)
    assert split_ref("fc1") == ("fc1", None)
    assert split_ref("a:b") == ("a:b", None)  # not a port: stays one (dangling) id
    assert split_ref("a:01") == ("a:01", None)
    assert port_ref("split1", 0) == "split1:0" and port_ref("fc1", None) == "fc1"
    parsed = parse_spec({**MLP, "outputs": ["fc1:0"]})
    assert parsed.outputs == ["fc1:0"]
