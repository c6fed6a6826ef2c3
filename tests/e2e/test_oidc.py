"""Single sign-on in Chromium against a real OpenID Provider: node's oidc-provider (OpenID
Certified, tests/oidc_provider/provider.mjs) in its own process, and a Netloom server whose
NETLOOM_OIDC_* point at it, with local passwords off.

The browser clicks "Sign in with Test ID", walks the provider's login and consent pages, and lands
in the app signed in, in the team and role the groups claim maps to; a password sign-in is refused
with a message naming SSO; a later sign-in with other groups changes the role. Screenshots:
test-artifacts/e2e/oidc/.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from .conftest import (
    ARTIFACTS,
    DIST_INDEX,
    E2E_REDIS_URL,
    REPO,
    LiveServer,
    _forget_keys,
    _free_port,
    _redis_answers,
    _wait_for,
)
from .test_canvas import Steps, tid

pytestmark = pytest.mark.e2e

PROVIDER_DIR = REPO / "tests" / "oidc_provider"
PROVIDER_NAME = "Test ID"
CLIENT_ID = "netloom-e2e"
TEAM = "Vision"
TEAM_MAP = f"ml-readers={TEAM}:viewer,ml-team={TEAM}:editor,ml-admins={TEAM}:admin"


@dataclass
class Provider:
    """The running OpenID Provider and the people it knows (a JSON file it reads at each look-up)."""

    issuer: str
    users_file: Path
    log: Path

    def person(self, login: str, groups: list[str]) -> None:
        """Add a person, or change their groups (the next sign-in sees them)."""
        users = json.loads(self.users_file.read_text())
        users[login] = {"email": f"{login}@example.org", "name": login.title(), "groups": groups}
        self.users_file.write_text(json.dumps(users))


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


@pytest.fixture(scope="module")
def sso_setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Provider, LiveServer]]:
    """The provider on a free port, and Netloom (the ASGI server, a fresh SQLite database) signed
    in through it, with NETLOOM_LOCAL_PASSWORDS=0."""
    if os.environ.get("NETLOOM_E2E_URL"):
        pytest.skip("an outside server: its SSO settings are its own")
    if not DIST_INDEX.is_file():
        pytest.skip("frontend/dist is not built: run `make frontend`")
    node = shutil.which("node")
    if node is None or not (PROVIDER_DIR / "node_modules" / "oidc-provider").is_dir():
        pytest.skip("the test OpenID Provider is not installed: run `make oidc-provider`")
    tmp = tmp_path_factory.mktemp("sso")
    secret = uuid.uuid4().hex
    app_port, provider_port = _free_port(), _free_port()
    url = f"http://127.0.0.1:{app_port}"
    provider = Provider(f"http://127.0.0.1:{provider_port}", tmp / "users.json", tmp / "provider.log")
    provider.users_file.write_text("{}")
    provider_log = open(provider.log, "wb")  # noqa: SIM115 (closed below)
    provider_proc = subprocess.Popen(
        [node, "provider.mjs"], cwd=PROVIDER_DIR, stdout=provider_log, stderr=subprocess.STDOUT,
        env={**os.environ, "PORT": str(provider_port), "OIDC_CLIENT_ID": CLIENT_ID,
             "OIDC_CLIENT_SECRET": secret, "OIDC_REDIRECT_URI": f"{url}/auth/oidc/callback/",
             "OIDC_USERS_FILE": str(provider.users_file)},
    )  # fmt: skip
    with_redis = _redis_answers(E2E_REDIS_URL)
    prefix = f"nle2e-{uuid.uuid4().hex[:10]}"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.e2e.live_settings",
        "PYTHONPATH": str(REPO),
        "NETLOOM_E2E_PREFIX": prefix,
        "DATABASE_URL": f"sqlite:///{tmp / 'db.sqlite3'}",
        "MEDIA_ROOT": str(tmp / "media"),
        "NETLOOM_CHANNEL_LAYER": "redis-pubsub" if with_redis else "memory",
        "NETLOOM_CACHE": "redis" if with_redis else "memory",
        "REDIS_URL": E2E_REDIS_URL,
        "NETLOOM_WEB_WORKERS": "1",
        "DEBUG": "1",
        "PYTHONUNBUFFERED": "1",
        "NETLOOM_OIDC_ISSUER": provider.issuer,
        "NETLOOM_OIDC_CLIENT_ID": CLIENT_ID,
        "NETLOOM_OIDC_CLIENT_SECRET": secret,
        "NETLOOM_OIDC_NAME": PROVIDER_NAME,
        "NETLOOM_OIDC_TEAM_MAP": TEAM_MAP,
        "NETLOOM_LOCAL_PASSWORDS": "0",
    }
    server = LiveServer(url=url, env=env)
    server.manage("migrate", "--noinput")
    log = open(tmp / "server.log", "wb")  # noqa: SIM115 (closed below)
    proc = subprocess.Popen(
        [sys.executable, "-m", "webapp.serve", "--host", "127.0.0.1", "--port", str(app_port)],
        cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        _wait_for(f"{provider.issuer}/.well-known/openid-configuration", provider_proc)
        _wait_for(f"{url}/api/auth/csrf/", proc)
        yield provider, server
    finally:
        _stop(proc)
        _stop(provider_proc)
        log.close()
        provider_log.close()
        if with_redis:
            _forget_keys(E2E_REDIS_URL, prefix)
        # What each side logged, for a failure (and to check no secret was written).
        server_text = (tmp / "server.log").read_text(errors="replace")
        assert secret not in server_text, "the client secret was written to the server's log"


def _walk_provider(page: Page, provider: Provider, login: str, steps: Steps | None) -> None:
    """The provider's development pages: login (any password for a known login), then consent.
    A browser the provider already knows skips both."""
    app_or_provider = re.compile(rf"^({re.escape(provider.issuer)}/interaction/|.*/app/)")
    page.wait_for_url(app_or_provider)
    if not page.url.startswith(provider.issuer):
        return
    expect(page.locator('input[name="login"]')).to_be_visible()
    page.fill('input[name="login"]', login)
    page.fill('input[name="password"]', "any password: the development login page takes it")
    if steps:
        steps.shot("provider-login")
    page.click("button.login-submit")
    page.wait_for_url(app_or_provider)
    if page.url.startswith(provider.issuer):
        expect(page.locator("button.login-submit")).to_have_text("Continue")
        if steps:
            steps.shot("provider-consent")
        page.click("button.login-submit")


def _sign_in_with_sso(page: Page, provider: Provider, server: LiveServer, login: str,
                      steps: Steps | None = None) -> None:
    page.goto(f"{server.url}/app/")
    expect(page).to_have_url(re.compile(r"/app/login$"))
    button = page.locator(tid("sso-sign-in"))
    expect(button).to_have_text(f"Sign in with {PROVIDER_NAME}")
    if steps:
        steps.shot("sign-in-page")
    button.click()
    _walk_provider(page, provider, login, steps)
    expect(page).to_have_url(re.compile(r"/app/$"))
    expect(page.locator(tid("current-user"))).to_have_text(login)


def _my_teams(page: Page, server: LiveServer) -> list[dict[str, object]]:
    """GET /api/auth/me/ with the browser's session."""
    response = page.request.get(f"{server.url}/api/auth/me/")
    assert response.status == 200, response.text()
    return [{"name": t["name"], "role": t["role"]} for t in response.json()["teams"]]


