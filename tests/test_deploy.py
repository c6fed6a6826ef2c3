"""The deployment, checked without a Docker engine: docker-compose.yml, .env.example, the Dockerfile,
`GET /healthz` and `make gpu-check` (docs/deploy.md).

The compose file is validated against the Compose specification's schema (tests/data/), every
command it runs must name a module or file of this project, every variable it sets must be one
that Netloom reads, and .env.example must name every variable it interpolates.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import re
import shlex
import socket
import subprocess
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import torch
import yaml

from webapp import queues

ROOT = Path(__file__).resolve().parents[1]
COMPOSE_FILE = ROOT / "docker-compose.yml"
COMPOSE_SCHEMA = ROOT / "tests" / "data" / "compose-spec.schema.json"
ENV_EXAMPLE = ROOT / ".env.example"
SERVICES = {"web", "worker-train", "worker-short", "worker-datasets", "beat", "redis", "postgres", "serving"}
# The modules whose environment reads count as "variables Netloom reads": the settings, and what
# the services run besides Django (the server launcher, the Celery app and tasks, the health check).
READERS = [
    ROOT / "webapp" / "settings.py",
    ROOT / "webapp" / "serve.py",
    ROOT / "webapp" / "celery.py",
    ROOT / "webapp" / "health.py",
    *sorted((ROOT / "serving").rglob("*.py")),
    *sorted((ROOT / "workers").rglob("*.py")),
]
ENV_HELPERS = {"env_bool", "env_int", "env_list"}


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return yaml.safe_load(COMPOSE_FILE.read_text())


@pytest.fixture(scope="module")
def services(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return compose["services"]


def netloom_services(services: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The services that run this project's image (built from the Dockerfile)."""
    return {name: service for name, service in services.items() if "build" in service}


