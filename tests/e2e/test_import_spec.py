"""An existing PyTorch model on the canvas (issue 16): `python -m engine import` on the user's
machine writes a spec file, and the graphs page's "Import a spec file…" opens it as a new graph."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from .conftest import ARTIFACTS, Account, LiveServer
from .test_canvas import Steps, sign_in, tid

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
MODEL = ROOT / "tests" / "engine" / "import_models" / "cnn_resnet.py"


def test_a_spec_written_by_the_import_command_opens_on_the_canvas(
    page: Page, netloom_server: LiveServer, new_account: Account, tmp_path: Path
) -> None:
    spec_path = tmp_path / "small_resnet.json"
    done = subprocess.run(
        [sys.executable, "-m", "engine", "import", f"{MODEL}:SmallResNet", "--input-shape", "1,28,28",
         "--out", str(spec_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr
    spec = json.loads(spec_path.read_text())
    nodes = spec["nodes"]

    steps = Steps(page, ARTIFACTS / "import")
    sign_in(page, netloom_server, new_account)
    # A file that is not a spec is refused with the reason, and nothing is created.
    bad = tmp_path / "notes.json"
    bad.write_text('{"rows": []}')
    page.set_input_files(tid("import-spec"), str(bad))
    expect(page.get_by_role("alert")).to_contain_text('notes.json is not a graph spec: it has no "nodes" list')

    page.set_input_files(tid("import-spec"), str(spec_path))
    expect(page.locator(tid("status-validity"))).to_have_text("Valid", timeout=30_000)
    # One box per layer, per graph input and per graph output.
    expect(page.locator(".react-flow__node")).to_have_count(len(nodes) + len(spec["inputs"]) + len(spec["outputs"]))
    expect(page.locator(tid("node-layer1_0_conv1"))).to_be_visible()
    steps.shot("imported-resnet")
    page.goto(f"{netloom_server.url}/app/")
    expect(page.get_by_role("link", name="small resnet")).to_be_visible()
