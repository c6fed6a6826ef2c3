"""An existing PyTorch model on the canvas (issue 16): `python -m engine import` on the user's
machine writes a spec file, and the graphs page's import dialog opens it as a new graph; weights
trained later are added to its revision from the Revisions panel ("Add weights…")."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from playwright.sync_api import Page, expect
from safetensors.torch import save_file

from engine.build import build

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
    page.click(tid("import-open"))
    page.set_input_files(tid("import-spec"), str(bad))
    expect(page.locator(tid("import-spec-error"))).to_contain_text('notes.json is not a graph spec: it has no "nodes" list')
    expect(page.locator(tid("import-submit"))).to_be_disabled()

    # Without weights the import lands where it does with them: the new graph's canvas.
    page.set_input_files(tid("import-spec"), str(spec_path))
    page.click(tid("import-submit"))
    page.wait_for_url(re.compile(r"/app/graphs/\d+$"))
    expect(page.locator(tid("status-validity"))).to_have_text("Valid", timeout=30_000)
    # One box per layer, per graph input and per graph output.
    expect(page.locator(".react-flow__node")).to_have_count(len(nodes) + len(spec["inputs"]) + len(spec["outputs"]))
    expect(page.locator(tid("node-layer1_0_conv1"))).to_be_visible()
    steps.shot("imported-resnet")

    # Weights trained later are added to the revision: a file of another shape is refused by key.
    model = build(spec, seed=3)
    weights = tmp_path / "small_resnet.safetensors"
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, weights)
    wrong = tmp_path / "wider.safetensors"
    state = {k: v.contiguous() for k, v in model.state_dict().items()}
    first = next(k for k in state if k.endswith(".weight"))
    state[first] = torch.zeros(state[first].shape[0] + 1, *state[first].shape[1:])
    save_file(state, wrong)
    page.click(tid("tab-revisions"))
    page.set_input_files(tid("add-weights-1"), str(wrong))
    expect(page.locator(tid("add-weights-error-1"))).to_contain_text(f"{first}: shape", timeout=30_000)
    steps.shot("add-weights-refused")
    page.set_input_files(tid("add-weights-1"), str(weights))
    done = page.locator(tid("add-weights-done-1"))
    expect(done).to_contain_text("holds them as checkpoint “imported”", timeout=30_000)
    expect(page.locator(tid("add-weights-error-1"))).to_have_count(0)
    steps.shot("add-weights-done")
    page.goto(f"{netloom_server.url}/app/")
    expect(page.get_by_role("link", name="small resnet")).to_be_visible()
