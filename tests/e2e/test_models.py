"""The model registry in the browser: register two finished runs as versions of one model from
their run pages, promote one to production (seeing its figures against the current one), then the
other, and read who moved production when. Runs are set up through the REST API and trained by
the real Celery worker; everything asserted is read off the page."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from .conftest import ARTIFACTS, Account, LiveServer
from .test_canvas import Steps, sign_in, tid
from .test_judge import SPECS, Api, start_run, wait_succeeded

pytestmark = pytest.mark.e2e


def test_register_two_runs_and_promote_each_to_production(
    page: Page, netloom_server: LiveServer, new_account: Account, celery_worker: Path
) -> None:
    steps = Steps(page, ARTIFACTS / "models")
    sign_in(page, netloom_server, new_account)
    api = Api(page, netloom_server)
    team = int(api.get("/api/auth/me/")["teams"][0]["id"])
    iris = api.post("/api/datasets/", {"team": team, "builtin": "iris"})
    spec = json.loads((SPECS / "iris_mlp.json").read_text())
    runs = [start_run(api, team, iris["id"], f"iris {lr}", spec, {"epochs": 3, "optimizer": {"lr": lr}})
            for lr in (0.01, 0.03)]
    for run in runs:
        wait_succeeded(api, run)

    # From the first run's page: a new model "flowers", the run's final weights as version 1.
    page.goto(f"{netloom_server.url}/app/runs/{runs[0]}")
    page.click(tid("register-run"))
    page.select_option(tid("register-model"), "new")
    page.fill(tid("register-new-name"), "flowers")
    steps.shot("register-first-run")
    page.click(tid("register-confirm"))
    expect(page.locator(tid("model-page"))).to_contain_text("flowers")
    expect(page.locator(tid("version-1"))).to_contain_text(f"run {runs[0]}, final weights")

    # The second run into the same model: version 2.
    page.goto(f"{netloom_server.url}/app/runs/{runs[1]}")
    page.click(tid("register-run"))
    expect(page.locator(tid("register-model"))).to_contain_text("flowers")
    page.click(tid("register-confirm"))
    expect(page.locator(tid("version-2"))).to_contain_text(f"run {runs[1]}")

    # An editor may move staging, not production: the button says who may.
    promote = page.locator(tid("promote-1"))
    expect(promote).to_be_disabled()
    expect(promote).to_have_attribute("title", "Only a team admin moves production")
    model_url = page.url

    # The team's admin signs in and promotes v1 (nothing in production yet), then v2 with its
    # figures beside v1's.
    admin = Account(f"{new_account.username}_admin", new_account.password, new_account.team)
    netloom_server.manage("createuser", admin.username, "--password", admin.password, "--team", admin.team,
                          "--role", "admin")
    page.click(tid("sign-out"))
    sign_in(page, netloom_server, admin)
    page.goto(model_url)
    page.click(tid("promote-1"))
    expect(page.locator(tid("promote-panel"))).to_contain_text("val/accuracy")
    page.click(tid("confirm-promote"))
    expect(page.locator(tid("version-1"))).to_contain_text("production")
    page.click(tid("promote-2"))
    panel = page.locator(tid("promote-panel"))
    expect(panel).to_contain_text("replacing v1")
    expect(panel.locator("thead")).to_contain_text("v1 (now)")
    steps.shot("promote-with-figures")
    page.click(tid("confirm-promote"))
    history = page.locator(tid("alias-history"))
    expect(history.locator("li")).to_have_count(2)
    expect(history.locator("li").first).to_contain_text(f"{admin.username} moved production v1 → v2")
    steps.shot("history")

    # The Models page lists it with its alias.
    page.click(tid("nav-models"))
    expect(page.locator(tid("model-list"))).to_contain_text("production → v2")
