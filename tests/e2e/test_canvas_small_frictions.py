"""Small canvas frictions: Shift-click adds to the selection, an op dropped on the minimap lands
beside it (never hidden under it), and the status bar says "no output yet" rather than "0 params"."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from .conftest import ARTIFACTS, Account, LiveServer
from .test_canvas import Steps, drop_op, node_id, sign_in, tid
from .test_canvas_frictions import overlaps, settle

pytestmark = pytest.mark.e2e


def test_shift_click_minimap_drop_and_no_output_status(
    page: Page, netloom_server: LiveServer, new_account: Account
) -> None:
    steps = Steps(page, ARTIFACTS / "canvas-small-frictions")
    sign_in(page, netloom_server, new_account)
    page.fill(tid("new-graph-name"), "blank")
    page.click(tid("create-graph"))
    expect(page.locator(tid("editor"))).to_be_visible()

    # A graph without an output: the status bar says so instead of "0 params".
    drop_op(page, "Linear", 200, 150)
    linear_1 = node_id(page, "linear_1")
    params = page.locator(tid("status-params"))
    expect(params).to_have_text("params: no output yet")
    expect(params).not_to_contain_text("0 params")
    steps.shot("status-no-output-yet")

    # An op dropped onto the minimap lands beside it, wholly visible.
    minimap = page.locator(".react-flow__minimap")
    expect(minimap).to_be_visible()
    settle(page)
    canvas = page.locator(tid("canvas")).bounding_box()
    mini = minimap.bounding_box()
    assert canvas and mini
    drop_op(
        page,
        "ReLU",
        int(mini["x"] - canvas["x"] + mini["width"] / 2),
        int(mini["y"] - canvas["y"] + mini["height"] / 2),
    )
    relu_1 = node_id(page, "relu_1")
    relu = page.locator(tid(f"node-{relu_1}"))
    expect(relu).to_be_visible()
    box = relu.bounding_box()
    assert box and not overlaps(box, mini), (box, mini)
    assert box["x"] >= canvas["x"] and box["y"] >= canvas["y"]
    steps.shot("dropped-beside-the-minimap")

    # Shift-click adds to the selection (as Ctrl-click does), a second Shift-click takes it out.
    page.click(f"{tid(f'node-{linear_1}')} .node-head")
    page.click(f"{tid(f'node-{relu_1}')} .node-head", modifiers=["Shift"])
    expect(page.locator(".react-flow__node.selected")).to_have_count(2)
    steps.shot("shift-click-two-selected")
    page.click(f"{tid(f'node-{relu_1}')} .node-head", modifiers=["Shift"])
    expect(page.locator(".react-flow__node.selected")).to_have_count(1)
