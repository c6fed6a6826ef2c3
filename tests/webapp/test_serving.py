"""A web process is ready to serve once its module is imported (webapp/serving.py).

Django imports the URLconf, the view modules and, through the run views, the engine and torch on
a process's first request: after `make run` the first run page waited 3.5-5 s for its stream's
first frame, once per stream process. Both entry points import that code before they serve.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("entry", ["webapp.wsgi", "webapp.asgi"])
def test_the_server_module_has_imported_what_the_first_request_and_stream_need(entry: str) -> None:
    probe = (
        f"import sys, {entry}\n"
        "wanted = ['webapp.runs.api', 'engine.train', 'torch']\n"
        "print(','.join(m for m in wanted if m not in sys.modules))\n"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "webapp.settings"}
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    missing = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    assert missing == "", f"{entry} left for the first request to import: {missing}"
