"""The runs page at team scale, in the browser: four runs of the iris MLP (different learning
rates, two tagged "baseline") trained by the real Celery worker; the table sorted by a metric on the
server, narrowed by a typed filter expression (completion of field names, the exact count), a wrong
expression answered with its column, a saved view reopened after a reload, the top two compared;
then 97 more (cancelled before they train) make a second page, reached by scrolling.
axe-core checks the page with the filter error and the views shown.

Every order and count asserted is what GET /api/runs/ answers for the same query."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from urllib.parse import quote

import pytest
from playwright.sync_api import Page, expect

from .conftest import Account, LiveServer
from .test_accessibility import AXE, violations
from .test_canvas import Steps, sign_in, tid
from .test_judge import Api, wait_succeeded

pytestmark = pytest.mark.e2e

SPECS = Path(__file__).resolve().parents[2] / "examples" / "specs"
RATES = (0.1, 0.03, 0.01, 0.001)
SHOTS = Path(os.environ.get("NETLOOM_SHOTS", "/tmp/shots-runs-page"))


def test_user_sorts_filters_saves_a_view_and_compares_the_top_runs(
    page: Page, netloom_server: LiveServer, new_account: Account, celery_worker: Path
) -> None:
    steps = Steps(page, SHOTS)
    sign_in(page, netloom_server, new_account)
    api = Api(page, netloom_server)
    team = int(api.get("/api/auth/me/")["teams"][0]["id"])

    iris = api.post("/api/datasets/", {"team": team, "builtin": "iris"})
    spec = json.loads((SPECS / "iris_mlp.json").read_text())
    graph = api.post("/api/graphs/", {"team": team, "name": "iris mlp", "spec": spec})
    ids = []
    for i, rate in enumerate(RATES):
        run = api.post("/api/runs/", {
            "graph": graph["id"], "dataset": iris["id"], "name": f"lr {rate}",
            "tags": ["baseline"] if i % 2 == 0 else [],
            "config": {"epochs": 2, "batch_size": 16, "optimizer": {"lr": rate}},
        })  # fmt: skip
        ids.append(int(run["id"]))
    for run_id in ids:
        wait_succeeded(api, run_id)

    def first_ids(filter_: str, ordering: str, n: int) -> list[int]:
        query = f"/api/runs/?team={team}&ordering={quote(ordering)}&page_size={n}"
        if filter_:
            query += f"&filter={quote(filter_)}"
        return [r["id"] for r in api.get(query)["results"]]

    # --- every run, counted; a metric header sorts on the server ---------------------------------
    page.click(tid("nav-runs"))
    table = page.locator(tid("run-list"))
    expect(page.locator(tid("runs-count"))).to_have_text("4 runs")
    expect(table.locator("tbody tr")).to_have_count(4)
    header = page.locator(tid("sort-final:test/accuracy"))
    header.click()  # an accuracy starts with the largest
    expect(page.locator("th", has=header)).to_have_attribute("aria-sort", "descending")
    best = first_ids("", "-metrics.test/accuracy", 4)
    expect(table.locator("tbody tr").first).to_have_attribute("data-testid", f"run-row-{best[0]}")
    rows = [r.get_attribute("data-testid") for r in table.locator("tbody tr").all()]
    assert rows == [f"run-row-{i}" for i in best], (rows, best)
    expect(page.locator(tid("runs-order"))).to_have_text("· by metrics.test/accuracy, descending")
    steps.shot("sorted-by-test-accuracy")

    # --- a filter expression: field names complete, the count is the server's --------------------
    box = page.locator(tid("runs-filter"))
    box.fill("config.opt")
    expect(page.locator("datalist option[value='config.optimizer.lr']")).to_have_count(1)
    expect(page.locator("datalist option[value='metrics.test/accuracy']")).to_have_count(0)  # not a config field
    expression = 'config.optimizer.lr < 0.05 and tags = "baseline"'
    box.fill(expression)
    box.press("Enter")
    expect(page.locator(tid("runs-count"))).to_have_text("1 run")  # 0.01 (0.1 is too large; 0.03 untagged)
    expect(table.locator("tbody tr")).to_have_count(1)
    expect(table.locator(tid("open-run"))).to_have_text("lr 0.01")
    box.fill("config.optimizer.lr < 0.05")
    box.press("Enter")
    expect(page.locator(tid("runs-count"))).to_have_text("3 runs")
    steps.shot("filtered")

    # --- a wrong expression: the server's message, a caret under its column ----------------------
    box.fill("metrics.val/accuracy >")
    box.press("Enter")
    problem = page.locator(tid("runs-filter-error"))
    expect(problem).to_contain_text("column 23")
    expect(problem).to_contain_text("ends too early")
    caret = page.locator(tid("runs-filter-caret")).inner_text().split("\n")
    assert caret[0] == "metrics.val/accuracy >" and caret[1] == " " * 22 + "^", caret
    expect(page.locator(tid("runs-count"))).to_have_text("3 runs")  # the last good answer stays
    expect(box).to_have_attribute("aria-invalid", "true")
    steps.shot("filter-error")
    if AXE.is_file():
        assert violations(page) == [], violations(page)

    # --- a saved view: filter, ordering and columns, back after a reload ------------------------
    box.fill("config.optimizer.lr < 0.05")
    box.press("Enter")
    expect(problem).to_have_count(0)
    page.once("dialog", lambda dialog: dialog.accept("small rates"))
    page.click(tid("runs-view-save"))
    expect(page.locator(tid("runs-view"))).to_have_value(re.compile(r"^\d+$"))
    saved = api.get(f"/api/run-views/?team={team}")["results"]
    assert [(v["name"], v["filter"], v["ordering"]) for v in saved] == [
        ("small rates", "config.optimizer.lr < 0.05", "-metrics.test/accuracy")
    ], saved
    assert "metrics.test/accuracy" in saved[0]["columns"], saved

    page.reload()
    expect(page.locator(tid("runs-count"))).to_have_text("4 runs")
    page.select_option(tid("runs-view"), label="small rates")
    expect(box).to_have_value("config.optimizer.lr < 0.05")
    expect(page.locator(tid("runs-count"))).to_have_text("3 runs")
    expect(page.locator("th", has=page.locator(tid("sort-final:test/accuracy")))).to_have_attribute(
        "aria-sort", "descending"
    )
    top = first_ids("config.optimizer.lr < 0.05", "-metrics.test/accuracy", 3)
    rows = [r.get_attribute("data-testid") for r in table.locator("tbody tr").all()]
    assert rows == [f"run-row-{i}" for i in top], (rows, top)
    steps.shot("saved-view-reopened")
    page.click(tid("sort-config:optimizer.lr"))  # another order: the view is no longer what is shown
    expect(page.locator(tid("runs-view"))).to_have_value("")
    expect(page.locator(tid("runs-view-delete"))).to_be_disabled()
    page.select_option(tid("runs-view"), label="small rates")
    expect(page.locator(tid("runs-order"))).to_have_text("· by metrics.test/accuracy, descending")
    if AXE.is_file():
        assert violations(page) == [], violations(page)

    # --- compare the top two of this order -----------------------------------------------------
    page.fill(tid("compare-top-n"), "2")
    expect(page.locator(tid("compare-top"))).to_have_text("Compare top 2")
    page.click(tid("compare-top"))
    expect(page).to_have_url(re.compile(r"/app/compare\?ids=[\d,]+$"))
    opened = [int(i) for i in re.search(r"ids=([\d,]+)", page.url)[1].split(",")]  # type: ignore[index]
    assert opened == top[:2], (opened, top)
    expect(page.locator(tid("compare-page"))).to_be_visible()
    expect(page.locator('[data-testid^="compare-chart-"]').first).to_have_attribute("data-runs", "2", timeout=20_000)
    steps.shot("compare-top-2")

    # --- deleting the view (an editor) ----------------------------------------------------------
    page.go_back()
    page.select_option(tid("runs-view"), label="small rates")
    page.once("dialog", lambda dialog: dialog.accept())
    page.click(tid("runs-view-delete"))
    expect(page.locator(f"{tid('runs-view')} option")).to_have_text(["No saved views"])
    assert api.get(f"/api/run-views/?team={team}")["results"] == []

    # --- more than a page: 97 more runs, cancelled before they train ----------------------------
    for i in range(97):
        extra = api.post("/api/runs/", {
            "graph": graph["id"], "dataset": iris["id"], "name": f"extra {i}", "config": {"epochs": 1},
        })  # fmt: skip
        # A run the worker already took is cancelled at its next step, or has finished (409): both do.
        page.request.post(f"{netloom_server.url}/api/runs/{extra['id']}/cancel/", headers=api._headers())
    page.reload()
    expect(page.locator(tid("runs-count"))).to_have_text("101 runs")
    # One scroll over all of them (pages of 100 fetched as the view reaches them): the oldest run,
    # on the second page, is the last row.
    oldest = first_ids("", "created_at", 1)[0]  # newest first: the second page holds the oldest run
    scroller = page.locator(tid("runs-scroll"))
    for _ in range(20):
        scroller.evaluate("el => { el.scrollTop = el.scrollHeight; }")
        page.wait_for_timeout(100)
        if page.locator(tid(f"run-row-{oldest}")).count():
            break
    expect(page.locator(tid(f"run-row-{oldest}"))).to_be_visible()
    expect(table.locator("tbody tr[data-index]").last).to_have_attribute("data-testid", f"run-row-{oldest}")
    steps.shot("scrolled-to-the-oldest")
