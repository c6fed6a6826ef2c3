"""`python -m engine import`: existing nn.Modules -> specs that reproduce them with their weights."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors.torch import load_file, save_file
from torch import nn

from engine.build import build
from engine.cli import main
from engine.import_fx.convert import (
    InputShape,
    ModelImportError,
    import_module,
    instantiate,
    load_module_class,
)
from engine.validate import validate

ROOT = Path(__file__).resolve().parents[2]
MODELS = Path(__file__).resolve().parent / "import_models"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def model(target: str, **init: Any) -> nn.Module:
    path, name = target.split(":")
    return instantiate(load_module_class(f"{MODELS / path}:{name}"), init or None)


def randomise(module: nn.Module, seed: int = 1) -> None:
    """Trained-looking weights and running statistics, so a wrong copy cannot pass by luck."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, tensor in module.state_dict().items():
            if tensor.is_floating_point():
                values = torch.randn(tensor.shape, generator=generator) * 0.3
                if name.endswith("running_var"):
                    values = values.abs() + 0.5
                tensor.copy_(values)


def reproduce(
    module: nn.Module, spec: dict[str, Any], weights: dict[str, torch.Tensor], x: torch.Tensor
) -> None:
    report = validate(spec)
    assert report.valid, report.to_json()["errors"]
    built = build(spec)
    built.load_state_dict(weights, strict=True)
    module.eval()
    built.eval()
    with torch.no_grad():
        want, got = module(x), built(x)
    assert got.shape == want.shape
    assert torch.allclose(got, want, rtol=0, atol=1e-6), (got - want).abs().max()


def test_mlp_with_a_skip_connection_and_functional_calls(tmp_path: Path) -> None:
    mlp = model("mlp_skip.py:SkipMLP", features=16, hidden=24)
    randomise(mlp)
    result = import_module(mlp, [InputShape((4, 4))])
    assert result.ok, result.problems
    ops = {n["id"]: n["op"] for n in result.spec["nodes"]}
    # Ids are the fx node names: qualified module names, function names.
    assert ops["inp"] == "Linear" and ops["relu"] == "ReLU" and ops["add"] == "Add"
    assert ops["hidden_0"] == "Linear" and ops["hidden_1"] == "GELU"
    add = next(n for n in result.spec["nodes"] if n["id"] == "add")
    assert add["inputs"] == ["relu", "hidden_2"]  # h + self.hidden(h): the skip
    assert result.spec["inputs"] == [{"id": "x", "shape": [4, 4], "dtype": "float32"}]
    assert set(result.state_dict) >= {"inp.weight", "hidden_0.bias", "norm.weight", "head.weight"}
    reproduce(mlp, result.spec, result.state_dict, torch.randn(5, 4, 4))


def test_cnn_with_batchnorm_and_residual_blocks_through_the_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cnn = model("cnn_resnet.py:SmallResNet")
    randomise(cnn, seed=2)
    weights = tmp_path / "trained.safetensors"
    save_file({k: v.contiguous() for k, v in cnn.state_dict().items()}, weights)
    spec_path, init_path = tmp_path / "spec.json", tmp_path / "init.safetensors"
    code, out, err = run(
        capsys,
        "import",
        f"{MODELS / 'cnn_resnet.py'}:SmallResNet",
        "--input-shape",
        "1,28,28",
        "--weights",
        str(weights),
        "--out",
        str(spec_path),
        "--weights-out",
        str(init_path),
    )
    assert code == 0, err
    assert f"wrote {spec_path}" in out and "reproduces the module's outputs" in out
    spec = json.loads(spec_path.read_text())
    ops = [n["op"] for n in spec["nodes"]]
    assert ops.count("BatchNorm2d") == 8 and ops.count("Add") == 3
    ids = {n["id"] for n in spec["nodes"]}
    # Nested blocks keep their path: layer1[0].conv1 -> layer1_0_conv1; the shortcut conv too.
    assert {"layer1_0_conv1", "layer1_1_bn2", "layer2_shortcut_0", "fc"} <= ids
    state = load_file(init_path)
    assert "layer1_0_bn1.running_var" in state and "layer2_shortcut_1.weight" in state
    reproduce(cnn, spec, state, torch.randn(3, 1, 28, 28))


