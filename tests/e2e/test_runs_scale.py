"""The runs page over thousands of runs, in Chromium: 3,000 runs seeded through the ORM
(bulk_create, on the server's own database), the virtualised table scrolled from the top to the
bottom (rows fetched page by page, only the rows in view in the page), the header still on top,
the keyboard's End and arrows, a column picked from the team's names (GET /api/runs/columns/), the
filter completing a config name and its operators, and "compare the top 10" of a metric's order.

Every order asserted is what GET /api/runs/ answers for the same query."""

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
from .test_judge import Api

pytestmark = pytest.mark.e2e

SPECS = Path(__file__).resolve().parents[2] / "examples" / "specs"
SHOTS = Path(os.environ.get("NETLOOM_SHOTS", "/tmp/shots-runs-scale"))
# NETLOOM_E2E_SCALE_RUNS=100000 runs the same walk over the hundred thousand (minutes of seeding).
RUNS = int(os.environ.get("NETLOOM_E2E_SCALE_RUNS", "3000"))
SEED_CHUNK = 20_000  # runs per `manage.py shell` (each call has two minutes)

# Run in the server's database by `manage.py shell`: `count` succeeded runs of the graph's revision 1.
SEED = """
import random
from webapp.graphs.models import GraphRevision
from webapp.runs.models import Run, RunStatus
from webapp.datasets.models import Dataset
from django.contrib.auth import get_user_model
rev = GraphRevision.objects.get(graph_id={graph}, number=1)
dataset = Dataset.objects.get(pk={dataset})
user = get_user_model().objects.get(username={user!r})
rng = random.Random({seed})
Run.objects.bulk_create([
    Run(team_id={team}, graph_revision=rev, dataset=dataset, created_by=user, status=RunStatus.SUCCEEDED,
        name=f"seeded {{i + {seed}}}", config={{"epochs": 3, "optimizer": {{"lr": rng.choice([0.1, 0.01, 0.001])}}}},
        final_metrics={{"val/accuracy": round(rng.random(), 5), "val/loss": round(rng.random(), 5)}})
    for i in range({count})
], batch_size=1000)
print(Run.objects.filter(team_id={team}).count())
"""


