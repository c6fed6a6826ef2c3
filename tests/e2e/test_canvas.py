"""The canvas as a new user drives it: sign in, draw, wire, check, undo, save, restore, read the code."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from .conftest import ARTIFACTS, Account, LiveServer

pytestmark = pytest.mark.e2e


class Steps:
    """Screenshots numbered in the order a user would see them."""

    def __init__(self, page: Page, folder: Path) -> None:
        self.page = page
        self.folder = folder
        self.count = 0
        folder.mkdir(parents=True, exist_ok=True)

    def shot(self, name: str) -> None:
        """Save a screenshot of the page as it is now."""
        self.count += 1
        self.page.screenshot(path=str(self.folder / f"{self.count:02d}-{name}.png"))


def tid(name: str) -> str:
    """A selector for a data-testid."""
    return f'[data-testid="{name}"]'


def node_id(page: Page, first: str) -> str:
    """The id the canvas gave a new node: `linear_1` is `linear_1_<tag>` on the shared canvas, the
    tag being this browser's Y.Doc client id (so two people's new nodes never share an id)."""
    node = page.locator(f'[data-testid^="node-{first}_"]').first
    expect(node).to_be_visible()
    return (node.get_attribute("data-testid") or "").removeprefix("node-")


def sign_in(page: Page, server: LiveServer, account: Account) -> None:
    page.goto(f"{server.url}/app/")
    expect(page).to_have_url(re.compile(r"/app/login$"))
    page.fill(tid("login-username"), account.username)
    page.fill(tid("login-password"), account.password)
    page.click(tid("login-submit"))
    expect(page.locator(tid("graph-list-page"))).to_be_visible()


def drop_op(page: Page, op: str, x: int, y: int) -> None:
    """Drag an op from the palette onto the canvas at (x, y) inside the canvas box."""
    page.drag_and_drop(tid(f"palette-item-{op}"), tid("canvas"), target_position={"x": x, "y": y})


def wire(page: Page, source: str, target: str, slot: int = 0) -> None:
    """Draw a wire from a node's output handle to another node's input slot."""
    start = page.locator(tid(f"handle-out-{source}")).bounding_box()
    end = page.locator(tid(f"handle-in-{target}-{slot}")).bounding_box()
    assert start and end, f"handles of {source} -> {target} not on screen"
    page.mouse.move(start["x"] + start["width"] / 2, start["y"] + start["height"] / 2)
    page.mouse.down()
    page.mouse.move(end["x"] + end["width"] / 2, end["y"] + end["height"] / 2, steps=12)
    page.mouse.up()


def set_param(page: Page, node: str, name: str, value: str) -> None:
    """Select a node and type a parameter value into its form."""
    page.click(f"{tid(f'node-{node}')} .node-head")
    expect(page.locator(tid("inspector"))).to_contain_text(node)
    field = page.locator(tid(f"param-{name}"))
    field.fill(value)
    field.blur()


def test_new_user_draws_checks_saves_and_restores_a_network(
    page: Page, netloom_server: LiveServer, new_account: Account
) -> None:
    steps = Steps(page, ARTIFACTS)
    status = page.locator(tid("status-validity"))

    sign_in(page, netloom_server, new_account)
    steps.shot("signed-in")

    page.fill(tid("new-graph-name"), "digits mlp")
    page.click(tid("create-graph"))
    expect(page.locator(tid("graph-name"))).to_have_text("digits mlp")
    expect(page.locator(tid("node-x"))).to_be_visible()
    expect(page.locator(tid("node-out-1"))).to_be_visible()
    steps.shot("empty-canvas")

    # Four ops from the palette, left to right across the canvas.
    for i, op in enumerate(["Flatten", "Linear", "ReLU", "Linear"]):
        drop_op(page, op, 110 + i * 190, 260 + (i % 2) * 110)
    flatten_1, linear_1, relu_1, linear_2 = (
        node_id(page, n) for n in ["flatten_1", "linear_1", "relu_1", "linear_2"]
    )
    steps.shot("ops-dropped")

    for source, target in [
        ("x", flatten_1),
        (flatten_1, linear_1),
        (linear_1, relu_1),
        (relu_1, linear_2),
        (linear_2, "out-1"),
    ]:
        wire(page, source, target)
    page.click(tid("auto-layout"))
    set_param(page, linear_1, "out_features", "32")
    set_param(page, linear_2, "out_features", "10")
    expect(status).to_have_text("Valid")
    expect(page.locator(tid(f"edge-shape-x-{flatten_1}"))).to_have_text("[1, 8, 8]")
    expect(page.locator(tid(f"edge-shape-{flatten_1}-{linear_1}"))).to_have_text("[64]")
    expect(page.locator(tid(f"edge-shape-{linear_1}-{relu_1}"))).to_have_text("[32]")
    expect(page.locator(tid(f"edge-shape-{linear_2}-out-1"))).to_have_text("[10]")
    expect(page.locator(tid(f"node-params-{linear_1}"))).to_have_text("2.1k params")  # 64*32 + 32
    expect(page.locator(tid("status-params"))).to_have_text("2.4k params")  # + 32*10 + 10
    steps.shot("wired-and-valid")

    # A wrong size: the form says so at once, the node says so after the server's check.
    set_param(page, linear_1, "out_features", "0")
    expect(page.locator(tid("param-error-out_features")).first).to_contain_text("at least 1")
    node_errors = page.locator(tid(f"node-errors-{linear_1}"))
    expect(node_errors).to_contain_text("out_features")
    expect(status).to_have_text(re.compile(r"^\d+ errors?$"))
    steps.shot("size-wrong")
    set_param(page, linear_1, "out_features", "32")
    expect(node_errors).to_have_count(0)
    expect(status).to_have_text("Valid")
    steps.shot("size-fixed")

    # Undo brings the wrong size (and its error) back; redo the fix.
    page.click(tid("undo"))
    expect(node_errors).to_be_visible()
    steps.shot("undone")
    page.click(tid("redo"))
    expect(node_errors).to_have_count(0)
    page.keyboard.press("Control+z")
    expect(node_errors).to_be_visible()
    page.keyboard.press("Control+Shift+z")
    expect(node_errors).to_have_count(0)
    expect(status).to_have_text("Valid")
    steps.shot("redone")

    # Save, change, save again, then bring back revision 1.
    expect(page.locator(tid("unsaved-flag"))).to_be_visible()
    page.click(tid("save"))
    expect(page.locator(tid("status-saved"))).to_have_text("Saved · revision 1")
    expect(page.locator(tid("unsaved-flag"))).to_have_count(0)
    set_param(page, linear_2, "out_features", "5")
    expect(page.locator(tid(f"edge-shape-{linear_2}-out-1"))).to_have_text("[5]")
    expect(page.locator(tid("unsaved-flag"))).to_be_visible()
    page.click(tid("save"))
    expect(page.locator(tid("status-saved"))).to_have_text("Saved · revision 2")
    page.click(tid("tab-revisions"))
    expect(page.locator(tid("revision-2"))).to_be_visible()
    steps.shot("two-revisions")
    page.click(tid("restore-revision-1"))
    expect(page.locator(tid(f"edge-shape-{linear_2}-out-1"))).to_have_text("[10]")
    expect(page.locator(tid("unsaved-flag"))).to_be_visible()
    steps.shot("restored-revision-1")

    # The unsaved restore survives a reload: it is in the graph's shared canvas, not only here.
    page.reload()
    expect(page.locator(tid("unsaved-flag"))).to_be_visible()
    expect(page.locator(tid(f"edge-shape-{linear_2}-out-1"))).to_have_text("[10]")

    # The generated PyTorch source of what is on the canvas.
    page.click(tid("tab-code"))
    source = page.locator(tid("code-source"))
    expect(source).to_contain_text("class Net")
    expect(source).to_contain_text("nn.Linear(in_features=64, out_features=32")
    expect(source).to_contain_text("nn.Linear(in_features=32, out_features=10")
    steps.shot("generated-source")


def test_keyboard_insert_copy_paste_delete_and_a_viewer_cannot_edit(
    page: Page, browser: object, netloom_server: LiveServer, new_account: Account
) -> None:
    steps = Steps(page, ARTIFACTS / "keyboard-and-viewer")
    sign_in(page, netloom_server, new_account)
    page.fill(tid("new-graph-name"), "from template")
    page.select_option(tid("new-graph-template"), "digits_mlp")
    page.click(tid("create-graph"))
    expect(page.locator(tid("node-fc2"))).to_be_visible()
    expect(page.locator(tid("status-validity"))).to_have_text("Valid")
    expect(page.locator(tid("status-saved"))).to_have_text("Saved · revision 1")

    # "/" opens the insert box at the pointer; Enter inserts the best match.
    box = page.locator(tid("canvas")).bounding_box()
    assert box
    page.mouse.move(box["x"] + 80, box["y"] + 120)
    page.keyboard.press("/")
    expect(page.locator(tid("insert-box"))).to_be_visible()
    page.keyboard.type("Dropo")
    steps.shot("insert-box")
    page.keyboard.press("Enter")
    node_id(page, "dropout_1")

    # Copy two wired nodes: the copy keeps its inner wire and gets fresh ids.
    page.click(f"{tid('node-fc1')} .node-head")
    page.click(f"{tid('node-act')} .node-head", modifiers=["Control"])
    page.keyboard.press("Control+c")
    page.keyboard.press("Control+v")
    linear_1, relu_1 = node_id(page, "linear_1"), node_id(page, "relu_1")
    # The copied Linear has no input yet, so its wire carries no shape.
    expect(page.locator(tid(f"edge-shape-{linear_1}-{relu_1}"))).to_have_count(0)
    expect(page.locator(".react-flow__edge")).to_have_count(6)  # 5 + the copied inner wire
    steps.shot("pasted")
    page.keyboard.press("Delete")
    expect(page.locator(tid(f"node-{linear_1}"))).to_have_count(0)
    page.keyboard.press("Control+z")
    expect(page.locator(tid(f"node-{linear_1}"))).to_be_visible()

    # A viewer of the same team sees the graph but cannot change or save it.
    viewer = Account(f"{new_account.username}_v", new_account.password, new_account.team)
    netloom_server.manage(
        "createuser",
        viewer.username,
        "--password",
        viewer.password,
        "--team",
        viewer.team,
        "--role",
        "viewer",
    )
    context = browser.new_context(viewport={"width": 1280, "height": 800})  # type: ignore[attr-defined]
    try:
        vpage = context.new_page()
        sign_in(vpage, netloom_server, viewer)
        vpage.click(tid("open-graph"))
        expect(vpage.locator(tid("node-fc1"))).to_be_visible()
        expect(vpage.locator(tid("save"))).to_have_count(0)
        expect(vpage.locator(tid("palette-item-Linear"))).to_be_disabled()
        vpage.click(f"{tid('node-fc1')} .node-head")
        expect(vpage.locator(tid("param-out_features"))).to_be_disabled()
        expect(vpage.locator(tid("status-saved"))).to_contain_text("Read only")
        vpage.screenshot(path=str(steps.folder / "viewer.png"))
    finally:
        context.close()
