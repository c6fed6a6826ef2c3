"""spec_to_ydoc / ydoc_to_spec: the shared document's shape, fixed by tests/data/collab_specs.json.

The fixture is shared with the browser's vitest (frontend/src/editor/collab/): for each case,
`doc` is what Y.Doc's toJSON gives for the seeded document and `derived` the spec read back.
Regenerate it after a deliberate change of the shape:

    .venv/bin/python -m tests.webapp.graphs.test_collab_doc --write
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from pycrdt import Doc, Map

from webapp.graphs.collab.doc import doc_json, edge_key, spec_to_ydoc, ydoc_to_spec

ROOT = Path(__file__).resolve().parents[3]
FIXTURE = ROOT / "tests" / "data" / "collab_specs.json"

_SMALL = {
    "version": 1,
    "inputs": [{"id": "x", "shape": [4], "dtype": "float32"}],
    "nodes": [
        {"id": "fc1", "op": "Linear", "params": {"out_features": 16}, "inputs": ["x"]},
        {"id": "act", "op": "ReLU", "inputs": ["fc1"]},
        {
            "id": "fc2",
            "op": "Linear",
            "params": {"out_features": 3, "bias": False},
            "inputs": ["act"],
        },
    ],
    "outputs": ["fc2"],
    "layout": {
        "x": {"x": 0, "y": 0},
        "fc1": {"x": 0, "y": 100},
        "act": {"x": 0, "y": 200},
        "fc2": {"x": 0, "y": 300},
    },
}


def edge_cases() -> list[tuple[str, dict[str, Any]]]:
    """Specs the examples do not cover: output nodes (one dangling), no layout, extra keys, empty."""
    output_nodes = copy.deepcopy(_SMALL)
    output_nodes["ui"] = {
        "title": "with output nodes",
        "output_nodes": [{"source": "fc2", "x": 0, "y": 400}, {"source": None, "x": 200, "y": 400}],
    }
    two_outputs = copy.deepcopy(_SMALL)
    two_outputs["outputs"] = ["fc2", "act"]
    two_outputs["ui"] = {
        "output_nodes": [{"source": "fc2", "x": 0, "y": 400}, {"source": "act", "x": 150, "y": 300}]
    }
    no_layout = copy.deepcopy(_SMALL)
    del no_layout["layout"]
    no_layout["description"] = "a top-level key the canvas does not know"
    concat = {
        "version": 1,
        "inputs": [{"id": "a", "shape": [3]}, {"id": "b", "shape": [5], "dtype": "float32"}],
        "nodes": [
            {
                "id": "halves",
                "op": "Split",
                "params": {"split_size_or_sections": [2, 1], "dim": -1},
                "inputs": ["a"],
            },
            {
                "id": "cat",
                "op": "Concat",
                "params": {"dim": -1},
                "inputs": ["b", "halves:1", "halves:0", "b"],
            },
        ],
        "outputs": ["cat", "halves:1"],
        "layout": {
            "a": {"x": 10, "y": 20},
            "b": {"x": 300, "y": 20},
            "halves": {"x": 10, "y": 140},
            "cat": {"x": 150, "y": 260},
        },
        "ui": {"zoom": 0.75},
    }
    # Inputs whose ids are not in alphabetical order: their order is the model's signature.
    two_inputs = {
        "version": 1,
        "inputs": [
            {"id": "x", "shape": [8], "dtype": "float32"},
            {"id": "a_mask", "shape": [8], "dtype": "float32"},
        ],
        "nodes": [{"id": "masked", "op": "Mul", "inputs": ["x", "a_mask"]}],
        "outputs": ["masked"],
        "layout": {
            "x": {"x": 0, "y": 0},
            "a_mask": {"x": 200, "y": 0},
            "masked": {"x": 100, "y": 120},
        },
    }
    empty = {"version": 1, "inputs": [], "nodes": [], "outputs": [], "layout": {}}
    return [
        ("output_nodes", output_nodes),
        ("two_outputs", two_outputs),
        ("no_layout_extra_key", no_layout),
        ("multi_output_refs_and_repeated_input", concat),
        ("inputs_not_alphabetical", two_inputs),
        ("empty", empty),
    ]


def cases() -> list[tuple[str, dict[str, Any]]]:
    examples = sorted((ROOT / "examples" / "specs").glob("*.json"))
    return [(path.stem, json.loads(path.read_text())) for path in examples] + edge_cases()


def fixture_entries() -> list[dict[str, Any]]:
    entries = []
    for name, spec in cases():
        doc = spec_to_ydoc(spec)
        entries.append(
            {"name": name, "spec": spec, "doc": doc_json(doc), "derived": ydoc_to_spec(doc)}
        )
    return entries


def _by_id(spec: dict[str, Any]) -> dict[str, Any]:
    """The spec with its node list keyed by id (the derived order is topological, ties by id)."""
    return {**spec, "nodes": {n["id"]: n for n in spec.get("nodes", [])}}


def test_the_fixture_is_what_the_functions_give() -> None:
    stored = json.loads(FIXTURE.read_text())
    assert stored == fixture_entries(), (
        "regenerate: python -m tests.webapp.graphs.test_collab_doc --write"
    )


@pytest.mark.parametrize(("name", "spec"), cases(), ids=[name for name, _ in cases()])
def test_round_trip_is_identity(name: str, spec: dict[str, Any]) -> None:
    derived = ydoc_to_spec(spec_to_ydoc(spec))
    expected = dict(spec)
    expected.setdefault("layout", {})
    assert _by_id(derived) == _by_id(expected)
    # Through the wire: the document's update applied to a fresh one gives the same.
    copy_doc = Doc()
    copy_doc.apply_update(spec_to_ydoc(spec).get_update())
    assert ydoc_to_spec(copy_doc) == derived


def test_examples_keep_their_node_order() -> None:
    for name, spec in cases():
        if name in dict(edge_cases()):
            continue
        assert [n["id"] for n in ydoc_to_spec(spec_to_ydoc(spec))["nodes"]] == [
            n["id"] for n in spec["nodes"]
        ], name


def test_edges_of_a_deleted_node_are_ignored_and_slots_compact() -> None:
    doc = spec_to_ydoc(edge_cases()[3][1])
    nodes, edges = doc.get("nodes", type=Map), doc.get("edges", type=Map)
    del nodes["halves"]  # its edges stay until someone cleans them up
    spec = ydoc_to_spec(doc)
    assert spec["nodes"] == [
        {"id": "cat", "op": "Concat", "params": {"dim": -1}, "inputs": ["b", "b"]}
    ]
    assert spec["outputs"] == ["cat"]  # the output wired to the deleted node is dangling now
    assert edge_key("halves:1", "cat", 1) in edges


def test_concurrent_delete_and_param_edit_converge_with_the_node_deleted() -> None:
    base = spec_to_ydoc(_SMALL)
    one, two = Doc(), Doc()
    one.apply_update(base.get_update())
    two.apply_update(base.get_update())
    del one.get("nodes", type=Map)["act"]
    two.get("nodes", type=Map)["act"]["params"]["inplace"] = True
    one.apply_update(two.get_update(one.get_state()))
    two.apply_update(one.get_update(two.get_state()))
    assert doc_json(one) == doc_json(two)
    assert "act" not in ydoc_to_spec(one)["layout"] and "act" not in doc_json(one)["nodes"]


def test_input_order_survives_the_document_and_the_wire() -> None:
    spec = dict(edge_cases())["inputs_not_alphabetical"]
    doc = spec_to_ydoc(spec)
    assert [i["id"] for i in ydoc_to_spec(doc)["inputs"]] == ["x", "a_mask"]
    copy_doc = Doc()
    copy_doc.apply_update(doc.get_update())
    assert [i["id"] for i in ydoc_to_spec(copy_doc)["inputs"]] == ["x", "a_mask"]
    # An input added later (a browser writes max + 1) comes last whatever its id.
    doc.get("inputs", type=Map)["aa"] = Map({"shape": [1], "order": 2})
    assert [i["id"] for i in ydoc_to_spec(doc)["inputs"]] == ["x", "a_mask", "aa"]


def test_inputs_without_order_come_after_those_with_one_by_id() -> None:
    doc = spec_to_ydoc(dict(edge_cases())["inputs_not_alphabetical"])
    inputs = doc.get("inputs", type=Map)
    inputs["b_old"] = Map({"shape": [1]})
    inputs["a_old"] = Map({"shape": [1]})
    assert [i["id"] for i in ydoc_to_spec(doc)["inputs"]] == ["x", "a_mask", "a_old", "b_old"]
    for input_id in ("x", "a_mask"):
        del inputs[input_id]["order"]  # a document stored before inputs had an order
    assert [i["id"] for i in ydoc_to_spec(doc)["inputs"]] == ["a_mask", "a_old", "b_old", "x"]


def test_junk_in_the_document_is_skipped_not_raised() -> None:
    doc = spec_to_ydoc(_SMALL)
    doc.get("nodes", type=Map)["junk"] = 5
    doc.get("edges", type=Map)["bad"] = Map({"source": 3, "target": "fc1", "slot": "x"})
    doc.get("outputs", type=Map)["out:x"] = Map({"source": "nowhere"})
    doc.get("meta", type=Map)["extra"] = "not an object"
    spec = ydoc_to_spec(doc)
    assert [n["id"] for n in spec["nodes"]] == ["fc1", "act", "fc2"]
    assert spec["outputs"] == ["fc2"]


if __name__ == "__main__" and "--write" in sys.argv:
    import django

    django.setup()
    FIXTURE.write_text(json.dumps(fixture_entries(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {FIXTURE}")
