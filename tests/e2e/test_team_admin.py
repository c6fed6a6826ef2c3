"""Members and invitations in the browser: a team admin invites a new person from the team page;
the invitee opens the link in another browser, makes an account and lands in the team as an
editor; accepting again says the link was used; the admin demotes them to viewer (their next write
is refused) and removes them (the team is gone for them). Everything is read off the pages."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from .conftest import ARTIFACTS, LiveServer
from .test_accessibility import AXE, violations
from .test_canvas import Steps, tid

pytestmark = pytest.mark.e2e


def _csrf(page: Page, url: str) -> dict[str, str]:
    token = next(c["value"] for c in page.context.cookies() if c["name"] == "csrftoken")
    return {"X-CSRFToken": token, "Referer": f"{url}/app/"}


def test_invite_accept_demote_remove(page: Page, browser: Browser, netloom_server: LiveServer) -> None:
    suffix = uuid.uuid4().hex[:8]
    team_name, admin, password = f"Lab {suffix}", f"admin_{suffix}", f"pw-{uuid.uuid4().hex}"
    netloom_server.manage("createuser", admin, "--password", password, "--team", team_name, "--role", "admin")
    url = netloom_server.url
    steps = Steps(page, ARTIFACTS / "team-admin")

    # The admin signs in and opens the team page from the top bar.
    page.goto(f"{url}/app/")
    page.fill(tid("login-username"), admin)
    page.fill(tid("login-password"), password)
    page.click(tid("login-submit"))
    expect(page.locator(tid("graph-list-page"))).to_be_visible()
    page.click(tid("nav-team"))
    expect(page.locator(tid("team-page"))).to_contain_text(team_name)
    expect(page.locator(tid(f"member-{admin}"))).to_contain_text("(you)")
    # The only admin cannot remove themself: the button says why.
    expect(page.locator(tid(f"member-remove-{admin}"))).to_be_disabled()

    # Invite nora by e-mail as an editor: the link to share is shown, the invitation is pending.
    page.fill(tid("invite-who"), f"nora-{suffix}@example.org")
    page.select_option(tid("invite-role"), "editor")
    page.click(tid("invite-submit"))
    link = page.locator(tid("invite-url")).input_value()
    assert re.fullmatch(rf"{re.escape(url)}/app/invitations/nli_[\w-]+", link), link
    expect(page.locator(tid("invitations-table"))).to_contain_text(f"nora-{suffix}@example.org")
    # The link was mailed too (the e2e server keeps mails as files).
    if netloom_server.env is not None:
        mails = Path(netloom_server.env["MEDIA_ROOT"]).parent / "mail"
        assert any(link in p.read_text() for p in mails.iterdir()), "no mail carries the link"
    steps.shot("admin-invited")
    if AXE.is_file():
        assert not violations(page), violations(page)

    # Nora opens the link in a browser of her own, makes an account and lands in the team.
    other = browser.new_context(viewport={"width": 1280, "height": 800})
    nora = other.new_page()
    nora_steps = Steps(nora, ARTIFACTS / "team-admin")
    nora_steps.count = 10
    nora.goto(link)
    expect(nora.locator(tid("accept-summary"))).to_contain_text(f"{admin} invites you to {team_name} as editor")
    nora.fill(tid("accept-username"), f"nora_{suffix}")
    nora.fill(tid("accept-password"), "short")
    nora.click(tid("accept-submit"))
    expect(nora.locator(tid("accept-password-error"))).to_contain_text("too short")
    nora.fill(tid("accept-password"), "a-long-enough-password")
    nora_steps.shot("invitee-accepts")
    if AXE.is_file():
        assert not violations(nora), violations(nora)
    nora.click(tid("accept-submit"))
    expect(nora.locator(tid("graph-list-page"))).to_be_visible()
    switcher = nora.locator(tid("team-switcher"))
    expect(switcher.locator("option:checked")).to_have_text(f"{team_name} (editor)")
    nora_steps.shot("invitee-in-the-team")

    # Her profile lists the team with her role.
    nora.click(tid("current-user"))
    expect(nora.locator(tid("my-teams"))).to_contain_text(f"{team_name}editor")
    nora_steps.shot("invitee-profile")
    if AXE.is_file():
        assert not violations(nora), violations(nora)
    nora.click(tid("nav-graphs"))

    # The link works once: opened again, it says it was used.
    again = other.new_page()
    again.goto(link)
    expect(again.locator(tid("accept-gone"))).to_contain_text("already been used")
    again.close()

    # The admin sees nora as an editor, and no invitation waiting.
    page.reload()
    expect(page.locator(tid(f"member-role-nora_{suffix}"))).to_have_value("editor")
    expect(page.locator(tid("no-invitations"))).to_be_visible()

    # Demoted to viewer: her next write is refused (403), and her page shows the viewer role.
    team_id = int(page.url.rstrip("/").rsplit("/", 1)[1])
    page.select_option(tid(f"member-role-nora_{suffix}"), "viewer")
    expect(page.locator(tid(f"member-role-nora_{suffix}"))).to_have_value("viewer")
    steps.shot("admin-demoted")
    write = nora.request.post(f"{url}/api/graphs/", headers=_csrf(nora, url),
                              data={"team": team_id, "name": "after demotion"})
    assert write.status == 403, write.text()
    nora.reload()
    expect(nora.locator(tid("team-switcher")).locator("option:checked")).to_have_text(f"{team_name} (viewer)")

    # Removed: the team is gone for her (404), and her page no longer offers it.
    page.once("dialog", lambda dialog: dialog.accept())
    page.click(tid(f"member-remove-nora_{suffix}"))
    expect(page.locator(tid(f"member-nora_{suffix}"))).to_have_count(0)
    steps.shot("admin-removed")
    assert nora.request.get(f"{url}/api/teams/{team_id}/").status == 404
    nora.reload()
    expect(nora.locator(tid("graph-list-page"))).to_be_visible()
    expect(nora.locator(tid("team-switcher"))).to_have_count(0)
    nora_steps.shot("invitee-removed")
    other.close()


def test_an_existing_user_signs_in_from_the_invitation_and_accepts_as_themself(
    page: Page, browser: Browser, netloom_server: LiveServer
) -> None:
    suffix = uuid.uuid4().hex[:8]
    password = f"pw-{uuid.uuid4().hex}"
    netloom_server.manage("createuser", f"boss_{suffix}", "--password", password, "--team", f"Ops {suffix}", "--role", "admin")
    netloom_server.manage("createuser", f"sam_{suffix}", "--password", password, "--team", f"Home {suffix}", "--role", "admin")
    url = netloom_server.url
    steps = Steps(page, ARTIFACTS / "team-admin-existing")

    # The admin invites sam by username, as a viewer.
    page.goto(f"{url}/app/")
    page.fill(tid("login-username"), f"boss_{suffix}")
    page.fill(tid("login-password"), password)
    page.click(tid("login-submit"))
    page.click(tid("nav-team"))
    page.fill(tid("invite-who"), f"sam_{suffix}")
    page.select_option(tid("invite-role"), "viewer")
    page.click(tid("invite-submit"))
    link = page.locator(tid("invite-url")).input_value()

    # Sam, signed out, opens the link, signs in from it, comes back and accepts as himself.
    other = browser.new_context(viewport={"width": 1280, "height": 800})
    sam = other.new_page()
    sam.goto(link)
    expect(sam.locator(tid("accept-summary"))).to_contain_text(f"Ops {suffix} as viewer")
    sam.click(tid("accept-sign-in"))
    sam.fill(tid("login-username"), f"sam_{suffix}")
    sam.fill(tid("login-password"), password)
    sam.click(tid("login-submit"))
    expect(sam.locator(tid("accept-as-me"))).to_have_text(f"Accept as sam_{suffix}")
    Steps(sam, ARTIFACTS / "team-admin-existing").shot("accept-as-me")
    if AXE.is_file():
        assert not violations(sam), violations(sam)
    sam.click(tid("accept-as-me"))
    expect(sam.locator(tid("graph-list-page"))).to_contain_text(f"Graphs of Ops {suffix}")
    expect(sam.locator(tid("team-switcher")).locator("option:checked")).to_have_text(f"Ops {suffix} (viewer)")
    steps.shot("admin-after")
    other.close()
