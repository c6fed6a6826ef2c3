"""Promises about the repository as a whole: part boundaries (the deployment: tests/test_deploy.py)."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_the_engine_never_imports_the_service_layer():
    """import-linter's contracts (pyproject.toml) hold: engine is a plain PyTorch library."""
    linter = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run([str(linter)], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_engine_imports_without_django_celery_or_redis():
    code = (
        "import sys, engine.build, engine.validate, engine.codegen\n"
        "bad = [m for m in ('django', 'celery', 'channels', 'redis') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


@pytest.mark.parametrize("script", sorted(p.stem for p in (ROOT / "bench").glob("*.py")))
def test_every_bench_script_imports_and_has_a_main(script):
    """The speed scripts are not run by the suite; this keeps them from rotting unseen."""
    import importlib

    module = importlib.import_module(f"bench.{script}")
    assert callable(getattr(module, "main", None)) or script.endswith("_api"), script
