"""Comparing runs in the browser: three runs of the iris MLP that differ only in the learning rate,
picked in the runs table, opened side by side (three curves on every chart, a configuration table
whose only row is the learning rate, final metrics), the comparison URL reopened; a run renamed,
noted and tagged from its page.

The runs are started through the REST API (the training journey itself is test_runs.py) and
trained by the real Celery worker; everything asserted is read off the page."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import Locator, Page, expect

from .conftest import ARTIFACTS, Account, LiveServer
from .test_canvas import Steps, sign_in, tid
from .test_judge import Api, wait_succeeded

pytestmark = pytest.mark.e2e

SPECS = Path(__file__).resolve().parents[2] / "examples" / "specs"
RATES = (0.1, 0.01, 0.001)


def run_label(run: dict) -> str:
    """What the page calls a run: its name, or "run <id>"."""
    return (run.get("name") or "").strip() or f"run {run['id']}"


def legend_labels(chart: Locator) -> list[str]:
    """The runs named in a chart's uPlot legend (the smoothed lines; raw ones are hidden)."""
    return [t.strip() for t in chart.locator(".u-legend tr.run-line .u-label").all_inner_texts()]


def points_per_run(chart: Locator) -> dict[str, int]:
    """How many points each run's curve has, from the chart's description ("name: N points, ...")."""
    described = chart.locator('[role="img"]').get_attribute("aria-label") or ""
    return {m[0]: int(m[1]) for m in re.findall(r"(?:\. |; )([^;:]+): (\d+) points", described)}


def see_the_comparison(page: Page, runs: list[dict]) -> None:
    """Three curves per chart, named after the runs; only the learning rate differs; finals side by side."""
    names = [run_label(r) for r in runs]
    expect(page.locator(tid("compare-page"))).to_be_visible()
    charts = page.locator('[data-testid^="compare-chart-"]')
    expect(charts.first).to_be_visible(timeout=20_000)
    for key in ("train/loss", "val/loss", "val/accuracy"):
        expect(page.locator(tid(f"compare-chart-{key}"))).to_be_visible()
    assert charts.count() >= 3
    for i in range(charts.count()):
        chart = charts.nth(i)
        expect(chart).to_have_attribute("data-runs", "3")
        expect(chart.locator(".u-legend tr.run-line")).to_have_count(3)
        assert sorted(legend_labels(chart)) == sorted(names), legend_labels(chart)
    # Every run's loss curve has points (a curve per run, not one run drawn three times).
    counts = points_per_run(page.locator(tid("compare-chart-train/loss")))
    assert sorted(counts) == sorted(names), counts
    assert all(n > 10 for n in counts.values()), counts

    table = page.locator(tid("compare-config"))
    expect(table.locator("tbody tr")).to_have_count(1)
    row = table.locator(tid("config-row-optimizer.lr"))
    expect(row.locator("th")).to_have_text("optimizer.lr")
    for rate in RATES:
        expect(row).to_contain_text(str(rate))
    expect(page.locator(tid("config-row-graph"))).to_have_count(0)  # one graph revision
    finals = page.locator(tid("compare-finals"))
    expect(finals).to_contain_text("test/accuracy")
    expect(finals.locator("thead th")).to_have_count(4)


