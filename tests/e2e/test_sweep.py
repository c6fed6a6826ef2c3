"""A sweep in the browser: the New-sweep form over the learning rate (log-uniform) and the first
layer's width of the iris MLP, TPE with median pruning, 8 trials trained by the real worker; the
sweep page while it runs and when it is done: every trial in the table, at least one pruned with
its reason, the best trial (its objective the best among the trials, a link to its run), one line
per drawn trial in the parallel-coordinates plot and a scatter plot per parameter.

The dataset and the graph are set up through the REST API (their own journeys are test_datasets.py
and test_canvas.py); the sweep is made and read in the page."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from .conftest import ARTIFACTS, Account, LiveServer
from .test_canvas import Steps, sign_in, tid
from .test_judge import Api

pytestmark = pytest.mark.e2e

SPECS = Path(__file__).resolve().parents[2] / "examples" / "specs"
TRIALS = 8
WIDTHS = ("4", "16", "64")


def test_user_sweeps_learning_rate_and_width_with_tpe_and_pruning(
    page: Page, netloom_server: LiveServer, new_account: Account, celery_worker: Path
) -> None:
    steps = Steps(page, ARTIFACTS / "sweep")
    sign_in(page, netloom_server, new_account)
    api = Api(page, netloom_server)
    team = int(api.get("/api/auth/me/")["teams"][0]["id"])
    api.post("/api/datasets/", {"team": team, "builtin": "iris"})
    spec = json.loads((SPECS / "iris_mlp.json").read_text())
    api.post("/api/graphs/", {"team": team, "name": "iris mlp", "spec": spec})

    # --- the sweeps list, empty; the New-sweep form ----------------------------------------------
    page.click(tid("nav-sweeps"))
    expect(page.locator(tid("sweeps-page"))).to_be_visible()
    expect(page.locator(tid("no-sweeps"))).to_be_visible()
    page.click(tid("new-sweep"))
    form = page.locator(tid("new-sweep-form"))
    expect(form).to_be_visible()
    # A refused form names the field: no name, no graph yet.
    page.click(tid("sweep-create"))
    expect(form.locator(tid("error-name"))).to_be_visible()
    expect(form.locator(tid("error-graph"))).to_be_visible()

    page.fill(tid("sweep-name"), "iris lr x width")
    page.select_option(tid("sweep-graph"), label="iris mlp")
    expect(page.locator(tid("sweep-revision"))).to_have_value("1")
    page.select_option(tid("sweep-dataset"), label="iris (builtin)")
    page.fill(tid("config-epochs"), "6")
    page.fill(tid("config-batch_size"), "16")
    # The learning rate: picking the key starts a log-uniform row.
    page.fill(tid("space-key-0"), "optimizer.lr")
    expect(page.locator(tid("space-type-0"))).to_have_value("float")
    expect(page.locator(tid("space-log-0"))).to_be_checked()
    page.fill(tid("space-low-0"), "0.0003")
    page.fill(tid("space-high-0"), "0.3")
    # The first layer's width, a node parameter of the graph, from a list.
    page.click(tid("space-add"))
    page.fill(tid("space-key-1"), "nodes.fc9.out_features")  # no such node: the server says so
    page.select_option(tid("space-type-1"), "categorical")
    page.fill(tid("space-choices-1"), ", ".join(WIDTHS))
    page.click(tid("sweep-create"))
    expect(form.locator(tid("error-space-1"))).to_contain_text("no node 'fc9'")
    page.fill(tid("space-key-1"), "nodes.fc1.out_features")
    expect(page.locator(tid("space-type-1"))).to_have_value("categorical")
    expect(form.locator(tid("error-space-1"))).to_have_count(0)
    page.fill(tid("space-choices-1"), ", ".join(WIDTHS))
    page.select_option(tid("sweep-strategy"), "tpe")
    page.select_option(tid("sweep-pruner"), "median")
    page.select_option(tid("sweep-objective-metric"), "val/loss")
    expect(page.locator(tid("sweep-objective-mode"))).to_have_value("min")
    page.fill(tid("sweep-budget"), str(TRIALS))
    page.fill(tid("sweep-parallelism"), "2")
    # A bad range is refused at its row before anything is sent.
    page.fill(tid("space-high-0"), "0.0001")
    page.click(tid("sweep-create"))
    expect(form.locator(tid("error-space-0-high"))).to_contain_text("above the low end")
    page.fill(tid("space-high-0"), "0.3")
    steps.shot("new-sweep-form")

    page.click(tid("sweep-create"))
    expect(page).to_have_url(re.compile(r"/app/sweeps/\d+$"), timeout=20_000)
    sweep_id = int(re.search(r"/sweeps/(\d+)$", page.url)[1])  # type: ignore[index]
    sweep_page = page.locator(tid("sweep-page"))
    expect(sweep_page).to_be_visible()
    expect(page.locator(tid("sweep-progress-text"))).to_contain_text(f"/ {TRIALS} trials finished")

    # --- it runs: the page follows by itself (polled), then it is done ----------------------------
    expect(page.locator(tid("trials")).locator("tbody tr").first).to_be_visible(timeout=30_000)
    steps.shot("sweep-running")
    expect(page.locator(tid("sweep-status"))).to_have_text("succeeded", timeout=600_000)
    expect(page.locator(tid("sweep-progress-text"))).to_contain_text(
        f"{TRIALS} / {TRIALS} trials finished"
    )

    sweep = api.get(f"/api/sweeps/{sweep_id}/")
    trials = sweep["trials"]
    assert len(trials) == TRIALS, trials
    rows = page.locator(tid("trials")).locator("tbody tr")
    expect(rows).to_have_count(TRIALS)
    states = [t["state"] for t in trials]
    assert set(states) <= {"complete", "pruned"}, states
    assert "pruned" in states, f"no trial was pruned: {states}"
    pruned = next(t for t in trials if t["state"] == "pruned")
    pruned_row = page.locator(tid(f"trial-{pruned['number']}"))
    expect(pruned_row.locator(tid("trial-state"))).to_have_text("pruned")
    expect(pruned_row.locator(tid("trial-reason"))).to_contain_text("median")
    for t in trials:
        assert str(t["params"]["nodes.fc1.out_features"]) in WIDTHS, t
        assert 0.0003 <= t["params"]["optimizer.lr"] <= 0.3, t

    # --- the best trial: the lowest val/loss among the complete trials, linked to its run ---------
    complete = [t for t in trials if t["state"] == "complete"]
    best = min(complete, key=lambda t: t["value"])
    assert sweep["best"]["number"] == best["number"], (sweep["best"], best)
    assert sweep["best"]["value"] == pytest.approx(best["value"])
    best_box = page.locator(tid("sweep-best"))
    expect(best_box.locator(tid("best-number"))).to_have_text(str(best["number"]))
    expect(best_box.locator(tid("trial-run"))).to_have_attribute("href", f"/app/runs/{best['run']}")

    # --- the parallel-coordinates plot: an axis per parameter + the objective, a line per trial ---
    plot = page.locator(tid("parallel-coordinates"))
    plot.scroll_into_view_if_needed()
    expect(plot).to_be_visible()
    expect(plot.locator(tid("pc-axis-optimizer.lr"))).to_have_attribute("data-kind", "log")
    expect(plot.locator(tid("pc-axis-nodes.fc1.out_features"))).to_have_attribute(
        "data-kind", "categorical"
    )
    expect(plot.locator(tid("pc-axis-objective"))).to_have_attribute("data-kind", "linear")
    lines = plot.locator("polyline[data-testid='pc-line']")
    expect(lines).to_have_count(TRIALS)
    expect(plot.locator("polyline.pruned")).to_have_count(states.count("pruned"))
    expect(plot.locator("polyline.best")).to_have_count(1)
    for key in ("optimizer.lr", "nodes.fc1.out_features"):
        expect(page.locator(tid(f"scatter-{key}")).locator("circle")).to_have_count(TRIALS)
    steps.shot("sweep-done-plot")
    page.locator(tid("trials")).scroll_into_view_if_needed()
    steps.shot("sweep-done-trials")

    # --- the list shows it finished with its best value; the best trial's run opens ---------------
    page.click(tid("nav-sweeps"))
    row = page.locator(tid(f"sweep-row-{sweep_id}"))
    expect(row.locator(tid("sweep-status"))).to_have_text("succeeded")
    expect(row.locator(tid("sweep-best-value"))).to_contain_text(f"trial {best['number']}")
    steps.shot("sweeps-list")
    row.locator(tid("open-sweep")).click()
    page.locator(tid("sweep-best")).locator(tid("trial-run")).click()
    expect(page.locator(tid("run-page"))).to_have_attribute("data-run-id", str(best["run"]))
    expect(page.locator(tid("run-status"))).to_have_text("succeeded")
    # The trial's run page says which sweep it belongs to, and leads back to it.
    expect(page.locator(tid("run-sweep"))).to_have_text(f"trial {best['number']} of sweep {sweep_id}")
    page.locator(tid("run-sweep")).get_by_role("link").click()
    expect(page).to_have_url(re.compile(rf"/app/sweeps/{sweep_id}$"))