def test_transformer_encoder_over_token_ids(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    encoder = model("transformer.py:TinyEncoder", vocab=40)
    randomise(encoder, seed=3)
    result = import_module(encoder, [InputShape((12,), "int64")])
    assert result.ok, result.problems
    ops = [(n["id"], n["op"]) for n in result.spec["nodes"]]
    assert ops[0] == ("embed", "Embedding")
    # nn.TransformerEncoder(layer, 2) becomes its two layers, then the extra norm_first block.
    assert [i for i, op in ops if op == "TransformerEncoderLayer"] == [
        "encoder_layers_0",
        "encoder_layers_1",
        "block",
    ]
    block = next(n for n in result.spec["nodes"] if n["id"] == "block")
    assert block["params"]["norm_first"] is True and block["params"]["activation"] == "gelu"
    assert result.spec["inputs"][0]["dtype"] == "int64"
    ids = torch.randint(0, 40, (4, 12), generator=torch.Generator().manual_seed(0))
    reproduce(encoder, result.spec, result.state_dict, ids)

    code, out, err = run(
        capsys,
        "import",
        f"{MODELS / 'transformer.py'}:TinyEncoder",
        "--input-shape",
        "12",
        "--input-dtype",
        "int64",
        "--init-args",
        '{"vocab": 40}',
        "--out",
        str(tmp_path / "enc.json"),
    )
    assert code == 0, err
    assert validate(json.loads((tmp_path / "enc.json").read_text())).valid


def test_token_ids_are_found_without_a_dtype_flag_when_an_embedding_reads_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A newcomer runs the README's command as for an image model: no --input-dtype.
    code, out, err = run(
        capsys,
        "import",
        f"{MODELS / 'transformer.py'}:TinyEncoder",
        "--input-shape",
        "12",
        "--init-args",
        '{"vocab": 40}',
        "--out",
        str(tmp_path / "enc.json"),
    )
    assert code == 0, err
    assert "input ids feeds embed (an embedding): traced as int64 token ids" in err
    spec = json.loads((tmp_path / "enc.json").read_text())
    assert spec["inputs"][0]["dtype"] == "int64" and validate(spec).valid
    assert "reproduces the module's outputs" in out


def test_ids_that_reach_an_embedding_through_another_op_get_the_dtype_flag_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["import", f"{MODELS / 'transformer.py'}:GridIds", "--input-shape", "2,3",
            "--out", str(tmp_path / "ids.json")]
    code, out, err = run(capsys, *argv)
    assert code == 2 and not (tmp_path / "ids.json").exists()
    assert "add `--input-dtype int64`" in err
    assert "Traceback" not in err

    code, out, err = run(capsys, *argv, "--input-dtype", "int64")
    assert code == 0, err
    assert json.loads((tmp_path / "ids.json").read_text())["inputs"][0]["dtype"] == "int64"


def test_unsupported_layers_are_each_reported_by_name_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec_path = tmp_path / "spec.json"
    code, out, err = run(
        capsys,
        "import",
        f"{MODELS / 'unsupported.py'}:Mixed",
        "--input-shape",
        "8",
        "--out",
        str(spec_path),
    )
    assert code == 1
    assert not spec_path.exists()
    lines = [line.strip() for line in err.splitlines()[1:]]
    source = (MODELS / "unsupported.py").read_text().splitlines()

    def line_of(text: str) -> int:
        return next(i for i, line in enumerate(source, start=1) if text in line)

    # The custom layer's raw parameter, torch.fft inside a nested module, and nn.Hardtanh.
    assert any(
        line.startswith(f"unsupported.py:{line_of('return x * self.gain')}: self.scale.gain")
        and "inside scale: Scale" in line
        for line in lines
    ), lines
    assert any(
        line.startswith(
            f"unsupported.py:{line_of('torch.fft.fft(x)')}: torch.fft.fft has no catalog op"
        )
        for line in lines
    ), lines
    assert any(
        line.startswith(
            f"unsupported.py:{line_of('self.clip(x)')}: clip (nn.Hardtanh) is not in the catalog"
        )
        for line in lines
    ), lines
    assert "nothing written" in err.splitlines()[0]


def test_untraceable_model_names_the_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(
        capsys,
        "import",
        f"{MODELS / 'unsupported.py'}:Branchy",
        "--input-shape",
        "4",
        "--out",
        str(tmp_path / "s.json"),
    )
    assert code == 2
    assert "torch.fx cannot trace Branchy" in err and "if x.sum() > 0:" in err


def test_refusals_name_what_the_spec_cannot_say(tmp_path: Path) -> None:
    class Scaled(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(6, 6)

        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
            y = self.fc(x) / 2  # a constant: no catalog op
            y = y[:, :3]  # slicing: no catalog op
            # shared weights; flattening the batch into the sample
            return self.fc(x), y, torch.flatten(x)

    result = import_module(Scaled(), [InputShape((6,))])
    text = "\n".join(result.problems)
    assert "the operator / has no catalog op" in text
    assert "indexing or slicing a tensor" in text
    assert "'start_dim' 0 is the batch dimension" in text
    assert "fc (nn.Linear) is called 2 times" in text
    assert all("test_import.py:" in line for line in result.problems), result.problems


def test_bad_targets_are_clear_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ModelImportError, match="has no nn.Module class 'Nope'.*SkipMLP"):
        load_module_class(f"{MODELS / 'mlp_skip.py'}:Nope")
    with pytest.raises(ModelImportError, match="no such file"):
        load_module_class("missing.py:Net")
    code, _, err = run(
        capsys,
        "import",
        f"{MODELS / 'mlp_skip.py'}:SkipMLP",
        "--input-shape",
        "16",
        "--input-shape",
        "3",
        "--out",
        str(tmp_path / "s.json"),
    )
    assert code == 2 and "forward takes 1 input(s) (x)" in err


def test_python_m_engine_import_help_says_the_code_runs_locally() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "engine", "import", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr
    assert "the server never runs uploaded code" in " ".join(done.stdout.split())


@pytest.mark.parametrize(
    ("name", "shape"),
    [("Seq", (6, 6)), ("Img", (3, 6, 6))],
)
def test_recurrent_attention_ports_and_shape_functions(name: str, shape: tuple[int, ...]) -> None:
    module = model(f"assorted.py:{name}")
    randomise(module, seed=4)
    result = import_module(module, [InputShape(shape)])
    assert result.ok, result.problems
    assert validate(result.spec).valid
    built = build(result.spec)
    built.load_state_dict(result.state_dict, strict=True)
    built.eval()
    x = torch.randn(3, *shape, generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        want, got = module(x), built(x)
    want = want if isinstance(want, tuple) else (want,)
    got = got if isinstance(got, tuple) else (got,)
    assert len(got) == len(want)
    for a, b in zip(want, got, strict=True):
        assert torch.allclose(a, b, rtol=0, atol=1e-6)
    if name == "Seq":
        split = next(n for n in result.spec["nodes"] if n["op"] == "Split")
        concat = next(n for n in result.spec["nodes"] if n["op"] == "Concat")
        assert concat["inputs"] == [f"{split['id']}:1", f"{split['id']}:0"]
