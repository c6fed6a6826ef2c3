"""Two teammates edit one graph on its shared canvas: each sees the other's change live, a save
keeps both (no stale-save refusal between browsers), the revisions panel compares revisions; a
revision an API client saves is offered in a banner with its diff and loads onto the shared canvas
for both; the API client itself still gets the stale-save 409."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from .conftest import ARTIFACTS, Account, LiveServer
from .test_canvas import Steps, set_param, sign_in, tid

pytestmark = pytest.mark.e2e

# In the page: an API client saves a revision on base <base> with `act` (ReLU) replaced by `drop`;
# answers the HTTP status.
SAVE_WITHOUT_RELU = """async (base) => {
  const csrf = decodeURIComponent(document.cookie.match(/csrftoken=([^;]+)/)[1]);
  const graph = location.pathname.split("/").filter(Boolean).pop();
  const spec = (await (await fetch(`/api/graphs/${graph}/revisions/${base}/`)).json()).spec;
  spec.nodes = spec.nodes.flatMap((n) => n.id === "act"
    ? [{id: "drop", op: "Dropout", params: {p: 0.2}, inputs: ["fc1"]}]
    : n.id === "fc2" ? [{...n, inputs: ["drop"]}] : [n]);
  if (spec.layout && spec.layout.act) {
    spec.layout.drop = {x: spec.layout.act.x + 240, y: spec.layout.act.y};
    delete spec.layout.act;
  }
  const r = await fetch(`/api/graphs/${graph}/revisions/`, {method: "POST",
    headers: {"Content-Type": "application/json", "X-CSRFToken": csrf},
    body: JSON.stringify({spec, base})});
  return r.status;
}"""


def test_two_editors_share_one_canvas_and_an_api_save_is_offered(
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
        "createuser", bob.username, "--password", bob.password,
        "--team", bob.team, "--role", "editor",
    )  # fmt: skip
    context = browser.new_context(viewport={"width": 1280, "height": 800})  # type: ignore[attr-defined]
    try:
        bpage = context.new_page()
        bsteps = Steps(bpage, ARTIFACTS / "concurrent" / "bob")
        sign_in(bpage, netloom_server, bob)
        bpage.click(tid("open-graph"))
        expect(bpage.locator(tid("status-saved"))).to_have_text("Saved · revision 1")

        # The first one changes a size: the second sees it at once, unsaved; the save is everyone's.
        set_param(alice, "fc1", "out_features", "24")
        expect(bpage.locator(tid("node-fc1"))).to_contain_text("out_features=24")
        expect(bpage.locator(tid("unsaved-flag"))).to_be_visible()
        alice.click(tid("save"))
        expect(alice.locator(tid("status-saved"))).to_have_text("Saved · revision 2")
        expect(bpage.locator(tid("status-saved"))).to_have_text(
            "Saved · revision 2", timeout=20_000
        )
        bsteps.shot("sees-revision-2")

        # The second changes another parameter and saves: both changes are in revision 3.
        set_param(bpage, "fc2", "out_features", "12")
        expect(alice.locator(tid("node-fc2"))).to_contain_text("out_features=12")
        bpage.click(tid("save"))
        expect(bpage.locator(tid("status-saved"))).to_have_text("Saved · revision 3")
        expect(bpage.locator(tid("stale-dialog"))).to_have_count(0)
        expect(alice.locator(tid("status-saved"))).to_have_text(
            "Saved · revision 3", timeout=20_000
        )
        bsteps.shot("saved-revision-3")

        # The revisions panel compares any two revisions.
        alice.click(tid("tab-revisions"))
        alice.click(tid("compare-revision-2"))
        expect(alice.locator(tid("compare-pick-2"))).to_be_visible()
        alice.select_option(tid("compare-pick-2"), "3")
        expect(alice.locator(tid("diff-title"))).to_have_text("Revision 2 → revision 3")
        expect(alice.locator(tid("diff-node-fc1"))).to_have_attribute("data-status", "same")
        expect(alice.locator(tid("diff-changes-fc2"))).to_contain_text("out_features: 10 → 12")
        steps.shot("compare-2-with-3")
        alice.click(tid("diff-close"))

        # An API client on an old base is still refused (409); on the latest it saves revision 4
        # (ReLU replaced by Dropout), which differs from the shared canvas: the banner offers it.
        assert alice.evaluate(SAVE_WITHOUT_RELU, 1) == 409
        assert alice.evaluate(SAVE_WITHOUT_RELU, 3) == 201
        banner = alice.locator(tid("remote-banner"))
        expect(banner).to_contain_text("saved revision 4", timeout=20_000)
        alice.click(tid("remote-diff"))
        expect(alice.locator(tid("diff-title"))).to_have_text("Revision 3 → revision 4")
        expect(alice.locator(tid("diff-node-act"))).to_have_attribute("data-status", "removed")
        expect(alice.locator(tid("diff-node-drop"))).to_have_attribute("data-status", "added")
        expect(alice.locator(tid("diff-list"))).to_contain_text("node act removed")
        steps.shot("diff-3-with-4-added-removed")
        alice.click(tid("diff-close"))

        # "Load it" puts revision 4 on the shared canvas: the teammate sees it too.
        alice.click(tid("remote-load"))
        expect(alice.locator(tid("status-saved"))).to_have_text("Saved · revision 4")
        expect(bpage.locator(tid("node-drop"))).to_be_visible()
        expect(bpage.locator(tid("node-act"))).to_have_count(0)
        expect(bpage.locator(tid("status-saved"))).to_have_text(
            "Saved · revision 4", timeout=20_000
        )
        bsteps.shot("sees-revision-4-loaded")
    finally:
        context.close()