def test_user_compares_three_learning_rates_and_reopens_the_comparison(
    page: Page, netloom_server: LiveServer, new_account: Account, celery_worker: Path
) -> None:
    steps = Steps(page, ARTIFACTS / "compare")
    sign_in(page, netloom_server, new_account)
    api = Api(page, netloom_server)
    team = int(api.get("/api/auth/me/")["teams"][0]["id"])

    # --- three runs of one graph revision, only the learning rate differs ------------------------
    iris = api.post("/api/datasets/", {"team": team, "builtin": "iris"})
    spec = json.loads((SPECS / "iris_mlp.json").read_text())
    graph = api.post("/api/graphs/", {"team": team, "name": "iris mlp", "spec": spec})
    ids = []
    for rate in RATES:
        run = api.post("/api/runs/", {
            "graph": graph["id"], "dataset": iris["id"], "name": f"lr {rate}",
            "config": {"epochs": 6, "batch_size": 16, "log_every": 1, "optimizer": {"lr": rate}},
        })  # fmt: skip
        ids.append(int(run["id"]))
    for run_id in ids:
        wait_succeeded(api, run_id)
    runs = [api.get(f"/api/runs/{i}/") for i in ids]

    # --- the runs table: configuration column, tick the three, Compare ---------------------------
    page.click(tid("nav-runs"))
    table = page.locator(tid("run-list"))
    expect(table.locator("tbody tr")).to_have_count(3)
    expect(table.locator(tid("run-status"))).to_have_text(["succeeded"] * 3)
    expect(table.locator("thead")).to_contain_text("optimizer.lr")  # the one field that differs
    expect(table.locator(tid("cell-config:optimizer.lr"))).to_have_count(3)
    compare = page.locator(tid("runs-compare"))
    expect(compare).to_be_disabled()
    page.check(tid(f"select-run-{ids[0]}"))
    expect(compare).to_have_text("Compare (1)")
    expect(compare).to_be_disabled()
    for run_id in ids[1:]:
        page.check(tid(f"select-run-{run_id}"))
    expect(compare).to_have_text("Compare (3)")
    expect(compare).to_be_enabled()
    # Sorting by the learning rate puts the smallest first.
    page.click(tid("sort-config:optimizer.lr"))
    expect(table.locator(tid("cell-config:optimizer.lr"))).to_have_text(["0.001", "0.01", "0.1"])
    steps.shot("runs-table-selected")

    compare.click()
    expect(page).to_have_url(re.compile(r"/app/compare\?ids=[\d,]+$"))
    opened = [int(i) for i in re.search(r"ids=([\d,]+)", page.url)[1].split(",")]  # type: ignore[index]
    assert sorted(opened) == sorted(ids)
    see_the_comparison(page, runs)
    page.locator(tid("compare-chart-val/loss")).scroll_into_view_if_needed()
    steps.shot("comparison")
    page.locator(tid("compare-config")).scroll_into_view_if_needed()
    steps.shot("comparison-config-and-finals")

    # --- a drag zooms into steps, fetched again for that window; a double click goes back --------
    chart = page.locator(tid("compare-chart-train/loss"))
    chart.scroll_into_view_if_needed()
    over = chart.locator(".u-over").bounding_box()
    assert over
    y = over["y"] + over["height"] / 2
    with page.expect_response(lambda r: "/api/runs/compare/" in r.url and "from_step=" in r.url):
        page.mouse.move(over["x"] + over["width"] * 0.3, y)
        page.mouse.down()
        page.mouse.move(over["x"] + over["width"] * 0.7, y, steps=8)
        page.mouse.up()
    zoom = page.locator(tid("compare-zoom-train/loss"))
    expect(zoom).to_have_text(re.compile(r"^steps \d+–\d+$"))
    expect(chart).to_have_attribute("data-runs", "3")
    steps.shot("comparison-zoomed")
    chart.locator(".u-over").dblclick()
    expect(zoom).to_have_count(0)

    # --- the URL reopens it, view included --------------------------------------------------------
    page.check(tid("compare-log"))
    expect(page).to_have_url(re.compile(r"/app/compare\?ids=[\d,]+&log=1$"))
    page.reload()
    see_the_comparison(page, runs)
    expect(page.locator(tid("compare-log"))).to_be_checked()
    page.uncheck(tid("compare-log"))
    page.goto(f"{netloom_server.url}/app/compare?ids={','.join(map(str, ids))}&x=epoch&smooth=0.6")
    see_the_comparison(page, runs)
    expect(page.locator(tid("compare-x"))).to_have_value("epoch")
    steps.shot("comparison-by-epoch-smoothed")

    # --- a run's name, notes and tags, edited on its page, show in the table ----------------------
    page.goto(f"{netloom_server.url}/app/runs/{ids[0]}")
    expect(page.locator(tid("run-name"))).to_have_text("lr 0.1")
    page.click(tid("run-rename"))
    page.fill(tid("run-name-input"), "baseline lr 0.1")
    page.press(tid("run-name-input"), "Enter")
    expect(page.locator(tid("run-name"))).to_have_text("baseline lr 0.1")
    page.fill(tid("run-tag-input"), "lr-study")
    page.click(tid("run-tag-add"))
    expect(page.locator(tid("run-tags"))).to_contain_text("lr-study")
    # A refused tag is named beside the tags, and the run keeps the ones it had.
    page.fill(tid("run-tag-input"), "x" * 41)
    page.click(tid("run-tag-add"))
    expect(page.locator(tid("run-tags-error"))).to_contain_text("1 to 40 characters")
    expect(page.locator(tid("run-tags")).locator(".chip")).to_have_count(1)
    page.fill(tid("run-tag-input"), "")
    expect(page.locator(tid("run-tags-error"))).to_have_count(0)  # typing again clears it
    page.fill(tid("run-notes"), "too high: the loss jumps")
    page.locator(tid("run-notes")).blur()
    page.wait_for_function(
        "u => fetch(u).then(r => r.json()).then(r => r.notes === 'too high: the loss jumps')",
        arg=f"/api/runs/{ids[0]}/",
    )
    steps.shot("run-named-and-tagged")
    page.click(tid("nav-runs"))
    row = page.locator(tid(f"run-row-{ids[0]}"))
    expect(row.locator(tid("open-run"))).to_have_text("baseline lr 0.1")
    expect(row.locator(".chip")).to_have_text(["lr-study"])
    page.fill(tid("runs-tag-filter"), "lr-study")
    expect(page.locator(tid("run-list")).locator("tbody tr")).to_have_count(1)
    steps.shot("runs-filtered-by-tag")