def variables_read(path: Path) -> set[str]:
    """Environment variables a module reads: os.environ.get/[...]/setdefault, os.getenv, env_*."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func
            if isinstance(func, ast.Attribute):
                reads = (
                    ast.unparse(func.value) == "os.environ" and func.attr in {"get", "setdefault"}
                ) or (ast.unparse(func.value) == "os" and func.attr == "getenv")
            else:
                reads = getattr(func, "id", "") in ENV_HELPERS
            if reads and isinstance(node.args[0].value, str):
                names.add(node.args[0].value)
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            if ast.unparse(node.value) == "os.environ":
                names.add(str(node.slice.value))
    return names


def netloom_reads() -> set[str]:
    return set().union(*(variables_read(path) for path in READERS))


def settings_reads() -> set[str]:
    return {name for name in variables_read(ROOT / "webapp" / "settings.py") if name.isupper()}


def interpolated(value: Any) -> set[str]:
    """${NAME...} and $NAME in the compose file's values ($$ is a dollar for the container's shell)."""
    if isinstance(value, dict):
        return set().union(set(), *(interpolated(item) for item in value.values()))
    if isinstance(value, list):
        return set().union(set(), *(interpolated(item) for item in value))
    text = str(value).replace("$$", "")
    return set(re.findall(r"\$\{([A-Za-z_][A-Za-z0-9_]*)", text)) | set(
        re.findall(r"\$([A-Za-z_][A-Za-z0-9_]*)", text)
    )


def env_example_names() -> tuple[set[str], set[str]]:
    """(names set in .env.example, names only listed in comments as `# NAME=`)."""
    assigned, commented = set(), set()
    for line in ENV_EXAMPLE.read_text().splitlines():
        if match := re.match(r"^([A-Z][A-Z0-9_]*)=", line):
            assigned.add(match.group(1))
        elif match := re.match(r"^#\s*([A-Z][A-Z0-9_]*)=", line):
            commented.add(match.group(1))
    return assigned, commented


def commands(service: dict[str, Any]) -> list[list[str]]:
    """Each program a service runs (its command and its health check), as an argument list."""
    found: list[list[str]] = []

    def add_shell(script: str) -> None:
        for part in re.split(r"&&|\|\||;|\|", script):
            argv = shlex.split(part.replace("$$", "$"))
            if argv and argv[0] == "exec":
                argv = argv[1:]
            if argv:
                found.append(argv)

    command = service.get("command")
    if isinstance(command, str):
        add_shell(command)
    elif command:
        if command[0] in ("sh", "bash") and command[1] == "-c":
            add_shell(command[2])
        else:
            found.append([str(arg) for arg in command])
    test = service.get("healthcheck", {}).get("test")
    if test and test[0] == "CMD-SHELL":
        add_shell(test[1])
    elif test and test[0] == "CMD":
        found.append(test[1:])
    return found


def option(argv: list[str], *flags: str) -> str | None:
    """The value after the first of `flags` in an argument list."""
    for i, arg in enumerate(argv[:-1]):
        if arg in flags:
            return argv[i + 1]
    return None


def module_exists(name: str) -> bool:
    return importlib.util.find_spec(name) is not None


# --- the compose file -----------------------------------------------------------------------


def test_compose_file_matches_the_compose_specification(compose):
    # The schema says draft-07 (without the "#" jsonschema looks for).
    jsonschema.Draft7Validator(json.loads(COMPOSE_SCHEMA.read_text())).validate(compose)


def test_compose_has_every_service_and_each_has_a_health_check(services):
    assert SERVICES <= services.keys(), SERVICES - services.keys()
    for name, service in services.items():
        test = service.get("healthcheck", {}).get("test")
        assert test and test[0] in ("CMD", "CMD-SHELL"), f"{name} has no health check"
    assert services["web"]["healthcheck"]["test"][1:] == [
        "python", "-m", "webapp.health", "--url", "http://127.0.0.1:8000/healthz"
    ]  # fmt: skip


def test_depends_on_names_services_that_exist(services):
    for name, service in services.items():
        depends = service.get("depends_on", {})
        assert set(depends) <= services.keys(), (
            f"{name} depends on {set(depends) - services.keys()}"
        )


def test_every_command_names_a_module_or_file_of_the_project(services):
    for name, service in netloom_services(services).items():
        for argv in commands(service):
            program = Path(argv[0]).name
            if program == "celery":
                app = option(argv, "-A", "--app")
                assert app and module_exists(app), f"{name}: celery app {app!r} is not a module"
                assert hasattr(importlib.import_module(app), "app"), (
                    f"{name}: {app} has no Celery app"
                )
            elif program.startswith("python"):
                if argv[1] == "-m":
                    assert module_exists(argv[2]), f"{name}: python -m {argv[2]}: no such module"
                else:
                    assert (ROOT / argv[1]).is_file(), f"{name}: python {argv[1]}: no such file"
            else:
                pytest.fail(f"{name} runs {argv[0]!r}: neither python nor celery")
    web = " ".join(services["web"]["command"])
    from webapp.serve import APP

    # The web service runs the one server launcher, which serves webapp.asgi:application.
    assert "python -m webapp.serve" in web and APP == "webapp.asgi:application"


def test_workers_consume_the_queues_webapp_queues_names(services):
    def consumed(service: str) -> list[str]:
        [worker] = [argv for argv in commands(services[service]) if "worker" in argv]
        return (option(worker, "-Q", "--queues") or "").split(",")

    # A training worker is started on TRAIN_QUEUE and consumes the per-need train queues its own
    # devices fit (webapp/queues.py); worker-train owns the GPU its reservation gives it.
    assert consumed("worker-train") == [queues.TRAIN_QUEUE]
    assert services["worker-train"]["environment"]["NETLOOM_DEVICES"].startswith("cuda")
    assert consumed("worker-short") == [queues.SHORT_QUEUE]
    # Uploads have a worker of their own: a large archive never holds an explanation.
    assert consumed("worker-datasets") == [queues.DATASETS_QUEUE]
    every = {queue for name in services if "worker" in name for queue in consumed(name)}
    assert every == set(queues.QUEUES), "every queue has a worker"
    for name in ("worker-train", "worker-short", "worker-datasets"):
        worker = next(argv for argv in commands(services[name]) if "worker" in argv)
        node = option(worker, "-n", "--hostname")
        ping = next(argv for argv in commands(services[name]) if "ping" in argv)
        # The health check pings this worker by its node name, not any worker on the broker.
        assert node == f"{name}@%h" and option(ping, "-d", "--destination") == f"{name}@$HOSTNAME"
    # One run at a time per training worker, and it holds no second message while it trains.
    train = commands(services["worker-train"])[0]
    assert (
        option(train, "--concurrency", "-c") == "1"
        and option(train, "--prefetch-multiplier") == "1"
    )


def test_the_training_worker_reserves_one_gpu(services):
    [device] = services["worker-train"]["deploy"]["resources"]["reservations"]["devices"]
    assert device == {"driver": "nvidia", "count": 1, "capabilities": ["gpu"]}


def test_beat_sends_the_reaper(services):
    [beat] = [argv for argv in commands(services["beat"]) if "beat" in argv]
    assert Path(beat[0]).name == "celery" and option(beat, "-A") == "webapp.celery"
    from webapp.celery import app

    assert any(entry["task"] == queues.RUNS_REAP for entry in app.conf.beat_schedule.values())


def test_redis_keeps_the_broker_keys(services):
    redis = services["redis"]
    argv = [str(arg) for arg in redis["command"]]
    assert option(argv, "--maxmemory-policy") == "noeviction"
    assert option(argv, "--appendonly") == "yes"
    assert any(volume.split(":")[1] == "/data" for volume in redis["volumes"]), "no volume on /data"


def test_database_url_points_at_the_postgres_service(services):
    for name, service in netloom_services(services).items():
        url = service["environment"]["DATABASE_URL"]
        assert re.match(r"postgres://.+@postgres:5432/", url), f"{name}: {url}"


def test_every_netloom_service_shares_the_media_volume(compose, services):
    assert "media" in compose["volumes"]
    for name, service in netloom_services(services).items():
        assert "media:/data/media" in service["volumes"], name
        assert service["environment"]["MEDIA_ROOT"] == "/data/media", name


def test_every_variable_a_service_sets_is_one_netloom_reads(services):
    read = netloom_reads()
    for name, service in netloom_services(services).items():
        unknown = set(service["environment"]) - read
        assert not unknown, f"{name} sets variables Netloom never reads: {sorted(unknown)}"


def test_env_example_names_every_interpolated_and_every_settings_variable(compose):
    assigned, commented = env_example_names()
    used = interpolated(compose)
    assert used, "no ${VARIABLE} found: the test is out of date"
    missing = used - assigned - commented
    assert not missing, f"add these (used by docker-compose.yml) to .env.example: {sorted(missing)}"
    missing = settings_reads() - assigned - commented
    assert not missing, f"add these (read by webapp/settings.py) to .env.example: {sorted(missing)}"
    stale = (assigned | commented) - used - netloom_reads()
    assert not stale, f".env.example names variables nothing uses: {sorted(stale)}"
    # Secrets have no value in the example: compose refuses to start until they are set.
    for secret in ("SECRET_KEY", "POSTGRES_PASSWORD"):
        assert re.search(rf"^{secret}=$", ENV_EXAMPLE.read_text(), re.M), secret
        assert re.search(rf"\$\{{{secret}:\?", COMPOSE_FILE.read_text()), secret


# --- the image ------------------------------------------------------------------------------


def test_the_dockerfile_installs_pyproject_pins_builds_the_frontend_and_drops_root():
    dockerfile = (ROOT / "Dockerfile").read_text()
    pins = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert any(pin.startswith("torch==") for pin in pins)
    # The dependencies come from pyproject.toml itself: no second list to drift.
    assert (
        "COPY pyproject.toml" in dockerfile and 'tomllib.load(open("pyproject.toml"' in dockerfile
    )
    assert "pip install -r /tmp/requirements.txt" in dockerfile
    assert "ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu" in dockerfile
    assert "npm ci" in dockerfile and "npm run build" in dockerfile
    assert "COPY --from=frontend /src/frontend/dist frontend/dist" in dockerfile
    users = re.findall(r"^USER (\S+)", dockerfile, re.M)
    assert users and users[-1] not in ("root", "0"), "the image must not run as root"
    for directory in ("engine", "webapp", "workers", "serving", "examples"):
        assert f"COPY {directory}/ {directory}/" in dockerfile, directory


# --- GET /healthz ---------------------------------------------------------------------------


@pytest.mark.django_db
def test_healthz_answers_200_when_the_database_and_redis_answer(client):
    response = client.get("/healthz")
    assert response.status_code == 200, response.content
    assert response.json() == {"status": "ok", "database": "ok", "redis": "ok", "disk": "ok"}
    assert response["Cache-Control"] == "no-store"


@pytest.mark.django_db
def test_healthz_says_the_disk_is_low_while_media_root_has_less_than_the_margin_free(client, settings):
    from webapp.disk import free_bytes

    settings.NETLOOM_DISK_MARGIN_BYTES = free_bytes() + 10**12  # more than the volume can have free
    response = client.get("/healthz")
    assert response.status_code == 200  # it still serves; writes that do not fit answer 507
    assert response.json() == {"status": "degraded", "database": "ok", "redis": "ok", "disk": "low"}


@pytest.mark.django_db
def test_healthz_answers_503_naming_redis_when_it_is_down(client, settings):
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    settings.REDIS_URL = f"redis://127.0.0.1:{port}/0"
    response = client.get("/healthz")
    assert response.status_code == 503
    # Why goes to the log, not to an anonymous caller.
    assert response.json() == {"status": "unavailable", "database": "ok", "redis": "unavailable", "disk": "ok"}
    assert client.post("/healthz").status_code == 405


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_the_web_health_check_passes_against_a_production_server(tmp_path):
    """What the compose web health check runs, against the server with DEBUG off behind "TLS"."""
    port = _free_port()
    env = {
        **os.environ,
        "DEBUG": "0",
        "SECRET_KEY": "k3P9-" + "x7Qz!vR2mW8#tL5nB1" * 4,
        "ALLOWED_HOSTS": "netloom.example.org",
        "NETLOOM_BEHIND_TLS_PROXY": "1",
        "SECURE_SSL_REDIRECT": "1",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "STATIC_ROOT": str(tmp_path / "static"),
        "MEDIA_ROOT": str(tmp_path / "media"),
        "NETLOOM_WEB_LOG_LEVEL": "warning",
    }
    server = subprocess.Popen(
        [sys.executable, "-m", "webapp.serve", "--host", "127.0.0.1", "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    check = [sys.executable, "-m", "webapp.health", "--url", f"http://127.0.0.1:{port}/healthz"]
    try:
        deadline = time.monotonic() + 60
        while True:
            result = subprocess.run(
                check, cwd=ROOT, env=env, capture_output=True, text=True, timeout=30
            )
            if result.returncode == 0 or time.monotonic() > deadline or server.poll() is not None:
                break
            time.sleep(0.5)
        assert result.returncode == 0, result.stdout + result.stderr
        assert result.stdout.startswith("200 ") and '"status": "ok"' in result.stdout
        # A Host the server does not serve is refused, and the check fails with the answer.
        plain = subprocess.run(
            check,
            cwd=ROOT,
            env={**env, "ALLOWED_HOSTS": "elsewhere.example.org"},
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert plain.returncode == 1 and plain.stdout.startswith("400 "), plain.stdout
    finally:
        server.terminate()
        server.wait(timeout=20)


@pytest.mark.slow
def test_the_worker_health_check_pings_its_own_worker(services, tmp_path):
    """worker-short's command and health check, as compose runs them, against the real Redis."""
    bin_dir = Path(sys.executable).parent
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOSTNAME": socket.gethostname(),  # Docker sets it to the container's host name (%h)
        "NETLOOM_INSTANCE": f"test-deploy-{os.getpid()}-{time.monotonic_ns()}",
        "REDIS_URL": "redis://127.0.0.1:6379/5",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "MEDIA_ROOT": str(tmp_path / "media"),
    }
    command = [str(arg) for arg in services["worker-short"]["command"]]
    shell, script = services["worker-short"]["healthcheck"]["test"]
    assert shell == "CMD-SHELL"
    script = script.replace("$$", "$")  # compose's escape for the container's shell
    with open(tmp_path / "worker.log", "wb") as log:
        worker = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=log)
    try:
        deadline = time.monotonic() + 120
        while True:
            check = subprocess.run(
                ["sh", "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
            )
            if check.returncode == 0 or time.monotonic() > deadline or worker.poll() is not None:
                break
            time.sleep(1)
        assert check.returncode == 0, (
            check.stdout + check.stderr + (tmp_path / "worker.log").read_text()
        )
        assert f"worker-short@{socket.gethostname()}: OK" in check.stdout
        # Another node name gets no answer: the check is about this container's worker only.
        other = script.replace("worker-short@", "worker-elsewhere@").replace(
            "--timeout 10", "--timeout 2"
        )
        assert (
            subprocess.run(["sh", "-c", other], cwd=ROOT, env=env, capture_output=True).returncode
            != 0
        )
    finally:
        worker.terminate()
        try:
            worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()


# --- make gpu-check -------------------------------------------------------------------------


@pytest.mark.skipif(
    torch.cuda.is_available(), reason="with CUDA the check trains for minutes: make gpu-check"
)
def test_gpu_check_without_cuda_says_so_and_exits_0():
    result = subprocess.run(
        [sys.executable, "scripts/gpu_check.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == "no CUDA device: nothing to check"
