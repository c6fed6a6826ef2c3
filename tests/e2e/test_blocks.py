"""Blocks on the canvas (issue 16): three nodes of a conv network become a block exposing `channels`,
the block is placed twice more from the team's palette and wired, and the saved revision carries one
definition and three instances that validate."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect

from .conftest import ARTIFACTS, Account, LiveServer
from .test_canvas import Steps, node_id, set_param, sign_in, tid, wire

pytestmark = pytest.mark.e2e

# A small conv network on digits: stem -> conv1 -> bn1 -> act1 -> flat -> fc.
SPEC: dict[str, Any] = {
    "version": 1,
    "inputs": [{"id": "x", "shape": [1, 8, 8], "dtype": "float32"}],
    "nodes": [
        {"id": "stem", "op": "Conv2d", "params": {"out_channels": 8, "kernel_size": 3, "padding": 1}, "inputs": ["x"]},
        {"id": "conv1", "op": "Conv2d", "params": {"out_channels": 8, "kernel_size": 3, "padding": 1}, "inputs": ["stem"]},
        {"id": "bn1", "op": "BatchNorm2d", "inputs": ["conv1"]},
        {"id": "act1", "op": "ReLU", "inputs": ["bn1"]},
        {"id": "flat", "op": "Flatten", "inputs": ["act1"]},
        {"id": "fc", "op": "Linear", "params": {"out_features": 10}, "inputs": ["flat"]},
    ],
    "outputs": ["fc"],
}  # fmt: skip

# In the page: create the graph through the API (the first team of the signed-in user).
CREATE_GRAPH = """async (spec) => {
  const csrf = decodeURIComponent(document.cookie.match(/csrftoken=([^;]+)/)[1]);
  const me = await (await fetch("/api/auth/me/")).json();
  const r = await fetch("/api/graphs/", {method: "POST",
    headers: {"Content-Type": "application/json", "X-CSRFToken": csrf},
    body: JSON.stringify({team: me.teams[0].id, name: "conv blocks", spec})});
  if (!r.ok) throw new Error(`create failed: ${r.status} ${await r.text()}`);
  return (await r.json()).id;
}"""

# In the page: the saved revision `n` of graph `id`, and what the validator says of it.
READ_REVISION = """async ([id, n]) => {
  const csrf = decodeURIComponent(document.cookie.match(/csrftoken=([^;]+)/)[1]);
  const spec = (await (await fetch(`/api/graphs/${id}/revisions/${n}/`)).json()).spec;
  const r = await fetch("/api/graphs/validate/", {method: "POST",
    headers: {"Content-Type": "application/json", "X-CSRFToken": csrf}, body: JSON.stringify({spec})});
  return {spec, report: await r.json()};
}"""


def test_a_block_made_from_three_nodes_is_placed_three_times_and_saved(
    page: Page, netloom_server: LiveServer, new_account: Account
) -> None:
    steps = Steps(page, ARTIFACTS / "blocks")
    status = page.locator(tid("status-validity"))
    sign_in(page, netloom_server, new_account)
    graph_id = page.evaluate(CREATE_GRAPH, SPEC)
    page.goto(f"{netloom_server.url}/app/graphs/{graph_id}")
    expect(page.locator(tid("status-saved"))).to_have_text("Saved · revision 1")
    expect(status).to_have_text("Valid")
    expect(page.locator(tid("palette-blocks"))).to_contain_text("None yet")

    # Select conv1, bn1 and act1, and make a block of them exposing conv1.out_channels as `channels`.
    page.click(f"{tid('node-conv1')} .node-head")
    page.click(f"{tid('node-bn1')} .node-head", modifiers=["Control"])
    page.click(f"{tid('node-act1')} .node-head", modifiers=["Control"])
    expect(page.locator(".react-flow__node.selected")).to_have_count(3)
    page.click(tid("make-block"))
    dialog = page.locator(tid("make-block-dialog"))
    expect(dialog).to_contain_text("Make a block of 3 nodes")
    page.fill(tid("make-block-name"), "ConvBlock")
    page.fill(tid("make-block-description"), "conv, batch norm, relu")
    page.check(tid("expose-conv1-out_channels"))
    page.fill(tid("expose-as-conv1-out_channels"), "channels")
    steps.shot("make-block-dialog")
    page.click(tid("make-block-confirm"))
    expect(dialog).to_have_count(0)
    cb1 = node_id(page, "convblock_1")
    expect(page.locator(tid(f"block-title-{cb1}"))).to_have_text("block ConvBlock v1")
    expect(page.locator(tid("node-conv1"))).to_have_count(0)
    expect(page.locator(tid(f"edge-shape-stem-{cb1}"))).to_have_text("[8, 8, 8]")
    expect(page.locator(tid(f"edge-shape-{cb1}-flat"))).to_have_text("[8, 8, 8]")
    expect(status).to_have_text("Valid")
    steps.shot("block-made")

    # Undo brings the three nodes back; redo makes the block again.
    page.click(tid("undo"))
    expect(page.locator(tid("node-conv1"))).to_be_visible()
    expect(page.locator(tid(f"node-{cb1}"))).to_have_count(0)
    page.click(tid("redo"))
    expect(page.locator(tid(f"node-{cb1}"))).to_be_visible()

    # The team's palette section lists it; two more instances come from there, then get wired.
    block_item = page.locator(tid("palette-block-ConvBlock"))
    expect(block_item).to_contain_text("v1")
    block_item.click()
    cb2 = node_id(page, "convblock_2")
    block_item.click()
    cb3 = node_id(page, "convblock_3")
    page.click(tid("auto-layout"))
    page.wait_for_timeout(400)  # the fit after a layout animates
    wire(page, cb1, cb2)
    wire(page, cb2, cb3)
    wire(page, cb3, "flat")  # replaces convblock_1 -> flat
    page.click(tid("auto-layout"))
    expect(page.locator(tid(f"edge-shape-{cb3}-flat"))).to_have_text("[8, 8, 8]")
    expect(page.locator(tid(f"edge-shape-{cb1}-flat"))).to_have_count(0)

    # The instance's form shows the exposed param; a bad value is reported on the instance, naming conv1.
    set_param(page, cb3, "channels", "0")
    errors = page.locator(tid(f"node-errors-{cb3}"))
    expect(errors).to_contain_text("node conv1")
    steps.shot("error-inside-an-instance")
    set_param(page, cb3, "channels", "16")
    expect(errors).to_have_count(0)
    expect(page.locator(tid(f"edge-shape-{cb3}-flat"))).to_have_text("[16, 8, 8]")
    expect(status).to_have_text("Valid")
    expect(page.locator(tid("block-open"))).to_be_visible()
    steps.shot("three-instances-wired")

    page.click(tid("save"))
    expect(page.locator(tid("status-saved"))).to_have_text("Saved · revision 2")
    saved = page.evaluate(READ_REVISION, [graph_id, 2])
    spec = saved["spec"]
    assert spec["version"] == 2
    assert [(b["name"], b["version"]) for b in spec["blocks"]] == [("ConvBlock", 1)]
    assert [p["name"] for p in spec["blocks"][0]["params"]] == ["channels"]
    instances = [n for n in spec["nodes"] if n["op"] == "ConvBlock@1"]
    assert [n["id"] for n in instances] == [cb1, cb2, cb3]
    assert [n["inputs"] for n in instances] == [["stem"], [cb1], [cb2]]
    assert instances[2]["params"] == {"channels": 16}
    assert saved["report"]["valid"] is True, saved["report"]["errors"]
    steps.shot("saved")

    # "Open block" shows the body as a graph (its input shaped as the instance receives it); a
    # changed body saved as version 2 is offered to the three instances, and they move to it.
    page.click(f"{tid(f'node-{cb3}')} .node-head")
    page.click(tid("block-open"))
    expect(page.locator(tid("block-mode-title"))).to_contain_text("Block ConvBlock v1")
    expect(page.locator(tid("node-shape-x"))).to_have_text("[8, 8, 8]")
    expect(page.locator(tid("node-stem"))).to_have_count(0)
    page.click(f"{tid('node-conv1')} .node-head")
    expect(page.locator(tid("param-bound-out_channels"))).to_contain_text("channels")
    expect(page.locator(tid("node-shape-conv1"))).to_have_text("[16, 8, 8]")
    set_param(page, "bn1", "eps", "0.001")
    expect(status).to_have_text("Valid")
    steps.shot("block-body-open")
    page.click(tid("block-save-version"))
    offer = page.locator(tid("upgrade-offer"))
    expect(offer).to_contain_text("ConvBlock v2 is saved in the team library", timeout=30_000)
    expect(page.locator(tid("upgrade-offer-accept"))).to_have_text(
        "Upgrade the 3 instances here to v2"
    )
    expect(block_item).to_contain_text("v2")
    page.click(f"{tid(f'node-{cb3}')} .node-head")
    expect(page.locator(tid("block-upgrade"))).to_have_text("Upgrade to v2")
    steps.shot("upgrade-offered")
    page.click(tid("upgrade-offer-accept"))
    for node in [cb1, cb2, cb3]:
        expect(page.locator(tid(f"block-title-{node}"))).to_have_text("block ConvBlock v2")
    expect(offer).to_have_count(0)
    expect(status).to_have_text("Valid")
    page.click(tid("save"))
    expect(page.locator(tid("status-saved"))).to_have_text("Saved · revision 3")
    saved = page.evaluate(READ_REVISION, [graph_id, 3])
    spec = saved["spec"]
    assert [(b["name"], b["version"]) for b in spec["blocks"]] == [("ConvBlock", 2)]
    bn1 = next(n for n in spec["blocks"][0]["nodes"] if n["id"] == "bn1")
    assert bn1["params"] == {"eps": 0.001}
    instances = [n for n in spec["nodes"] if n["op"] == "ConvBlock@2"]
    assert [n["params"] for n in instances] == [{"channels": 8}, {"channels": 8}, {"channels": 16}]
    assert saved["report"]["valid"] is True, saved["report"]["errors"]
    steps.shot("upgraded-and-saved")
