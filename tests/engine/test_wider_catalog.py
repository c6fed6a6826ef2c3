"""The wider catalog end to end: each new op goes through validate, build, codegen and ONNX
with the same numbers, and the residual CNN written with PyTorch's own size types trains."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch

from engine.build import build
from engine.codegen import codegen
from engine.data import DataRecipe, load_dataset
from engine.export import export_dir, export_onnx
from engine.train import train
from engine.validate import validate

SPECS = Path(__file__).resolve().parents[2] / "examples" / "specs"


def chain(
    shape: list[int], steps: list[tuple[Any, ...]], outputs: list[str] | None = None
) -> dict[str, Any]:
    """x -> n0 -> n1 ...; a step is (op, params) or (op, params, [input refs])."""
    nodes, prev = [], "x"
    for i, (op, params, *refs) in enumerate(steps):
        nodes.append(
            {"id": f"n{i}", "op": op, "params": params, "inputs": refs[0] if refs else [prev]}
        )
        prev = f"n{i}"
    return {
        "version": 1,
        "inputs": [{"id": "x", "shape": shape, "dtype": "float32"}],
        "nodes": nodes,
        "outputs": outputs or [prev],
    }


GRAPHS: dict[str, dict[str, Any]] = {
    "conv3d_maxpool3d": chain(
        [2, 4, 6, 6],
        [
            ("Conv3d", {"out_channels": 3, "kernel_size": [3, 1, 3], "padding": "same"}),
            ("MaxPool3d", {"kernel_size": [1, 2, 2]}),
        ],
    ),
    "avgpool1d_adaptive1d": chain(
        [3, 12],
        [
            ("AvgPool1d", {"kernel_size": 3, "stride": 1, "padding": 1}),
            ("AdaptiveAvgPool1d", {"output_size": 4}),
        ],
    ),
    "adaptive_max_and_keep": chain(
        [3, 8, 6],
        [
            ("AdaptiveMaxPool2d", {"output_size": [2, None]}),
            ("AdaptiveAvgPool2d", {"output_size": 1}),
        ],
    ),
    "upsample_pixelshuffle": chain(
        [8, 3, 3],
        [
            ("Upsample", {}),
            ("Upsample", {"mode": "bilinear", "size": [7, 5]}),
            ("Conv2d", {"out_channels": 8, "kernel_size": [3, 1], "padding": [1, 0]}),
            ("PixelShuffle", {"upscale_factor": 2}),
        ],
    ),
    "dropout2d_instancenorm": chain(
        [3, 5, 5],
        [
            ("Dropout2d", {}),
            ("InstanceNorm2d", {"affine": True}),
            ("Flatten", {"start_dim": 1}),
            ("InstanceNorm1d", {}),
        ],
    ),
    "rmsnorm": chain([5, 8], [("RMSNorm", {})]),
    "activations": chain(
        [3, 4, 4],
        [
            ("PReLU", {"num_parameters": 3}),
            ("Mish", {}),
            ("Hardswish", {}),
            ("Softplus", {"beta": 2.0}),
        ],
    ),
    "shape_ops": chain(
        [1, 3, 4],
        [
            ("Transpose", {"dim0": 1, "dim1": 2}),
            ("Squeeze", {}),
            ("Unsqueeze", {"dim": -1}),
            ("Pad", {"pad": [0, 0, 1, 1, 2, 0], "mode": "replicate"}),
            ("Pad", {"pad": [1, 2], "value": 0.5}),
        ],
    ),
    "reductions": chain(
        [3, 4, 5],
        [
            ("Mean", {"dim": [1, 2], "keepdim": True}),
            ("Sum", {"dim": -1}),
            ("Max", {}),
        ],
    ),
    "matmul_sub": chain(
        [3, 4],
        [("Transpose", {}), ("MatMul", {}, ["n0", "x"]), ("Sub", {}, ["n1", "n1"])],
    ),
    "split_chunk_ports": chain(
        [6, 4],
        [
            ("Split", {"split_size_or_sections": [2, 4]}),
            ("Chunk", {"chunks": 2, "dim": -1}, ["n0:1"]),
            ("Mul", {}, ["n1:0", "n1:1"]),
        ],
        outputs=["n2", "n0:0", "n1:1"],
    ),
    "decoder_positions": chain(
        [5, 8],
        [
            ("PositionalEmbedding", {"max_len": 16}),
            ("TransformerDecoderLayer", {"nhead": 2, "dim_feedforward": 16}, ["n0", "x"]),
        ],
    ),
}


def _tuple(out: Any) -> tuple[torch.Tensor, ...]:
    return out if isinstance(out, tuple) else (out,)


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_new_ops_build_generate_and_export_with_the_same_numbers(name: str, tmp_path: Path) -> None:
    spec = GRAPHS[name]
    report = validate(spec)
    assert report.valid, report.summary()
    model = build(spec, seed=3).eval()
    x = torch.randn(2, *spec["inputs"][0]["shape"])
    with torch.no_grad():
        outs = _tuple(model(x))
    assert [tuple(o.shape[1:]) for o in outs] == [report.outputs[o] for o in spec["outputs"]]

    namespace: dict[str, Any] = {"__name__": "generated_model"}
    exec(compile(codegen(spec), "model.py", "exec"), namespace)
    generated = namespace["Net"]().eval()
    generated.load_state_dict(model.state_dict(), strict=True)
    with torch.no_grad():
        again = _tuple(generated(x))
    assert all(torch.equal(a, b) for a, b in zip(outs, again, strict=True))

    note = export_onnx(model, spec, tmp_path / "model.onnx")
    assert note["exported"], note
    assert note["onnxruntime_max_abs_diff"] < 1e-4


def test_split_ports_read_as_index_expressions_in_the_generated_source() -> None:
    source = codegen(GRAPHS["split_chunk_ports"])
    assert "n0 = torch.split(x, (2, 4), dim=1)  # (B, 2, 4), (B, 4, 4)" in source
    assert "n1 = torch.chunk(n0[1], 2, dim=2)" in source
    assert "n2 = n1[0] * n1[1]" in source
    assert "return n2, n0[0], n1[1]" in source


def test_generated_source_writes_sizes_as_a_person_would() -> None:
    spec = json.loads((SPECS / "digits_resnet_pytorch_sizes.json").read_text())
    source = codegen(spec)
    assert (
        "self.stem = nn.Conv2d(in_channels=1, out_channels=16, kernel_size=(3, 1), stride=1, "
        "padding='same', dilation=1, groups=1, bias=True)"
    ) in source
    assert "kernel_size=3, stride=1, padding=1," in source
    assert "self.pool = nn.AdaptiveAvgPool2d(output_size=1)" in source
    assert "[" not in source.split("class Net")[1].split("def forward")[0]  # tuples, never lists


def test_residual_cnn_with_pytorch_sizes_trains_on_digits_and_exports_to_onnx(
    tmp_path: Path,
) -> None:
    spec = json.loads((SPECS / "digits_resnet_pytorch_sizes.json").read_text())
    report = validate(spec)
    assert report.valid, report.summary()
    assert report.nodes["pool"].shape == (16, 1, 1)
    assert report.nodes["stem"].shape == (16, 8, 8)  # (3, 1) kernel, padding "same"
    digits = load_dataset(
        DataRecipe.model_validate(
            {"source": {"kind": "builtin", "name": "digits"}, "split": {"val": 0.2, "test": 0.0}}
        )
    )
    result = train(spec, digits, {"epochs": 4, "batch_size": 64, "optimizer": {"lr": 0.01}})
    assert result.status == "succeeded"
    assert result.metrics["val/accuracy"] > 0.6  # ten classes: chance is 0.1

    out = export_dir(
        result.model, spec, {"epochs": 4}, result.metrics, tmp_path, data_info=digits.info
    )
    onnx_note = json.loads((out / "export.json").read_text())["onnx"]
    assert onnx_note["exported"], onnx_note
    assert onnx_note["onnxruntime_max_abs_diff"] < 1e-4


def test_gated_split_example_trains_on_digits_through_its_ports() -> None:
    spec = json.loads((SPECS / "digits_gated_split.json").read_text())
    report = validate(spec)
    assert report.valid, report.summary()
    assert report.nodes["halves"].ports == ((64,), (64,))
    digits = load_dataset(
        DataRecipe.model_validate({"source": {"kind": "builtin", "name": "digits"}})
    )
    result = train(spec, digits, {"epochs": 3, "optimizer": {"lr": 0.01}})
    assert result.metrics["val/accuracy"] > 0.6
