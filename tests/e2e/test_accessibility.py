"""axe-core (the npm package, injected into each page) finds no serious or critical accessibility
violation on the graphs, editor, datasets, runs, run, compare, sweeps, sweep and workers pages, nor
in the forms opened from them (new sweep, a CSV's columns, a node's parameters, the train dialog)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from .conftest import ARTIFACTS, REPO, Account, LiveServer
from .journey import SEPARABLE, make_journey
from .test_canvas import Steps, sign_in, tid
from .test_judge import Api

pytestmark = pytest.mark.e2e

AXE = REPO / "frontend" / "node_modules" / "axe-core" / "axe.min.js"
SERIOUS = ("serious", "critical")

RUN_AXE = """async () => {
  const result = await axe.run(document, {resultTypes: ["violations"]});
  return result.violations.map((v) => ({
    id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.slice(0, 5).map((n) => n.target.join(" ") + " :: " + n.failureSummary.split("\\n").slice(0, 3).join(" ")),
  }));
}"""


def violations(page: Page) -> list[dict[str, Any]]:
    """The serious and critical violations axe-core finds on the page as it is now."""
    page.add_script_tag(path=str(AXE))
    return [v for v in page.evaluate(RUN_AXE) if v["impact"] in SERIOUS]


def test_no_serious_accessibility_violation_on_any_page(
    page: Page, netloom_server: LiveServer, new_account: Account, celery_worker: Path
) -> None:
    if not AXE.is_file():
        pytest.skip("axe-core is not installed: run `npm install` in frontend/")
    steps = Steps(page, ARTIFACTS / "accessibility")
    sign_in(page, netloom_server, new_account)
    journey = make_journey(Api(page, netloom_server))
    url = f"{netloom_server.url}/app"
    pages = {
        "graphs": (f"{url}/", "graph-list-page"),
        "editor": (f"{url}/graphs/{journey.graph}", "editor"),
        "datasets": (f"{url}/datasets", "datasets-page"),
        "runs": (f"{url}/runs", "runs-page"),
        "run": (f"{url}/runs/{journey.runs[0]}", "evaluation-panel"),
        "compare": (f"{url}/compare?ids={journey.runs[0]},{journey.runs[1]}", "compare-page"),
        "sweeps": (f"{url}/sweeps", "sweeps-page"),
        "sweep": (f"{url}/sweeps/{journey.sweep}", "sweep-page"),
        "workers": (f"{url}/workers", "workers-page"),
    }
    found: dict[str, list[dict[str, Any]]] = {}

    def check(name: str) -> None:
        page.wait_for_load_state("networkidle")
        steps.shot(name)
        if problems := violations(page):
            found[name] = problems

    for name, (address, ready) in pages.items():
        page.goto(address)
        expect(page.locator(tid(ready))).to_be_visible(timeout=30_000)
        check(name)

    # The forms behind a click: a new sweep, a CSV's columns, a node's parameters, the train dialog.
    page.goto(pages["sweeps"][0])
    page.click(tid("new-sweep"))
    expect(page.locator(tid("new-sweep-form"))).to_be_visible()
    check("new-sweep-form")
    page.goto(pages["datasets"][0])
    page.set_input_files(
        tid("upload-file"), {"name": "more.csv", "mimeType": "text/csv", "buffer": SEPARABLE.encode()}
    )
    expect(page.locator(tid("upload-target"))).to_have_value("label")
    check("upload-columns")
    page.goto(pages["editor"][0])
    page.click(f"{tid('node-fc1')} .node-head")
    expect(page.locator(tid("param-out_features"))).to_be_visible()
    check("editor-parameters")
    page.click(tid("train"))
    expect(page.locator(tid("train-start"))).to_be_enabled()
    check("train-dialog")
    assert not found, "\n".join(
        f"{name}: {v['impact']} {v['id']} ({v['help']}): {v['nodes']}"
        for name, problems in found.items()
        for v in problems
    )
