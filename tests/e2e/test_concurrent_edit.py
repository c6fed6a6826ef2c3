"""Two teammates edit one graph: the stale save is refused with the choices, the diff view marks the
change, "save anyway" keeps both, and the other editor is told of the newer revision and loads it."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from .conftest import ARTIFACTS, Account, LiveServer
from .test_canvas import Steps, set_param, sign_in, tid

pytestmark = pytest.mark.e2e

# In the page: save revision 4 on base 3 through the API, with `act` (ReLU) replaced by `drop`.
SAVE_WITHOUT_RELU = """async () => {
  const csrf = decodeURIComponent(document.cookie.match(/csrftoken=([^;]+)/)[1]);
  const graph = location.pathname.split("/").filter(Boolean).pop();
  const spec = (await (await fetch(`/api/graphs/${graph}/revisions/3/`)).json()).spec;
  spec.nodes = spec.nodes.flatMap((n) => n.id === "act"
    ? [{id: "drop", op: "Dropout", params: {p: 0.2}, inputs: ["fc1"]}]
    : n.id === "fc2" ? [{...n, inputs: ["drop"]}] : [n]);
  if (spec.layout && spec.layout.act) {
    spec.layout.drop = {x: spec.layout.act.x + 240, y: spec.layout.act.y};
    delete spec.layout.act;
  }
  const r = await fetch(`/api/graphs/${graph}/revisions/`, {method: "POST",
    headers: {"Content-Type": "application/json", "X-CSRFToken": csrf},
    body: JSON.stringify({spec, base: 3})});
  if (!r.ok) throw new Error(`save failed: ${r.status} ${await r.text()}`);
}"""


def test_a_stale_save_is_refused_with_the_choices_and_the_diff_marks_the_change(
    page: Page, browser: object, netloom_server: LiveServer, new_account: Account
) -> None:
    steps = Steps(page, ARTIFACTS / "concurrent")
    alice = page
    sign_in(alice, netloom_server, new_account)
    alice.fill(tid("new-graph-name"), "shared mlp")
    alice.select_option(tid("new-graph-template"), "digits_mlp")
    alice.click(tid("create-graph"))
    expect(alice.locator(tid("status-saved"))).to_have_text("Saved · revision 1")

    # A teammate (editor of the same team) opens the same graph in another browser.
    bob = Account(f"{new_account.username}_b", new_account.password, new_account.team)
    netloom_server.manage(
        "createuser",
        bob.username,
        "--password",
        bob.password,
        "--team",
        bob.team,
        "--role",
        "editor",
    )
    context = browser.new_context(viewport={"width": 1280, "height": 800})  # type: ignore[attr-defined]
    try:
        bpage = context.new_page()
        bsteps = Steps(bpage, ARTIFACTS / "concurrent" / "bob")
        sign_in(bpage, netloom_server, bob)
        bpage.click(tid("open-graph"))
        expect(bpage.locator(tid("status-saved"))).to_have_text("Saved · revision 1")

        # The first one changes a size and saves revision 2.
        set_param(alice, "fc1", "out_features", "24")
        alice.click(tid("save"))
        expect(alice.locator(tid("status-saved"))).to_have_text("Saved · revision 2")
        steps.shot("first-saved-revision-2")

        # The second changes another parameter on the old base: the save is refused, with the choices.
        set_param(bpage, "fc2", "out_features", "12")
        bpage.click(tid("save"))
        dialog = bpage.locator(tid("stale-dialog"))
        expect(dialog).to_be_visible()
        expect(bpage.locator(tid("stale-message"))).to_contain_text(
            f"{new_account.username} saved revision 2"
        )
        expect(bpage.locator(tid("stale-load"))).to_contain_text("Load revision 2")
        expect(bpage.locator(tid("stale-diff"))).to_contain_text("See the changes")
        expect(bpage.locator(tid("stale-force"))).to_contain_text("Save as a new revision anyway")
        expect(bpage.locator(tid("unsaved-flag"))).to_be_visible()
        bsteps.shot("save-refused")

        # "See the changes": revision 1 against 2, the changed node marked, the change listed.
        bpage.click(tid("stale-diff"))
        expect(bpage.locator(tid("diff-view"))).to_be_visible()
        expect(bpage.locator(tid("diff-title"))).to_have_text("Revision 1 → revision 2")
        fc1 = bpage.locator(tid("diff-node-fc1"))
        expect(fc1).to_have_attribute("data-status", "changed")
        expect(bpage.locator(tid("diff-changes-fc1"))).to_contain_text("out_features: 128 → 24")
        expect(bpage.locator(tid("diff-node-fc2"))).to_have_attribute("data-status", "same")
        expect(bpage.locator(tid("diff-list"))).to_contain_text("fc1.out_features: 128 -> 24")
        bsteps.shot("diff-view")

        # Back to editing: the unsaved change is still there; save it anyway as revision 3.
        bpage.click(tid("diff-close"))
        expect(bpage.locator(tid("editor"))).to_be_visible()
        bpage.click(f"{tid('node-fc2')} .node-head")
        expect(bpage.locator(tid("param-out_features"))).to_have_value("12")
        bpage.click(tid("save"))
        expect(dialog).to_be_visible()
        bpage.click(tid("stale-force"))
        expect(bpage.locator(tid("status-saved"))).to_have_text("Saved · revision 3")
        expect(dialog).to_have_count(0)
        bsteps.shot("saved-anyway-revision-3")
    finally:
        context.close()

    # The first editor is told (light poll) and loads the teammate's revision in one click.
    banner = alice.locator(tid("remote-banner"))
    expect(banner).to_contain_text(
        re.compile(rf"{bob.username} saved revision 3 at \d"), timeout=20_000
    )
    steps.shot("told-of-revision-3")
    alice.click(tid("remote-load"))
    expect(alice.locator(tid("status-saved"))).to_have_text("Saved · revision 3")
    expect(banner).to_have_count(0)
    alice.click(f"{tid('node-fc2')} .node-head")
    expect(alice.locator(tid("param-out_features"))).to_have_value("12")

    # The revisions panel compares any two revisions; restoring one stays one click.
    alice.click(tid("tab-revisions"))
    # (Revision 3 was saved over revision 1: it has fc1 back at 128, and fc2 at 12.)
    alice.click(tid("compare-revision-2"))
    expect(alice.locator(tid("compare-pick-2"))).to_be_visible()
    steps.shot("revisions-compare-with")
    alice.select_option(tid("compare-pick-2"), "3")
    expect(alice.locator(tid("diff-title"))).to_have_text("Revision 2 → revision 3")
    expect(alice.locator(tid("diff-changes-fc1"))).to_contain_text("out_features: 24 → 128")
    expect(alice.locator(tid("diff-changes-fc2"))).to_contain_text("out_features: 10 → 12")
    expect(alice.locator(tid("diff-node-act"))).to_have_attribute("data-status", "same")
    steps.shot("compare-2-with-3")
    alice.click(tid("diff-close"))

    # Another client saves revision 4 (ReLU replaced by Dropout): the banner's "See changes" marks
    # the removed node (drawn from revision 3) and the added one.
    alice.evaluate(SAVE_WITHOUT_RELU)
    expect(banner).to_contain_text("saved revision 4", timeout=20_000)
    alice.click(tid("remote-diff"))
    expect(alice.locator(tid("diff-title"))).to_have_text("Revision 3 → revision 4")
    expect(alice.locator(tid("diff-node-act"))).to_have_attribute("data-status", "removed")
    expect(alice.locator(tid("diff-node-drop"))).to_have_attribute("data-status", "added")
    expect(alice.locator(tid("diff-list"))).to_contain_text("node act removed")
    expect(alice.locator(tid("diff-list"))).to_contain_text("node drop added")
    steps.shot("diff-3-with-4-added-removed")
    alice.click(tid("diff-close"))
    alice.click(tid("tab-revisions"))
    alice.click(tid("restore-revision-1"))
    alice.click(tid("tab-inspector"))
    alice.click(f"{tid('node-fc1')} .node-head")
    expect(alice.locator(tid("param-out_features"))).to_have_value("128")
    expect(alice.locator(tid("unsaved-flag"))).to_be_visible()
