"""Formats for other runtimes: `.pt2` and int8 load in a plain process and keep their measured
accuracy; nothing in them is unpickled."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import zipfile

import pytest
import torch
from safetensors.torch import save_file

from engine.data import DataRecipe, load_dataset
from engine.export import export_dir, load_exported
from engine.export.formats import FormatError, build_formats, load_pt2, pt2_check
from engine.train import train
from tests.engine.export.test_export import _spec, torch_only_path


@pytest.fixture(scope="module")
def iris_export(tmp_path_factory):
    """The example iris MLP after a few epochs, exported, with its formats built and measured."""
    iris = load_dataset(DataRecipe.model_validate({"source": {"kind": "builtin", "name": "iris"}}))
    spec = _spec("iris_mlp")
    cfg = {"epochs": 20, "optimizer": {"lr": 0.01}}
    result = train(spec, iris, cfg)
    out = export_dir(result.model, spec, cfg, result.metrics, tmp_path_factory.mktemp("iris"),
                     data_info=iris.info, onnx=False)
    parsed, model = load_exported(out)
    seen: list[float] = []
    formats = build_formats(model, parsed, out, ["pt2", "int8"], test=iris.test, task="classification",
                            repeats=20, progress=seen.append)
    return iris, model, out, formats, seen


CHILD = r"""
import importlib.util, json, sys
sys.path = [p for p in sys.path if 'site-packages' not in p] + [SITE]
for banned in ('engine', 'django', 'webapp', 'netloom'):
    assert importlib.util.find_spec(banned) is None, banned + ' is importable'
import torch, torchao
from safetensors.torch import load_file
data = load_file(DATA)
x, y = data['x'], data['y']
answer = {}
for name in ('model.pt2', 'model.int8.pt2'):
    module = torch.export.load(FOLDER + '/' + name).module()
    with torch.no_grad():
        out = module(x)
        one = module(x[:1])
    answer[name] = {'accuracy': (out.argmax(1) == y).float().mean().item(), 'outputs': out.tolist(),
                    'first': one.tolist()}
open(OUTPUT, 'w').write(json.dumps(answer))
print('ok', torch.__version__, torchao.__version__)
"""


def test_pt2_and_int8_load_in_a_plain_process_and_match_fp32_within_their_recorded_deltas(
    iris_export, tmp_path
):
    iris, model, out, formats, seen = iris_export
    assert seen[-1] == 1.0
    for fmt, name in (("pt2", "model.pt2"), ("int8", "model.int8.pt2")):
        record = formats[fmt]
        assert "error" not in record, record
        assert record["file"] == name and record["size"] == (out / name).stat().st_size
        assert record["metric"] == "accuracy" and record["rows"] == len(iris.test)
        assert set(record["latency_ms"]) == set(record["fp32_latency_ms"]) == {"b1", "b64"}
    # int8 weights: every Linear weight is stored as int8 (ScalarType CHAR) with a float scale.
    with zipfile.ZipFile(out / "model.int8.pt2") as archive:
        name = next(n for n in archive.namelist() if n.endswith("model_weights_config.json"))
        stored = json.loads(archive.read(name))["config"]
    linears = [n for n, m in model.named_modules() if isinstance(m, torch.nn.Linear)]
    assert linears and all(stored[f"{n}.parametrizations.weight.original0"]["tensor_meta"]["dtype"] == 2
                           and f"{n}.weight" not in stored for n in linears)

    x, y = iris.test.x.contiguous(), iris.test.y.contiguous()
    save_file({"x": x, "y": y}, tmp_path / "test.safetensors")
    site = torch_only_path(tmp_path, extra=("torchao",))
    code = (CHILD.replace("SITE", repr(str(site))).replace("FOLDER", repr(str(out)))
            .replace("DATA", repr(str(tmp_path / "test.safetensors")))
            .replace("OUTPUT", repr(str(tmp_path / "answer.json"))))
    proc = subprocess.run([sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    answer = json.loads((tmp_path / "answer.json").read_text())
    with torch.no_grad():
        want = model(x)
    fp32_accuracy = float((want.argmax(1) == y).float().mean())
    for fmt, name in (("pt2", "model.pt2"), ("int8", "model.int8.pt2")):
        record, got = formats[fmt], answer[name]
        outputs = torch.tensor(got["outputs"])
        assert abs(got["accuracy"] - fp32_accuracy) <= abs(record["accuracy_delta"]) + 1e-9, (fmt, got, record)
        assert float((outputs - want).abs().max()) <= record["max_abs_diff"] + 1e-5, fmt
        # The batch dimension is dynamic: one row answers as in the batch.
        assert torch.allclose(torch.tensor(got["first"]), outputs[:1], atol=1e-5)
    assert formats["pt2"]["accuracy_delta"] == 0.0 and formats["pt2"]["max_abs_diff"] < 1e-4


def test_an_archive_that_pickles_a_weight_is_refused(iris_export, tmp_path):
    from torchao.quantization import Int8WeightOnlyConfig, quantize_

    _, model, _, _, _ = iris_export
    quantized = copy.deepcopy(model)
    quantize_(quantized, Int8WeightOnlyConfig())  # a tensor subclass left wrapped: torch.export.save pickles it
    program = torch.export.export(quantized, (torch.zeros(2, 4),))
    torch.export.save(program, str(tmp_path / "model.int8.pt2"))
    with pytest.raises(FormatError, match="pickles"):
        load_pt2(tmp_path / "model.int8.pt2")
    with pytest.raises(FormatError, match="not a .pt2 archive"):
        pt2_check(tmp_path / "nothing.pt2")


def test_the_pt2_archive_is_json_and_raw_tensors(iris_export):
    _, _, out, _, _ = iris_export
    with zipfile.ZipFile(out / "model.pt2") as archive:
        names = archive.namelist()
        config = json.loads(next(archive.read(n) for n in names if n.endswith("model_weights_config.json")))
    assert any(n.endswith("models/model.json") for n in names)
    assert config["config"] and not any(v.get("use_pickle") for v in config["config"].values())


def test_an_unknown_format_is_refused(iris_export):
    iris, model, out, _, _ = iris_export
    parsed, _ = load_exported(out)
    with pytest.raises(FormatError, match="unknown format 'tflite'"):
        build_formats(model, parsed, out, ["tflite"], test=iris.test, task="classification")


@pytest.mark.slow
def test_aoti_compiles_for_this_cpu_and_answers_as_fp32_at_any_batch(iris_export):
    from engine.export.formats import load_format

    iris, model, out, _, _ = iris_export
    parsed, _ = load_exported(out)
    built = build_formats(model, parsed, out, ["aoti"], test=iris.test, task="classification", repeats=5)
    record = built["aoti"]
    assert "error" not in record, record
    assert record["accuracy_delta"] == 0.0 and record["max_abs_diff"] < 1e-4
    run = load_format("aoti", out / record["file"])
    with torch.no_grad():
        for rows in (1, 64):
            x = iris.test.x[:1].repeat(rows, 1)
            got = run(x)
            got = got[0] if isinstance(got, (list, tuple)) else got
            assert torch.allclose(got, model(x), atol=1e-4)