def test_user_scrolls_thousands_of_runs_picks_columns_and_compares_the_top_ten(
    page: Page, netloom_server: LiveServer, new_account: Account
) -> None:
    steps = Steps(page, SHOTS)
    page.set_viewport_size({"width": 1400, "height": 900})
    sign_in(page, netloom_server, new_account)
    api = Api(page, netloom_server)
    team = int(api.get("/api/auth/me/")["teams"][0]["id"])
    iris = api.post("/api/datasets/", {"team": team, "builtin": "iris"})
    spec = json.loads((SPECS / "iris_mlp.json").read_text())
    graph = api.post("/api/graphs/", {"team": team, "name": "iris mlp", "spec": spec})
    for start in range(0, RUNS, SEED_CHUNK):
        seeded = netloom_server.manage("shell", "-c", SEED.format(
            graph=graph["id"], dataset=iris["id"], user=new_account.username, team=team, seed=start,
            count=min(SEED_CHUNK, RUNS - start)))
    assert seeded.strip().splitlines()[-1] == str(RUNS), seeded

    def first_ids(ordering: str, n: int) -> list[int]:
        return [r["id"] for r in api.get(f"/api/runs/?team={team}&ordering={quote(ordering)}&page_size={n}")["results"]]

    # --- every run counted; only the rows in view are in the page -------------------------------
    page.click(tid("nav-runs"))
    table = page.locator(tid("run-list"))
    expect(page.locator(tid("runs-count"))).to_have_text(f"{RUNS} runs")
    newest = first_ids("-created_at", 1)[0]
    expect(table.locator("tbody tr").first).to_have_attribute("data-testid", f"run-row-{newest}")
    drawn = table.locator("tbody tr").count()
    assert 10 <= drawn <= 60, drawn
    steps.shot(f"top-of-{RUNS}")

    # --- scrolled to the bottom: the oldest run, fetched from the last page ----------------------
    scroller = page.locator(tid("runs-scroll"))
    oldest = first_ids("created_at", 1)[0]
    for _ in range(60):  # the table measures rows as it goes: scroll until the end stays the end
        scroller.evaluate("el => { el.scrollTop = el.scrollHeight; }")
        page.wait_for_timeout(100)
        if page.locator(tid(f"run-row-{oldest}")).count():
            break
    expect(page.locator(tid(f"run-row-{oldest}"))).to_be_visible()
    assert table.locator("tbody tr").count() <= 60
    header = page.locator(tid("sort-name"))
    expect(header).to_be_in_viewport()  # the header stays on top of the scrolled rows
    steps.shot(f"bottom-of-{RUNS}")

    # --- the keyboard: Home goes back to the first run, arrows move down --------------------------
    page.locator(tid(f"select-run-{oldest}")).focus()
    page.keyboard.press("Home")
    expect(page.locator(tid(f"select-run-{newest}"))).to_be_focused()
    page.keyboard.press("ArrowDown")
    second = first_ids("-created_at", 2)[1]
    expect(page.locator(tid(f"select-run-{second}"))).to_be_focused()
    page.keyboard.press("Space")
    expect(page.locator(tid(f"select-run-{second}"))).to_be_checked()
    expect(page.locator(tid("runs-compare"))).to_have_text("Compare (1)")

    # --- a column from the team's names ----------------------------------------------------------
    page.click(tid("column-picker-toggle"))
    # epochs is the same in every run, so no automatic column shows it; the picker offers it.
    expect(page.locator(tid("sort-config:epochs"))).to_have_count(0)
    page.fill(tid("column-search"), "epo")
    expect(page.locator(tid("column-config.optimizer.lr"))).to_have_count(0)  # narrowed away
    page.check(tid("column-config.epochs"))
    expect(page.locator(tid("sort-config:epochs"))).to_be_visible()
    expect(page.locator(f"{tid(f'run-row-{newest}')} {tid('cell-config:epochs')}")).to_have_text("3")
    expect(table.locator("tr.col-groups th.group-config")).to_have_text("Config")  # picked, no longer "(differs)"
    if AXE.is_file():  # the picker open over the scrolled table
        assert violations(page) == [], violations(page)
    expect(page.locator(f"{tid(f'run-row-{newest}')} {tid('cell-config:optimizer.lr')}")).to_have_text(re.compile(r"^0\.1$|^0\.01$|^0\.001$"))
    page.click(tid("column-picker-toggle"))
    steps.shot("column-picked")

    # --- the filter completes a config name, then its operators ----------------------------------
    box = page.locator(tid("runs-filter"))
    box.fill("config.opt")
    expect(page.locator("datalist option[value='config.optimizer.lr']")).to_have_count(1)
    box.fill("config.optimizer.lr ")
    expect(page.locator("datalist option[value='config.optimizer.lr < ']")).to_have_count(1)
    box.fill("config.optimizer.lr < 0.05")
    box.press("Enter")
    truth = api.get(f"/api/runs/?team={team}&filter={quote('config.optimizer.lr < 0.05')}&page_size=1")["count"]
    expect(page.locator(tid("runs-count"))).to_have_text(f"{truth} runs")
    box.fill("")
    box.press("Enter")
    expect(page.locator(tid("runs-count"))).to_have_text(f"{RUNS} runs")

    # --- compare the top 10 of the best accuracy ---------------------------------------------------
    page.click(tid("column-picker-toggle"))
    page.fill(tid("column-search"), "val/acc")
    page.check(tid("column-metrics.val/accuracy"))
    page.click(tid("column-picker-toggle"))
    page.click(tid("sort-final:val/accuracy"))
    top = first_ids("-metrics.val/accuracy", 10)
    expect(table.locator("tbody tr").first).to_have_attribute("data-testid", f"run-row-{top[0]}")
    expect(page.locator(tid("compare-top"))).to_have_text("Compare top 10")
    steps.shot("sorted-by-accuracy")
    page.click(tid("compare-top"))
    expect(page).to_have_url(re.compile(r"/app/compare\?ids=[\d,]+$"))
    opened = [int(i) for i in re.search(r"ids=([\d,]+)", page.url)[1].split(",")]  # type: ignore[index]
    assert opened == top, (opened, top)
