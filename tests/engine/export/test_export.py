"""Export directories: what a user downloads must run without Netloom, exactly."""

from __future__ import annotations

import importlib.metadata as md
import io
import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from safetensors import safe_open
from safetensors.torch import save_file

from engine.data import DataRecipe, load_dataset
from engine.export import export_dir, export_onnx, load_exported, read_export_manifest, zip_export
from engine.train import train

SPECS = Path(__file__).resolve().parents[3] / "examples" / "specs"


def _spec(name: str) -> dict:
    return json.loads((SPECS / f"{name}.json").read_text())


@pytest.fixture(scope="module")
def digits():
    return load_dataset(DataRecipe.model_validate({"source": {"kind": "builtin", "name": "digits"}}))


@pytest.fixture(scope="module")
def trained_cnn(digits, tmp_path_factory):
    """The example digits CNN after one epoch, exported."""
    spec = _spec("digits_cnn")
    cfg = {"epochs": 1, "optimizer": {"lr": 0.01}}
    result = train(spec, digits, cfg)
    out = export_dir(result.model, spec, cfg, result.metrics, tmp_path_factory.mktemp("cnn"),
                     data_info=digits.info)
    return spec, result, out


def _top_level_names(dist: md.Distribution) -> set[str]:
    names = set()
    for f in dist.files or []:
        first = f.parts[0]
        if first.endswith((".dist-info", ".egg-info", ".pth")) or first in ("..", "__pycache__"):
            continue
        names.add(first)
    return names


def torch_only_path(tmp: Path, extra: tuple[str, ...] = ()) -> Path:
    """A directory holding only torch, safetensors (and `extra`) and what they require (symlinks)."""
    todo, seen = ["torch", "safetensors", *extra], set()
    site = tmp / "site"
    site.mkdir()
    while todo:
        name = re.split(r"[\s;<>=!~\[(]", todo.pop(), maxsplit=1)[0].lower().replace("_", "-")
        if name in seen:
            continue
        seen.add(name)
        dist = md.distribution(name)
        root = Path(dist.locate_file(""))
        for top in _top_level_names(dist):
            if not (site / top).exists():
                (site / top).symlink_to(root / top)
        for req in dist.requires or []:
            if "extra ==" not in req and "extra==" not in req:
                todo.append(req)
    assert {"torch", "safetensors"} <= {p.name for p in site.iterdir()}
    return site


CHILD = r"""
import importlib.util, json, sys
sys.path = [p for p in sys.path if 'site-packages' not in p] + [SITE]
for banned in ('engine', 'django', 'captum', 'torchmetrics', 'onnx', 'numpy'):
    assert importlib.util.find_spec(banned) is None, banned + ' is importable'
import torch
from safetensors.torch import load_file
spec = importlib.util.spec_from_file_location('model', EXPORT + '/model.py')
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
model = module.Net()
model.load_state_dict(load_file(EXPORT + '/model.safetensors'))
model.eval()
with torch.no_grad():
    logits = model(load_file(INPUTS)['x'])
# safetensors' writer wants numpy, which is not here: float32 -> Python float is exact.
open(OUTPUT, 'w').write(json.dumps(logits.tolist()))
print('ok', torch.__version__)
"""


