"""Canvas speed with 201 nodes: load, pan frame times, an edit's time to render.

Run: `.venv/bin/python bench/canvas_200.py` (after `make frontend`). It serves
frontend/dist with an in-memory stand-in for the API (canvas_fake_api.py; validation is the real
engine) and drives Debian's Chromium. Every figure is also given as a ratio to the same
measurement on a 20-node graph in the same run, since the machine is shared.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from playwright.sync_api import Browser, sync_playwright  # noqa: E402

from bench.canvas_fake_api import FakeApi, serve  # noqa: E402
from tests.e2e.conftest import CHROMIUM, CHROMIUM_ARGS  # noqa: E402

FRAME_RECORDER = """
() => {
  window.__frames = [];
  let last = performance.now();
  const tick = (now) => { window.__frames.push(now - last); last = now; if (window.__recording) requestAnimationFrame(tick); };
  window.__recording = true;
  requestAnimationFrame(tick);
}
"""


def branches_spec(nodes: int) -> dict[str, Any]:
    """Input [64] into 10 branches of Linear(64)/ReLU pairs, joined by Concat: `nodes` op nodes.

    No stored layout, so opening it includes the auto-layout. Ten branches keep it roughly
    as wide as tall, like a real network fitted to the screen.
    """
    branches = 10
    depth = (nodes - 1) // branches
    spec_nodes: list[dict[str, Any]] = []
    ends = []
    for b in range(branches):
        prev = "x"
        for i in range(depth):
            node_id = f"b{b}_fc{i}" if i % 2 == 0 else f"b{b}_act{i}"
            if i % 2 == 0:
                spec_nodes.append(
                    {
                        "id": node_id,
                        "op": "Linear",
                        "params": {"out_features": 64},
                        "inputs": [prev],
                    }
                )
            else:
                spec_nodes.append({"id": node_id, "op": "ReLU", "inputs": [prev]})
            prev = node_id
        ends.append(prev)
    spec_nodes.append({"id": "joined", "op": "Concat", "params": {"dim": 0}, "inputs": ends})
    return {
        "version": 1,
        "inputs": [{"id": "x", "shape": [64], "dtype": "float32"}],
        "nodes": spec_nodes,
        "outputs": ["joined"],
    }


def measure(browser: Browser, url: str, graph_id: int, nodes: int) -> dict[str, float]:
    """Load the graph, pan it, edit one node; seconds (frame times in ms)."""
    # A fresh context each time: no local draft of the previous run's edit.
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    start = time.perf_counter()
    page.goto(f"{url}/app/graphs/{graph_id}")
    page.wait_for_function(f"document.querySelectorAll('.react-flow__node').length === {nodes + 2}")
    drawn = time.perf_counter() - start
    page.wait_for_selector('[data-testid="status-validity"]:text-is("Valid")')
    checked = time.perf_counter() - start

    box = page.locator('[data-testid="canvas"]').bounding_box()
    assert box
    page.evaluate(FRAME_RECORDER)
    # Grab the pane below the graph (fitted with padding) so the drag pans, not moves a node.
    x, y = box["x"] + box["width"] * 0.3, box["y"] + box["height"] - 12
    page.mouse.move(x, y)
    page.mouse.down()
    for i in range(1, 121):  # pan up and back down: 120 pointer moves
        page.mouse.move(x + (i % 40) * 3, y - (i if i <= 60 else 120 - i) * 6)
    page.mouse.up()
    moved = page.evaluate("() => document.querySelector('.react-flow__viewport').style.transform")
    assert "translate(" in moved, "the drag did not pan the canvas"
    frames = page.evaluate("() => { window.__recording = false; return window.__frames.slice(1); }")

    page.click('[data-testid="node-b0_fc0"] .node-head')
    field = page.locator('[data-testid="param-out_features"]')
    start = time.perf_counter()
    field.fill("32")
    page.wait_for_function(
        "document.querySelector('[data-testid=\"node-b0_fc0\"] .node-params').textContent.includes('out_features=32')"
    )
    rendered = time.perf_counter() - start
    page.wait_for_function(
        "document.querySelector('[data-testid=\"node-shape-b0_fc0\"]').textContent === '[32]'"
    )
    reshaped = time.perf_counter() - start
    context.close()
    return {
        "load: nodes drawn (s)": drawn,
        "load: checked, shapes shown (s)": checked,
        "pan: median frame (ms)": statistics.median(frames),
        "pan: p95 frame (ms)": sorted(frames)[int(len(frames) * 0.95)],
        "edit: node re-rendered (s)": rendered,
        "edit: server-checked shape shown (s)": reshaped,
    }


def main() -> None:
    api = FakeApi()
    small = api.add_graph("branches 21", branches_spec(21))
    big = api.add_graph("branches 201", branches_spec(201))
    server, url = serve(api)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            measure(browser, url, small, 21)  # warm-up: caches, JIT
            base = measure(browser, url, small, 21)
            runs = [measure(browser, url, big, 201) for _ in range(3)]
            browser.close()
    finally:
        server.shutdown()
    print("| measurement | 21 nodes | 201 nodes (median of 3) | ratio |")
    print("|---|---:|---:|---:|")
    for key, value in base.items():
        big_value = statistics.median(r[key] for r in runs)
        digits = 1 if "(ms)" in key else 3
        print(f"| {key} | {value:.{digits}f} | {big_value:.{digits}f} | {big_value / value:.2f}x |")


if __name__ == "__main__":
    main()
