"""Live co-editing of one graph: three teammates in three browsers drop layers at once and all see
the same canvas with distinct ids, see each other present, a delete and a concurrent parameter edit
converge, a late joiner sees everything without a save, a viewer cannot change anything; and a
browser that goes offline keeps editing and merges on reconnect."""

from __future__ import annotations

import base64
import re
import uuid
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect

from .conftest import Account, LiveServer
from .test_canvas import sign_in, tid

pytestmark = pytest.mark.e2e

SHOTS = Path("/tmp/shots/h38f")
RELU = '[data-testid^="node-relu_"]'
# The ids the canvas draws (node-<id>), in the page: what each person sees.
NODE_IDS = """() => [...document.querySelectorAll('[data-testid^="node-"]')]
  .map((e) => e.getAttribute("data-testid").slice(5))
  .filter((id) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(id)).sort()"""


# Where each node is on the flow (React Flow's transform, the same whatever the page's zoom).
NODE_PLACES = """() => Object.fromEntries([...document.querySelectorAll(".react-flow__node")]
  .map((e) => [e.getAttribute("data-id"), e.style.transform]))"""


def place_of(page: Page, node: str) -> str:
    return page.locator(tid(f"rf__node-{node}")).evaluate("(e) => e.style.transform")


def shot(page: Page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"))


def teammate(server: LiveServer, team_of: Account, name: str, role: str = "editor") -> Account:
    account = Account(f"{name}_{uuid.uuid4().hex[:6]}", team_of.password, team_of.team)
    server.manage(
        "createuser", account.username, "--password", account.password,
        "--team", account.team, "--role", role,
    )  # fmt: skip
    return account


def open_as(
    browser: Browser, server: LiveServer, account: Account, graph_url: str
) -> tuple[BrowserContext, Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    sign_in(page, server, account)
    page.goto(graph_url)
    expect(page.locator(tid("editor"))).to_be_visible()
    expect(page.locator(tid("collab-status"))).to_have_attribute("data-status", "online")
    return context, page


def new_graph(page: Page, server: LiveServer, account: Account, name: str) -> str:
    sign_in(page, server, account)
    page.fill(tid("new-graph-name"), name)
    page.select_option(tid("new-graph-template"), "digits_mlp")
    page.click(tid("create-graph"))
    expect(page.locator(tid("status-saved"))).to_have_text("Saved · revision 1")
    expect(page.locator(tid("collab-status"))).to_have_attribute("data-status", "online")
    return page.url


def graph_id(url: str) -> int:
    return int(re.findall(r"\d+", url.rstrip("/").split("/")[-1])[0])


def api_get(page: Page, path: str) -> Any:
    """A GET with this page's session (what the person could ask the API)."""
    return page.evaluate("async (p) => (await fetch(p)).json()", path)


def present(page: Page, *accounts: Account) -> None:
    avatars = page.locator(tid("presence-avatar"))
    expect(avatars).to_have_count(len(accounts))
    for account in accounts:
        avatar = page.locator(f'{tid("presence-avatar")}[data-username="{account.username}"]')
        expect(avatar).to_have_attribute("aria-label", account.username)
        expect(avatar).to_have_attribute("title", account.username)


def palette_click(page: Page, op: str) -> None:
    """Add an op from the palette (a click puts it in the middle of the canvas)."""
    page.click(tid(f"palette-item-{op}"))


def drop(page: Page, op: str, x: int, y: int) -> None:
    page.drag_and_drop(tid(f"palette-item-{op}"), tid("canvas"), target_position={"x": x, "y": y})


def intruder_update_message() -> str:
    """A y-protocols update message that adds a node `intruder`, base64 (what a hacked client could send)."""
    from pycrdt import Doc, Map, create_update_message

    doc = Doc()
    nodes = doc.get("nodes", type=Map)
    with doc.transaction():
        nodes["intruder"] = Map({"op": "ReLU", "params": Map(), "x": 0.0, "y": 0.0})
    return base64.b64encode(create_update_message(doc.get_update())).decode()


SEND_RAW = """async ([path, b64]) => {
  const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  const ws = new WebSocket(`ws://${location.host}${path}`);
  ws.binaryType = "arraybuffer";
  return await new Promise((resolve) => {
    const timer = setTimeout(() => { ws.close(); resolve("no answer"); }, 8000);
    ws.onopen = () => ws.send(bytes);
    ws.onmessage = (e) => {
      const d = new Uint8Array(e.data);
      if (d[0] === 2) { clearTimeout(timer); ws.close(); resolve(new TextDecoder().decode(d.slice(3))); }
    };
    ws.onclose = (e) => { clearTimeout(timer); resolve(`closed ${e.code}`); };
  });
}"""


def test_three_people_edit_one_graph_live(
    page: Page, browser: Browser, netloom_server: LiveServer, new_account: Account
) -> None:
    alice = new_account
    url = new_graph(page, netloom_server, alice, "shared mlp")
    gid = graph_id(url)
    bob = teammate(netloom_server, alice, "bob")
    carol = teammate(netloom_server, alice, "carol")
    dave = teammate(netloom_server, alice, "dave")
    vic = teammate(netloom_server, alice, "vic", role="viewer")
    contexts: list[BrowserContext] = []
    try:
        bctx, bpage = open_as(browser, netloom_server, bob, url)
        cctx, cpage = open_as(browser, netloom_server, carol, url)
        contexts += [bctx, cctx]
        people = {alice.username: page, bob.username: bpage, carol.username: cpage}
        accounts = {alice.username: alice, bob.username: bob, carol.username: carol}

        # Each sees the other two (avatars carry the username as label and title).
        for name, p in people.items():
            present(p, *[a for n, a in accounts.items() if n != name])
        shot(page, "01-three-present-alice")

        # Each drops four ReLUs, interleaved: nobody waits for the others' edits to arrive.
        for i in range(4):
            for k, p in enumerate(people.values()):
                slot = 3 * i + k  # two columns beside the graph, so every node stays clickable
                drop(p, "ReLU", 100 if slot % 2 == 0 else 680, 40 + 90 * (slot // 2))
        # Within 3 s every canvas shows all twelve, with distinct ids, and the same graph.
        for p in people.values():
            expect(p.locator(RELU)).to_have_count(12, timeout=3000)
        seen = [p.evaluate(NODE_IDS) for p in people.values()]
        relus = [i for i in seen[0] if i.startswith("relu_")]
        assert len(set(relus)) == 12
        assert seen[0] == seen[1] == seen[2]
        places = [p.evaluate(NODE_PLACES) for p in people.values()]
        assert places[0] == places[1] == places[2]
        shared = api_get(page, f"/api/graphs/{gid}/collab/")["spec"]
        assert sorted(n["id"] for n in shared["nodes"]) == sorted(
            i for i in seen[0] if i not in ("x",)
        )
        shot(page, "02-twelve-relus-alice")
        shot(bpage, "02-twelve-relus-bob")
        shot(cpage, "02-twelve-relus-carol")

        # Undo is Bob's own: his last ReLU goes (for everyone), nobody else's; redo brings it back.
        # (His last drop is still selected on his canvas: its id carries his tag.)
        last = bpage.locator(".react-flow__node.selected").get_attribute("data-id")
        assert last and last.startswith("relu_4_")
        mine = bpage.evaluate(NODE_IDS)
        bpage.keyboard.press("Control+z")
        for p in people.values():
            expect(p.locator(RELU)).to_have_count(11)
        gone = sorted(set(mine) - set(bpage.evaluate(NODE_IDS)))
        assert gone == [last]
        assert page.evaluate(NODE_IDS) == cpage.evaluate(NODE_IDS) == bpage.evaluate(NODE_IDS)
        bpage.keyboard.press("Control+Shift+z")
        for p in people.values():
            expect(p.locator(RELU)).to_have_count(12)

        # A drag travels as presence: the others see the node move while Carol holds it, and the
        # shared document gets its place once, on the drop.
        before = place_of(page, "act")
        stored = api_get(page, f"/api/graphs/{gid}/collab/")["spec"]["layout"]["act"]
        head = cpage.locator(f"{tid('node-act')} .node-head").bounding_box()
        assert head
        cpage.mouse.move(head["x"] + 20, head["y"] + 8)
        cpage.mouse.down()
        cpage.mouse.move(head["x"] + 60, head["y"] + 48, steps=8)
        cpage.mouse.move(head["x"] + 80, head["y"] + 68, steps=4)
        expect(page.locator(tid("rf__node-act"))).not_to_have_attribute(
            "style", re.compile(re.escape(before))
        )
        assert api_get(page, f"/api/graphs/{gid}/collab/")["spec"]["layout"]["act"] == stored
        shot(page, "02b-carol-drags-act")
        cpage.mouse.up()
        expect(page.locator(tid("rf__node-act"))).to_have_attribute(
            "style", re.compile(re.escape(place_of(cpage, "act")))
        )
        assert api_get(page, f"/api/graphs/{gid}/collab/")["spec"]["layout"]["act"] != stored

        # Carol points at a node and selects it: the others see her pointer and her selection.
        cpage.click(f"{tid('node-fc1')} .node-head")
        expect(page.locator(tid("rf__node-fc1"))).to_have_attribute(
            "data-selected-by", carol.username
        )
        box = cpage.locator(tid("canvas")).bounding_box()
        assert box
        cpage.mouse.move(box["x"] + 300, box["y"] + 300)
        cpage.mouse.move(box["x"] + 320, box["y"] + 310)
        expect(
            page.locator(f'{tid("remote-cursor")}[data-username="{carol.username}"]')
        ).to_be_visible()

        # Bob is in fc2's out_features; Alice, looking at fc2, is told so — and deletes fc2 meanwhile.
        bpage.click(f"{tid('node-fc2')} .node-head")
        bpage.locator(tid("param-out_features")).focus()
        page.click(f"{tid('node-fc2')} .node-head")
        expect(page.locator(tid("presence-editing"))).to_contain_text(
            f"{bob.username} is editing fc2's out_features"
        )
        shot(page, "03-bob-is-editing-fc2")
        bpage.locator(tid("param-out_features")).fill("7")
        page.keyboard.press("Delete")
        for p in people.values():
            expect(p.locator(tid("node-fc2"))).to_have_count(0)
        after = [p.evaluate(NODE_IDS) for p in people.values()]
        assert after[0] == after[1] == after[2]
        assert "fc2" not in after[0]
        spec = api_get(page, f"/api/graphs/{gid}/collab/")["spec"]
        assert "fc2" not in [n["id"] for n in spec["nodes"]]
        shot(bpage, "04-fc2-deleted-bob")

        # A fourth teammate opens it later: everything is there, and nobody saved.
        dctx, dpage = open_as(browser, netloom_server, dave, url)
        contexts.append(dctx)
        expect(dpage.locator(RELU)).to_have_count(12)
        assert dpage.evaluate(NODE_IDS) == after[0]
        expect(dpage.locator(tid("status-saved"))).to_have_text("Unsaved changes")
        assert api_get(dpage, f"/api/graphs/{gid}/")["latest_revision"] == 1
        shot(dpage, "05-late-joiner-dave")

        # A viewer: read-only canvas with a note; a drop does nothing; an update sent anyway is refused.
        vctx, vpage = open_as(browser, netloom_server, vic, url)
        contexts.append(vctx)
        expect(vpage.locator(tid("viewer-banner"))).to_contain_text("View only")
        expect(vpage.locator(RELU)).to_have_count(12)
        drop(vpage, "Tanh", 400, 300)
        expect(vpage.locator('[data-testid^="node-tanh_"]')).to_have_count(0)
        answer = vpage.evaluate(SEND_RAW, [f"/ws/graphs/{gid}/collab/", intruder_update_message()])
        assert answer == "read-only"
        shot(vpage, "06-viewer")
        spec = api_get(page, f"/api/graphs/{gid}/collab/")["spec"]
        assert "intruder" not in [n["id"] for n in spec["nodes"]]
        expect(page.locator(tid("node-intruder"))).to_have_count(0)

        # Save revision keeps the shared state as revision 2, for everyone.
        page.click(tid("save"))
        expect(page.locator(tid("status-saved"))).to_have_text("Saved · revision 2")
        expect(bpage.locator(tid("status-saved"))).to_have_text(
            "Saved · revision 2", timeout=15_000
        )
        shot(page, "07-saved-revision-2")
    finally:
        for context in contexts:
            context.close()


def test_an_offline_browser_keeps_editing_and_merges_on_reconnect(
    page: Page, browser: Browser, netloom_server: LiveServer, new_account: Account
) -> None:
    alice = new_account
    url = new_graph(page, netloom_server, alice, "offline mlp")
    gid = graph_id(url)
    bob = teammate(netloom_server, alice, "bob")
    bctx, bpage = open_as(browser, netloom_server, bob, url)
    try:
        present(page, bob)
        bctx.set_offline(True)
        # The socket is cut: Bob's badge says so, and Alice no longer sees him within a few seconds.
        expect(bpage.locator(tid("collab-status"))).to_have_attribute("data-status", "offline")
        expect(page.locator(tid("presence-avatar"))).to_have_count(0, timeout=10_000)

        # Both edit: Alice adds a ReLU and changes fc1; Bob, offline, adds a Tanh and changes fc2.
        drop(page, "ReLU", 600, 200)
        page.click(f"{tid('node-fc1')} .node-head")
        page.locator(tid("param-out_features")).fill("99")
        page.locator(tid("param-out_features")).blur()
        drop(bpage, "Tanh", 600, 320)
        bpage.click(f"{tid('node-fc2')} .node-head")
        bpage.locator(tid("param-out_features")).fill("5")
        bpage.locator(tid("param-out_features")).blur()
        expect(bpage.locator('[data-testid^="node-tanh_"]')).to_have_count(1)
        # Nothing crossed while offline.
        bpage.wait_for_timeout(1500)
        expect(bpage.locator(RELU)).to_have_count(0)
        expect(page.locator('[data-testid^="node-tanh_"]')).to_have_count(0)
        shot(bpage, "10-bob-offline")

        bctx.set_offline(False)
        expect(bpage.locator(tid("collab-status"))).to_have_attribute(
            "data-status", "online", timeout=10_000
        )
        for p in (page, bpage):
            expect(p.locator(RELU)).to_have_count(1)
            expect(p.locator('[data-testid^="node-tanh_"]')).to_have_count(1)
        assert page.evaluate(NODE_IDS) == bpage.evaluate(NODE_IDS)
        spec = api_get(page, f"/api/graphs/{gid}/collab/")["spec"]
        params = {n["id"]: n.get("params", {}) for n in spec["nodes"]}
        assert params["fc1"]["out_features"] == 99
        assert params["fc2"]["out_features"] == 5
        page.click(f"{tid('node-fc2')} .node-head")
        expect(page.locator(tid("param-out_features"))).to_have_value("5")
        bpage.click(f"{tid('node-fc1')} .node-head")
        expect(bpage.locator(tid("param-out_features"))).to_have_value("99")
        present(page, bob)
        shot(bpage, "11-bob-reconnected")
        shot(page, "11-alice-after-merge")
    finally:
        bctx.close()
