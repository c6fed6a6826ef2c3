"""Frictions a new user met on the canvas (issue 16): replacing a wire, refused wires, the minimap,
the code panel's width, and the built-in dataset list while it loads."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, Route, expect

from .conftest import ARTIFACTS, Account, LiveServer
from .test_canvas import Steps, node_id, sign_in, tid, wire

pytestmark = pytest.mark.e2e


def overlaps(a: dict[str, float], b: dict[str, float]) -> bool:
    """True when two bounding boxes share any area."""
    return (
        a["x"] < b["x"] + b["width"]
        and b["x"] < a["x"] + a["width"]
        and a["y"] < b["y"] + b["height"]
        and b["y"] < a["y"] + a["height"]
    )


def settle(page: Page) -> None:
    """Wait until the canvas stops moving (Fit animates), so boxes are read where the view ends."""
    seen: list[str | None] = []
    for _ in range(50):
        seen.append(page.locator(".react-flow__viewport").get_attribute("style"))
        # Unchanged over three reads 100 ms apart: longer than any fit's delay and animation step.
        if len(seen) >= 3 and seen[-1] == seen[-2] == seen[-3]:
            return
        page.wait_for_timeout(100)


def canvas_nodes(page: Page) -> list[dict[str, float]]:
    """The screen boxes of every node on the canvas."""
    return [b for n in page.locator(".react-flow__node").all() if (b := n.bounding_box())]


def covered_by(page: Page, selector: str) -> int:
    """How many canvas nodes the element `selector` covers."""
    cover = page.locator(selector).bounding_box()
    assert cover, f"{selector} is not on screen"
    return sum(overlaps(box, cover) for box in canvas_nodes(page))


def test_wire_replace_refusals_minimap_code_width_and_loading_builtins(
    page: Page, netloom_server: LiveServer, new_account: Account
) -> None:
    steps = Steps(page, ARTIFACTS / "frictions")
    sign_in(page, netloom_server, new_account)
    page.fill(tid("new-graph-name"), "frictions")
    page.select_option(tid("new-graph-template"), "digits_mlp")
    page.click(tid("create-graph"))
    expect(page.locator(tid("node-fc2"))).to_be_visible()
    expect(page.locator(tid("status-validity"))).to_have_text("Valid")
    edges = page.locator(".react-flow__edge")
    expect(edges).to_have_count(5)

    # 3. After opening (a fit) and after Fit, the minimap and its toggle cover no node.
    expect(page.locator(".react-flow__minimap")).to_be_visible()
    settle(page)
    assert covered_by(page, ".react-flow__minimap") == 0
    page.click(tid("fit-view"))
    settle(page)
    assert covered_by(page, ".react-flow__minimap") == 0
    assert covered_by(page, tid("minimap-toggle")) == 0
    steps.shot("fit-clear-of-minimap")

    # 1. A wire dropped on fc2's input, which has one, replaces it; one undo brings the old one back.
    wire(page, "flat", "fc2")
    expect(page.locator(tid("edge-shape-flat-fc2"))).to_have_text("[64]")
    expect(page.locator(tid("edge-shape-act-fc2"))).to_have_count(0)
    expect(edges).to_have_count(5)
    expect(page.locator(tid("status-validity"))).to_have_text("Valid")
    steps.shot("wire-replaced")
    page.click(tid("undo"))
    expect(page.locator(tid("edge-shape-act-fc2"))).to_have_text("[128]")
    expect(page.locator(tid("edge-shape-flat-fc2"))).to_have_count(0)
    expect(edges).to_have_count(5)
    steps.shot("replace-undone")

    # 2. Refused wires say why, next to the pointer, and the message goes away by itself.
    refusal = page.locator(tid("connect-refusal"))
    wire(page, "fc2", "fc1")
    expect(refusal).to_have_text("cycle: fc1 already feeds fc2, so this wire would close a loop")
    expect(edges).to_have_count(5)
    steps.shot("refused-cycle")
    expect(refusal).to_have_count(0, timeout=10_000)

    box = page.locator(tid("canvas")).bounding_box()
    assert box
    page.mouse.move(box["x"] + 40, box["y"] + 40)
    page.keyboard.press("/")
    page.keyboard.type("Conv2d")
    page.keyboard.press("Enter")
    conv = node_id(page, "conv2d_1")
    page.keyboard.press("Escape")
    wire(page, "flat", conv)
    expect(refusal).to_have_text(
        f"shape mismatch: {conv} (Conv2d) needs a [C, H, W] input, flat gives [64]"
    )
    expect(page.locator(tid(f"edge-shape-flat-{conv}"))).to_have_count(0)
    steps.shot("refused-shape")
    # The right input is taken: x gives [1, 8, 8].
    wire(page, "x", conv)
    expect(page.locator(tid(f"edge-shape-x-{conv}"))).to_have_text("[1, 8, 8]")
    # Undo the wire and the Conv2d: the network is the saved template again.
    page.keyboard.press("Control+z")
    page.keyboard.press("Control+z")
    expect(page.locator(tid(f"node-{conv}"))).to_have_count(0)
    expect(page.locator(tid("status-validity"))).to_have_text("Valid")

    # 3. The minimap folds away (and stays folded after a reload); Fit then uses the whole canvas.
    page.click(tid("minimap-toggle"))
    expect(page.locator(".react-flow__minimap")).to_have_count(0)
    page.reload()
    expect(page.locator(tid("node-fc2"))).to_be_visible()
    expect(page.locator(".react-flow__minimap")).to_have_count(0)
    page.click(tid("fit-view"))
    settle(page)
    assert covered_by(page, tid("minimap-toggle")) == 0
    steps.shot("minimap-folded")
    page.click(tid("minimap-toggle"))
    expect(page.locator(".react-flow__minimap")).to_be_visible()
    page.click(tid("fit-view"))
    settle(page)
    assert covered_by(page, ".react-flow__minimap") == 0

    # 4. The code panel widens by its handle, and keeps the width after a reload.
    page.click(tid("tab-code"))
    expect(page.locator(tid("code-source"))).to_contain_text("class Net")
    side = page.locator("aside.side")
    before = side.bounding_box()
    handle = page.locator(tid("code-width-handle")).bounding_box()
    assert before and handle
    page.mouse.move(handle["x"] + handle["width"] / 2, handle["y"] + 200)
    page.mouse.down()
    page.mouse.move(handle["x"] - 220, handle["y"] + 200, steps=10)
    page.mouse.up()
    after = side.bounding_box()
    assert after and after["width"] > before["width"] + 180, (before, after)
    settle(page)  # the narrower canvas is fitted again
    assert covered_by(page, ".react-flow__minimap") == 0
    steps.shot("code-panel-widened")
    page.reload()
    page.click(tid("tab-code"))
    kept = side.bounding_box()
    assert kept and abs(kept["width"] - after["width"]) <= 2, (after, kept)

    # 5. The built-in list says it is loading until the server answers (its answer is held back).
    held: list[Route] = []
    released: list[bool] = []

    def hold(route: Route) -> None:
        if released:
            route.continue_()
        else:
            held.append(route)

    page.route("**/api/datasets/builtins/", hold)
    page.click(tid("nav-datasets"))
    loading = page.locator(tid("builtin-loading"))
    expect(loading).to_be_visible()
    expect(page.locator(tid("builtin-select"))).to_be_disabled()
    steps.shot("builtins-loading")
    assert held, "the page did not ask for the built-in datasets"
    released.append(True)
    for route in held:
        route.continue_()
    expect(loading).to_have_count(0)
    expect(page.locator(tid("builtin-select"))).to_be_enabled()
    expect(page.locator(f"{tid('builtin-select')} option")).not_to_have_count(1)
    steps.shot("builtins-loaded")
    page.unroute("**/api/datasets/builtins/")
