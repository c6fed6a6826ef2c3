"""`python -m engine ops | schema | validate | codegen`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine.cli import main
from engine.ops import registry

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "specs" / "digits_cnn.json"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_python_m_engine_ops_lists_every_op_with_parameter_schemas() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "engine", "ops"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr
    catalog = json.loads(done.stdout)
    assert {op["name"] for op in catalog["ops"]} == set(registry.names())
    linear = next(op for op in catalog["ops"] if op["name"] == "Linear")
    assert linear["params"][0]["name"] == "out_features" and linear["params"][0]["required"] is True


def test_schema_prints_json_schema(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "schema")
    assert code == 0 and "NodeSpec" in json.loads(out)["$defs"]


def test_validate_valid_example_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "validate", str(EXAMPLE))
    report = json.loads(out)
    assert code == 0 and report["valid"] is True and report["outputs"] == {"logits": [10]}


def test_validate_invalid_spec_exits_1_with_report(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    spec = json.loads(EXAMPLE.read_text())
    spec["nodes"][0]["params"]["out_channels"] = -1
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(spec))
    code, out, _ = run(capsys, "validate", str(path))
    report = json.loads(out)
    assert code == 1
    assert report["errors"][0]["node"] == "conv1" and report["errors"][0]["field"] == "out_channels"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"version": 1, ', "not JSON"),
        ("[1, 2, 3]", "expected a JSON object"),
        ('{"inputs": [{"id": "x"}]}', "inputs[0].shape"),
    ],
)
def test_unreadable_specs_exit_2_with_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / "spec.json"
    path.write_text(content)
    code, out, err = run(capsys, "validate", str(path))
    assert code == 2 and out == ""
    assert message in err and err.count("\n") == 1


def test_fifty_megabyte_file_is_refused_without_reading_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "huge.json"
    with path.open("wb") as f:
        f.truncate(50 * 1024 * 1024)  # sparse: the size is real, the disk use is not
    code, _, err = run(capsys, "validate", str(path))
    assert code == 2 and "too large: 52428800 bytes" in err


def test_missing_file_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, "validate", str(tmp_path / "nope.json"))
    assert code == 2 and "cannot read" in err


def test_codegen_prints_source(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "codegen", str(EXAMPLE), "--class-name", "DigitsCNN")
    assert code == 0 and "class DigitsCNN(nn.Module):" in out
    compile(out, "model.py", "exec")


def test_no_command_prints_help_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys)
    assert code == 2 and "validate" in err