def test_sso_sign_in_lands_in_the_app_in_the_mapped_team_and_role(
    browser: Browser, sso_setup: tuple[Provider, LiveServer]
) -> None:
    provider, server = sso_setup
    provider.person("alice", ["ml-team", "unmapped-group"])
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    steps = Steps(page, ARTIFACTS / "oidc")
    try:
        page.goto(f"{server.url}/app/login")
        # Local passwords are off: the form is not drawn, the SSO button is.
        expect(page.locator(tid("sso-sign-in"))).to_be_visible()
        expect(page.locator(tid("login-form"))).to_have_count(0)
        _sign_in_with_sso(page, provider, server, "alice", steps)
        expect(page.locator(tid("graph-list-page"))).to_be_visible()
        expect(page.locator(tid("team-switcher"))).to_contain_text(f"{TEAM} (editor)")
        steps.shot("signed-in")
        assert _my_teams(page, server) == [{"name": TEAM, "role": "editor"}]
        # A page reload keeps the session (a cookie of the app's own, not the provider's).
        page.reload()
        expect(page.locator(tid("current-user"))).to_have_text("alice")
    finally:
        context.close()


def test_password_sign_in_is_refused_with_a_message_naming_sso(
    browser: Browser, sso_setup: tuple[Provider, LiveServer]
) -> None:
    _, server = sso_setup
    server.manage("createuser", "pat", "--password", "pw-local-123", "--team", "Local")
    context = browser.new_context()
    page = context.new_page()
    try:
        page.goto(f"{server.url}/app/login")
        expect(page.locator(tid("sso-sign-in"))).to_be_visible()
        csrf = page.request.get(f"{server.url}/api/auth/csrf/").json()["csrf_token"]
        for path in ("/api/auth/login/", "/api/auth/token/"):
            response = page.request.post(
                f"{server.url}{path}", data={"username": "pat", "password": "pw-local-123"},
                headers={"X-CSRFToken": csrf, "Referer": f"{server.url}/app/login"},
            )  # fmt: skip
            assert response.status == 403, (path, response.text())
            error = response.json()["error"]
            assert error["code"] == "password_sign_in_off"
            assert f"sign in with {PROVIDER_NAME}" in error["message"]
        # A callback the browser did not start (an old tab, a replay) is a sentence, not an error page.
        page.goto(f"{server.url}/auth/oidc/callback/?code=stale&state=unknown")
        expect(page).to_have_url(re.compile(r"/app/login\?sso_error=sso_state$"))
        expect(page.locator(tid("sso-error"))).to_contain_text("expired or was already used")
        page.screenshot(path=str(ARTIFACTS / "oidc" / "stale-callback.png"))
    finally:
        context.close()


