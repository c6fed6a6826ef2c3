"""The audit log in the browser: a team admin opens the Audit page, sees who changed what, narrows
it to one kind of action and downloads the JSON lines; an editor has no such page."""

from __future__ import annotations

import json
import uuid

import pytest
from playwright.sync_api import Page, expect

from .conftest import ARTIFACTS, Account, LiveServer
from .test_accessibility import AXE, violations
from .test_canvas import Steps, sign_in, tid
from .test_judge import Api

pytestmark = pytest.mark.e2e


def test_an_admin_reads_and_filters_the_audit_log(page: Page, netloom_server: LiveServer) -> None:
    steps = Steps(page, ARTIFACTS / "audit")
    suffix = uuid.uuid4().hex[:8]
    admin = Account(f"boss_{suffix}", f"pw-{uuid.uuid4().hex}", f"Audit {suffix}")
    netloom_server.manage("createuser", admin.username, "--password", admin.password, "--team", admin.team,
                          "--role", "admin")
    editor = Account(f"ed_{suffix}", f"pw-{uuid.uuid4().hex}", admin.team)
    netloom_server.manage("createuser", editor.username, "--password", editor.password, "--team", editor.team,
                          "--role", "editor")
    sign_in(page, netloom_server, admin)
    api = Api(page, netloom_server)
    team = next(t["id"] for t in api.get("/api/auth/me/")["teams"] if t["name"] == admin.team)
    graph = api.post("/api/graphs/", {"team": team, "name": "first net"})
    response = page.request.patch(f"{netloom_server.url}/api/graphs/{graph['id']}/", headers=api._headers(),
                                  data={"name": "second net"})
    assert response.ok, response.text()
    api.post("/api/datasets/", {"team": team, "builtin": "iris", "name": "flowers"})

    page.click(tid("nav-audit"))
    expect(page.locator(tid("audit-page"))).to_contain_text(f"Audit log of {admin.team}")
    rows = page.locator(tid("audit-row"))
    expect(rows.first).to_have_attribute("data-action", "dataset.created")
    expect(page.locator(tid("audit-table"))).to_contain_text("name: first net → second net")
    expect(page.locator(tid("audit-table"))).to_contain_text("member.added")
    steps.shot("audit-everything")

    page.select_option(tid("audit-action"), "graph.")
    page.click(tid("audit-apply"))
    expect(rows).to_have_count(2)
    expect(rows.nth(0)).to_have_attribute("data-action", "graph.renamed")
    expect(rows.nth(1)).to_have_attribute("data-action", "graph.created")
    expect(rows.nth(0)).to_contain_text(admin.username)
    steps.shot("audit-graphs-only")
    if AXE.is_file():  # axe-core, as the accessibility test runs it on every other page
        assert not violations(page), violations(page)

    with page.expect_download() as download_info:
        page.click(tid("audit-download"))
    lines = download_info.value.path().read_text().splitlines()
    assert [json.loads(line)["action"] for line in lines] == ["graph.renamed", "graph.created"]

    # An editor of the same team sees no Audit link, and the page says why.
    page.click(tid("sign-out"))
    sign_in(page, netloom_server, editor)
    expect(page.locator(tid("nav-runs"))).to_be_visible()
    expect(page.locator(tid("nav-audit"))).to_have_count(0)
    page.goto(f"{netloom_server.url}/app/audit")
    expect(page.locator(tid("audit-not-admin"))).to_be_visible()