def test_generated_source_and_weights_reproduce_logits_with_only_torch_and_safetensors(
    trained_cnn, digits, tmp_path
):
    spec, result, out = trained_cnn
    x = digits.test.x
    save_file({"x": x.contiguous()}, tmp_path / "x.safetensors")
    site = torch_only_path(tmp_path)
    code = CHILD.replace("SITE", repr(str(site))).replace("EXPORT", repr(str(out)))
    code = code.replace("INPUTS", repr(str(tmp_path / "x.safetensors")))
    code = code.replace("OUTPUT", repr(str(tmp_path / "logits.json")))
    proc = subprocess.run([sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.startswith("ok")
    model = result.model.eval()
    with torch.no_grad():
        want = model(x)
    got = torch.tensor(json.loads((tmp_path / "logits.json").read_text()), dtype=torch.float32)
    assert torch.equal(got, want)


def test_export_directory_contents(trained_cnn):
    spec, result, out = trained_cnn
    files = {p.name for p in out.iterdir()}
    assert {"model.safetensors", "model.py", "spec.json", "config.json", "metrics.json",
            "data.json", "export.json", "README.md", "model.onnx"} <= files
    with safe_open(str(out / "model.safetensors"), framework="pt") as f:
        meta = f.metadata()
        keys = set(f.keys())
    assert meta["netloom_format_version"] == "1"
    assert json.loads(meta["netloom_spec"])["outputs"] == ["logits"]
    assert {"conv1.weight", "bn1.running_mean", "logits.bias"} <= keys
    data = json.loads((out / "data.json").read_text())
    assert data["classes"] == [str(i) for i in range(10)]
    assert data["normalization"] == "standard" and len(data["mean"]) == 1
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["test/accuracy"] == result.metrics["test/accuracy"]
    assert json.loads((out / "config.json").read_text())["epochs"] == 1
    manifest = read_export_manifest(out)
    assert manifest["onnx"]["exported"] is True
    assert manifest["parameters"] == sum(p.numel() for p in result.model.parameters())


def test_onnx_runtime_agrees_with_torch(trained_cnn, digits):
    spec, result, out = trained_cnn
    onnx.checker.check_model(str(out / "model.onnx"))
    session = ort.InferenceSession(str(out / "model.onnx"), providers=["CPUExecutionProvider"])
    x = digits.test.x[:50]  # a batch size other than the one exported with
    (got,) = session.run(None, {"x": x.numpy()})
    with torch.no_grad():
        want = result.model.eval()(x).numpy()
    np.testing.assert_allclose(got, want, atol=1e-5, rtol=0)


def test_load_exported_gives_the_same_model_for_fine_tuning(trained_cnn, digits):
    spec, result, out = trained_cnn
    loaded_spec, model = load_exported(out)
    assert [n.id for n in loaded_spec.nodes][0] == "conv1"
    with torch.no_grad():
        assert torch.equal(model(digits.test.x), result.model.eval()(digits.test.x))
    # Continue training from the exported weights.
    more = train(loaded_spec, digits, {"epochs": 1}, model=model)
    assert more.status == "succeeded"


def test_zip_holds_the_export_without_checkpoints(trained_cnn, tmp_path):
    _, _, out = trained_cnn
    (out / "checkpoints" / "epoch-0001").mkdir(parents=True)
    (out / "checkpoints" / "epoch-0001" / "state.json").write_text("{}")
    data = zip_export(out)
    names = set(zipfile.ZipFile(io.BytesIO(data)).namelist())
    assert {"model.safetensors", "model.py", "export.json", "model.onnx"} <= names
    assert not any(n.startswith("checkpoints") for n in names)
    path = zip_export(out, tmp_path / "dl.zip")
    assert path == tmp_path / "dl.zip" and zipfile.is_zipfile(path)


class NotExportable(torch.nn.Module):
    """Uses histc, which has no ONNX translation in either exporter."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)

    def forward(self, x):
        return torch.histc(self.fc(x), bins=3)


def test_a_graph_that_cannot_go_to_onnx_is_skipped_with_a_note(tmp_path):
    spec = _spec("iris_mlp")
    note = export_onnx(NotExportable(), spec, tmp_path / "model.onnx")
    assert note["exported"] is False
    assert note["note"] == "this graph could not be exported to ONNX"
    assert note["errors"][0].startswith("torchscript: UnsupportedOperatorError: Exporting the operator 'aten::histc'")
    assert note["errors"][1].startswith("dynamo: ")
    assert "\x1b" not in note["errors"][1]
    assert not list(tmp_path.iterdir())


def test_export_without_onnx_says_so(tmp_path):
    spec = _spec("iris_mlp")
    from engine.build import build

    out = export_dir(build(spec), spec, None, {}, tmp_path, onnx=False)
    manifest = read_export_manifest(out)
    assert manifest["onnx"] == {"exported": False, "note": "ONNX export was not asked for"}
    assert not (out / "model.onnx").exists() and not (out / "config.json").exists()