def test_a_later_sign_in_with_other_groups_changes_the_role(
    browser: Browser, sso_setup: tuple[Provider, LiveServer]
) -> None:
    provider, server = sso_setup
    provider.person("bob", ["ml-readers"])
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    try:
        _sign_in_with_sso(page, provider, server, "bob")
        expect(page.locator(tid("team-switcher"))).to_contain_text(f"{TEAM} (viewer)")
        assert _my_teams(page, server) == [{"name": TEAM, "role": "viewer"}]

        # The provider's admin moves bob to another group; he signs out and in again. The
        # provider remembers this browser, so it sends him straight back.
        provider.person("bob", ["ml-team"])
        page.click(tid("sign-out"))
        expect(page).to_have_url(re.compile(r"/app/login$"))
        _sign_in_with_sso(page, provider, server, "bob")
        expect(page.locator(tid("team-switcher"))).to_contain_text(f"{TEAM} (editor)")
        page.screenshot(path=str(ARTIFACTS / "oidc" / "role-changed.png"))
        assert _my_teams(page, server) == [{"name": TEAM, "role": "editor"}]

        # No mapped group left: the membership of the mapped team goes.
        provider.person("bob", ["unmapped-group"])
        page.click(tid("sign-out"))
        _sign_in_with_sso(page, provider, server, "bob")
        assert _my_teams(page, server) == []
    finally:
        context.close()


def test_failed_sso_callbacks_never_lock_anyone_out(
    browser: Browser, sso_setup: tuple[Provider, LiveServer]
) -> None:
    """A callback checks no password: a run of refused ones (a forged code, more than the
    lockout's NETLOOM_LOGIN_FAILURE_LIMIT) from one address must not lock SSO for it."""
    provider, server = sso_setup
    provider.person("carl", ["ml-team"])
    context = browser.new_context()
    page = context.new_page()
    try:
        for _ in range(12):
            start = page.request.get(f"{server.url}/auth/oidc/authenticate/?next=/app/", max_redirects=0)
            assert start.status == 302 and start.headers["location"].startswith(provider.issuer)
            state = re.search(r"[?&]state=([^&]+)", start.headers["location"])[1]  # type: ignore[index]
            page.goto(f"{server.url}/auth/oidc/callback/?code=forged&state={state}")
            expect(page).to_have_url(re.compile(r"/app/login\?sso_error=sso_failed$"))
        expect(page.locator(tid("sso-error"))).to_contain_text(f"Signing in with {PROVIDER_NAME} failed")
        _sign_in_with_sso(page, provider, server, "carl")
        assert _my_teams(page, server) == [{"name": TEAM, "role": "editor"}]
    finally:
        context.close()
