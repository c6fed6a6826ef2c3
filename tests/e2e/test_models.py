"""The model registry in the browser: register two finished runs as versions of one model from
their run pages, promote one to production (seeing its figures against the current one: value,
change, better or worse), then the other, and read who moved production when. Then the team asks
for a second admin's approval: the editor asks to move production, cannot approve it themself,
and the admin approves it; the history names both. Runs are set up through the REST API and
trained by the real Celery worker; everything asserted is read off the page.

Trying the served model and its live charts need the model server: that test is skipped, saying
so, while the model's `endpoint` is absent or null."""

from __future__ import annotations

import json
import re
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
    # The row's own "Promote to production" button holds the word too: wait for the move itself.
    expect(page.locator(tid("model-notice"))).to_contain_text("Production now names v1")
    expect(page.locator(tid("promote-1"))).to_have_count(0)
    page.click(tid("promote-2"))
    panel = page.locator(tid("promote-panel"))
    expect(panel).to_contain_text("replacing v1")
    expect(panel.locator("thead")).to_contain_text("v1 (now)")
    # Each figure: v1's, v2's, the change, and whether it is better (accuracy up is better).
    accuracy = panel.locator(tid("diff-val/accuracy"))
    expect(accuracy.locator("td")).to_have_count(5)
    expect(accuracy.locator("td").nth(3)).to_have_text(re.compile(r"^([+−]\d\.\d{4}|0)$"))
    expect(accuracy.locator("td").nth(4)).to_have_text(re.compile(r"^(better|worse|same)$"))
    expect(panel.locator(tid("diff-val/loss")).locator("td").nth(4)).to_have_text(re.compile(r"^(better|worse|same)$"))
    page.fill(tid("promote-note"), "higher learning rate")
    steps.shot("promote-with-figures")
    page.click(tid("confirm-promote"))
    history = page.locator(tid("alias-history"))
    expect(history.locator("li")).to_have_count(2)
    expect(history.locator("li").first).to_contain_text(f"{admin.username} moved production v1 → v2: higher learning rate")
    steps.shot("history")

    # The admin asks for a second admin's approval of production moves (a team setting).
    page.check(tid("approval-rule") + " input")
    expect(page.locator(tid("approval-rule") + " input")).to_be_checked()

    # The editor may now ask to move production back to v1; the request waits, and its author
    # cannot approve it.
    page.click(tid("sign-out"))
    sign_in(page, netloom_server, new_account)
    page.goto(model_url)
    page.click(tid("promote-1"))
    panel = page.locator(tid("promote-panel"))
    expect(panel).to_contain_text("replacing v2")
    expect(panel.locator(tid("promote-needs-approval"))).to_be_visible()
    page.fill(tid("promote-note"), "v1 was steadier")
    page.click(tid("confirm-promote"))
    expect(page.locator(tid("model-notice"))).to_contain_text("Asked for approval")
    request = page.locator(tid("approvals") + " li")
    expect(request).to_have_count(1)
    expect(request).to_contain_text(f"{new_account.username} asks to move production v2 → v1: v1 was steadier")
    expect(request.locator("button", has_text="Approve")).to_be_disabled()
    expect(request.locator("button", has_text="Approve")).to_have_attribute(
        "title", "You asked for this move: another admin approves it")
    expect(page.locator(tid("version-2"))).to_contain_text("production")  # nothing moved yet
    steps.shot("approval-requested")

    # The admin approves: production moves, and the history names who asked and who approved.
    page.click(tid("sign-out"))
    sign_in(page, netloom_server, admin)
    page.goto(model_url)
    page.locator(tid("approvals") + " li button", has_text="Approve").click()
    expect(page.locator(tid("model-notice"))).to_contain_text("Approved: production now names v1")
    expect(page.locator(tid("approvals"))).to_have_count(0)
    expect(history.locator("li").first).to_contain_text(
        f"{new_account.username} moved production v2 → v1, approved by {admin.username}: v1 was steadier")
    expect(page.locator(tid("version-1"))).to_contain_text("production")
    steps.shot("approved")

    # Without the model server the page says the model is not served, in the form and the charts.
    if not api.get(model_url.replace(f"{netloom_server.url}/app", "/api") + "/").get("endpoint"):
        expect(page.locator(tid("not-served"))).to_be_visible()
        expect(page.locator(tid("charts-empty"))).to_contain_text("Not served yet")

    # The Models page lists it with its alias.
    page.click(tid("nav-models"))
    expect(page.locator(tid("model-list"))).to_contain_text("production → v1")


