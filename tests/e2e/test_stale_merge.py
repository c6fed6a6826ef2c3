"""A save refused because a teammate saved first: the dialog lists exactly which of their changes
"save anyway" would undo, and "apply my changes on top of theirs" keeps both when the edits touch
different parameters (and is refused, naming the parameter, when both changed the same one)."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import Page, expect

from .conftest import ARTIFACTS, Account, LiveServer
from .test_canvas import Steps, set_param, sign_in, tid

pytestmark = [
    pytest.mark.e2e,
    # The graph editor is a shared canvas (issue 38): a browser's save takes the shared state and
    # never meets a stale base, so this dialog is not reached from the page any more. The 409 for
    # API clients is checked in tests/e2e/test_concurrent_edit.py and the server's tests.
    pytest.mark.skip(reason="the browser edits a shared canvas: no stale-save dialog to reach"),
]

# In the page: a teammate's client saves conv1.out_channels = <value> on base <base>.
THEIR_SAVE = """async ([value, base]) => {
  const csrf = decodeURIComponent(document.cookie.match(/csrftoken=([^;]+)/)[1]);
  const graph = location.pathname.split("/").filter(Boolean).pop();
  const spec = (await (await fetch(`/api/graphs/${graph}/revisions/${base}/`)).json()).spec;
  spec.nodes.find((n) => n.id === "conv1").params.out_channels = value;
  const r = await fetch(`/api/graphs/${graph}/revisions/`, {method: "POST",
    headers: {"Content-Type": "application/json", "X-CSRFToken": csrf},
    body: JSON.stringify({spec, base})});
  if (!r.ok) throw new Error(`save failed: ${r.status} ${await r.text()}`);
}"""

REVISION = """async (n) => {
  const graph = location.pathname.split("/").filter(Boolean).pop();
  return JSON.stringify((await (await fetch(`/api/graphs/${graph}/revisions/${n}/`)).json()).spec);
}"""


def param_of(page: Page, revision: int, node: str, name: str) -> object:
    spec = json.loads(page.evaluate(REVISION, revision))
    return next(n for n in spec["nodes"] if n["id"] == node)["params"][name]


def test_stale_save_names_what_it_undoes_and_merges_mine_on_top_of_theirs(
    page: Page, netloom_server: LiveServer, new_account: Account
) -> None:
    steps = Steps(page, ARTIFACTS / "stale-merge")
    sign_in(page, netloom_server, new_account)
    page.fill(tid("new-graph-name"), "shared cnn")
    page.select_option(tid("new-graph-template"), "digits_cnn")
    page.click(tid("create-graph"))
    expect(page.locator(tid("status-saved"))).to_have_text("Saved · revision 1")

    # A teammate widens conv1 (16 -> 12 is their change) while this editor changes conv2.
    page.evaluate(THEIR_SAVE, [12, 1])
    set_param(page, "conv2", "out_channels", "24")
    page.click(tid("save"))
    expect(page.locator(tid("stale-dialog"))).to_be_visible()
    undone = page.locator(tid("stale-undone"))
    expect(undone).to_contain_text("Saving anyway undoes this change")
    expect(undone).to_contain_text("conv1.out_channels: 12 (theirs) goes back to 16")
    expect(undone).not_to_contain_text("conv2")
    merge = page.locator(tid("stale-merge"))
    expect(merge).to_be_enabled()
    expect(merge).to_contain_text("Apply my changes on top of theirs")
    steps.shot("refused-with-what-save-anyway-undoes")

    # Apply mine on top of theirs: both changes on the canvas, based on revision 2, then save.
    merge.click()
    expect(page.locator(tid("stale-dialog"))).to_have_count(0)
    expect(page.locator(tid("unsaved-flag"))).to_be_visible()
    page.click(f"{tid('node-conv1')} .node-head")
    expect(page.locator(tid("param-out_channels"))).to_have_value("12")
    page.click(f"{tid('node-conv2')} .node-head")
    expect(page.locator(tid("param-out_channels"))).to_have_value("24")
    steps.shot("merged-on-canvas")
    page.click(tid("save"))
    expect(page.locator(tid("status-saved"))).to_have_text("Saved · revision 3")
    assert param_of(page, 3, "conv1", "out_channels") == 12
    assert param_of(page, 3, "conv2", "out_channels") == 24

    # Both change conv1: the merge is refused and names the parameter; save anyway still works.
    page.evaluate(THEIR_SAVE, [20, 3])
    set_param(page, "conv1", "out_channels", "8")
    page.click(tid("save"))
    expect(page.locator(tid("stale-dialog"))).to_be_visible()
    expect(merge).to_be_disabled()
    expect(page.locator(tid("stale-merge-note"))).to_contain_text("both changed conv1.out_channels")
    expect(undone).to_contain_text("conv1.out_channels: 20 (theirs) goes back to 8")
    steps.shot("conflict-merge-refused")
    page.click(tid("stale-force"))
    expect(page.locator(tid("status-saved"))).to_have_text("Saved · revision 5")
    assert param_of(page, 5, "conv1", "out_channels") == 8
