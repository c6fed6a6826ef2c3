"""The light install (`pip install ./client`) brings the command and the library without torch or Django.

A fresh virtualenv gets the client package (built from client/, no index) and, linked in from the
project's environment, only the client's own dependencies, so the check works offline and fast;
nothing else of the project's environment is visible there.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# The client's dependencies and theirs (client/pyproject.toml; httpx -> httpcore, h11, anyio, ...).
DISTRIBUTIONS = [
    "httpx",
    "httpcore",
    "h11",
    "anyio",
    "idna",
    "certifi",
    "sniffio",
    "typing_extensions",
    "websockets",
    "tqdm",
]
CHECK = """
import json, sys
from netloom.cli import main
try:
    main(["--help"])
except SystemExit as done:
    code = done.code
import netloom, netloom.client, netloom.api_types
heavy = sorted({name.split(".")[0] for name in sys.modules} & {"torch", "django", "rest_framework", "numpy"})
print(json.dumps({"help_exit": code, "heavy": heavy, "file": netloom.__file__}))
"""


def _link_distribution(name: str, site: Path) -> None:
    try:
        dist = importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        return  # not a dependency on this Python (sniffio is gone from newer anyio)
    for top in {Path(str(f)).parts[0] for f in dist.files or [] if not str(f).startswith("..")}:
        source = Path(str(dist.locate_file(top)))
        if source.exists() and not (site / top).exists() and top != "__pycache__":
            (site / top).symlink_to(source)


@pytest.mark.slow
def test_the_light_install_runs_the_command_without_torch_or_django(tmp_path: Path) -> None:
    venv = tmp_path / "light"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    # The project's pip builds a wheel of ./client and installs it there (no index, no deps).
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    pip = [sys.executable, "-m", "pip", "-q", "--disable-pip-version-check"]
    wheels = tmp_path / "wheels"
    source = tmp_path / "client"  # a copy: building writes build/ and *.egg-info beside the sources
    shutil.copytree(
        ROOT / "client", source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__")
    )
    subprocess.run(
        [
            *pip,
            "wheel",
            "--no-deps",
            "--no-index",
            "--no-build-isolation",
            "-w",
            str(wheels),
            str(source),
        ],
        check=True,
        env=env,
        cwd=tmp_path,
        capture_output=True,
    )
    (wheel,) = wheels.glob("netloom_client-*.whl")
    subprocess.run(
        [*pip, "--python", str(python), "install", "--no-deps", "--no-index", str(wheel)],
        check=True,
        env=env,
        cwd=tmp_path,
        capture_output=True,
    )
    for name in DISTRIBUTIONS:
        _link_distribution(name, site)

    def light(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            args, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120
        )

    for module in ("torch", "django"):
        assert light(str(python), "-c", f"import {module}").returncode != 0, (
            f"{module} is in the light venv"
        )

    checked = light(str(python), "-c", CHECK)
    assert checked.returncode == 0, checked.stderr
    report = json.loads(checked.stdout.strip().splitlines()[-1])
    assert report["heavy"] == [] and report["help_exit"] == 0
    assert report["file"].startswith(str(site)), "the installed package, not the checkout's"

    command = light(str(venv / "bin" / "netloom"), "--help")
    assert command.returncode == 0, command.stderr
    assert "runs" in command.stdout and "export" in command.stdout
    missing = light(
        str(venv / "bin" / "netloom"), "teams", "--url", "http://127.0.0.1:9", "--token", "nl_x"
    )
    assert missing.returncode == 1 and missing.stderr.startswith(
        "error: cannot reach http://127.0.0.1:9"
    )