def test_try_a_served_model_and_watch_its_traffic(
    page: Page, netloom_server: LiveServer, new_account: Account, celery_worker: Path
) -> None:
    """Production's endpoint answers the try-it form with a label and probabilities; the snippets
    carry the endpoint and a placeholder token; the charts draw the requests just sent."""
    steps = Steps(page, ARTIFACTS / "models-serving")
    sign_in(page, netloom_server, new_account)
    api = Api(page, netloom_server)
    team = int(api.get("/api/auth/me/")["teams"][0]["id"])
    probe = api.post("/api/models/", {"team": team, "name": "served-probe"})
    if "endpoint" not in api.get(f"/api/models/{probe['id']}/"):
        pytest.skip("the model server is not part of this build: GET /api/models/<id>/ carries no `endpoint`")
    admin = Account(f"{new_account.username}_admin", new_account.password, new_account.team)
    netloom_server.manage("createuser", admin.username, "--password", admin.password, "--team", admin.team,
                          "--role", "admin")
    page.click(tid("sign-out"))
    sign_in(page, netloom_server, admin)
    api = Api(page, netloom_server)
    iris = api.post("/api/datasets/", {"team": team, "builtin": "iris"})
    spec = json.loads((SPECS / "iris_mlp.json").read_text())
    run = start_run(api, team, iris["id"], "iris served", spec, {"epochs": 3})
    wait_succeeded(api, run)
    model = api.post("/api/models/", {"team": team, "name": "served-flowers"})
    api.post(f"/api/models/{model['id']}/versions/", {"run": run})
    moved = page.request.put(f"{netloom_server.url}/api/models/{model['id']}/aliases/production/",
                             headers=api._headers(), data={"version": 1})
    assert moved.ok, moved.text()
    endpoint = api.get(f"/api/models/{model['id']}/").get("endpoint")
    if not endpoint:
        pytest.skip("the model server does not serve production here: the model's `endpoint` is null")

    page.goto(f"{netloom_server.url}/app/models/{model['id']}")
    form = page.locator(tid("try-it"))
    expect(form.locator(tid("endpoint"))).to_have_text(endpoint)
    fields = form.locator("input[data-testid^='tryit-input-']")
    expect(fields.first).to_be_visible()
    for i in range(fields.count()):
        fields.nth(i).fill("5.1")
    form.locator(tid("tryit-send")).click()
    expect(form.locator(tid("tryit-label"))).not_to_be_empty()
    expect(form.locator(tid("tryit-probabilities")).locator("tr")).to_have_count(3)
    expect(form.locator(tid("tryit-probabilities"))).to_contain_text("setosa")  # rows named by class
    form.locator(tid("snippets") + " summary").click()
    curl = form.locator(tid("snippet-curl"))
    expect(curl).to_contain_text(endpoint)  # the API names the infer URL itself
    expect(curl).to_contain_text("$NETLOOM_TOKEN")
    session = next(c["value"] for c in page.context.cookies() if c["name"] == "sessionid")
    assert session not in page.content()
    steps.shot("try-it")
    for _ in range(5):
        form.locator(tid("tryit-send")).click()
    charts = page.locator(tid("serving-charts"))
    expect(charts.locator(tid("chart-serving-rps"))).to_be_visible(timeout=15_000)
    expect(charts.locator(tid("chart-serving-latency"))).to_contain_text("v1 p99")
    charts.scroll_into_view_if_needed()
    steps.shot("live-charts")
