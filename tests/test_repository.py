"""Promises about the repository as a whole: deployment shape and part boundaries."""

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
COMPOSE_SCHEMA = ROOT.parent / "shared" / "compose-spec.schema.json"


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


@pytest.mark.skipif(not COMPOSE_SCHEMA.exists(), reason="../shared/compose-spec.schema.json is absent")
def test_compose_file_matches_the_compose_specification(compose):
    schema = json.loads(COMPOSE_SCHEMA.read_text())
    jsonschema.validate(compose, schema)


def test_training_workers_reserve_a_gpu_and_short_work_has_its_own_queue(compose):
    services = compose["services"]
    devices = services["worker-train"]["deploy"]["resources"]["reservations"]["devices"]
    assert devices[0]["capabilities"] == ["gpu"]
    assert "train" in services["worker-train"]["command"]
    assert "short" in services["worker-short"]["command"]
    assert {"db", "redis", "web"} <= services.keys()


def test_compose_commands_name_modules_that_exist(compose):
    assert (ROOT / "webapp" / "celery.py").exists()
    web = " ".join(compose["services"]["web"]["command"])
    # The web service runs the one server launcher, which serves webapp.asgi:application.
    assert "python -m webapp.serve" in web and (ROOT / "webapp" / "serve.py").exists()
    from webapp.serve import APP

    assert APP == "webapp.asgi:application" and (ROOT / "webapp" / "asgi.py").exists()


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
