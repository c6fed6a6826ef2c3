"""A live Netloom server (migrated temp SQLite, the ASGI server) and a Chromium page for the e2e tests.

When the machine's Redis answers, the server uses it (db 6, a key prefix of its own; see
live_settings.py) for the channel layer and the Celery broker, and `celery_worker` starts a worker
on the same database, so the browser can train and watch runs.

Set NETLOOM_E2E_URL (with NETLOOM_E2E_USER / NETLOOM_E2E_PASSWORD) to run against a server
that is already up instead.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DIST_INDEX = REPO / "frontend" / "dist" / "index.html"
E2E_REDIS_URL = os.environ.get("NETLOOM_E2E_REDIS_URL", "redis://127.0.0.1:6379/6")
# Added to every training step by the worker, so a run lasts long enough to be watched.
E2E_STEP_DELAY = "0.03"
CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = REPO / "test-artifacts" / "e2e"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@dataclass(frozen=True)
class LiveServer:
    """A running server: its URL and how to run manage.py against its database."""

    url: str
    env: dict[str, str] | None

    def manage(self, *args: str) -> str:
        """Run `manage.py <args>` against the server's database; returns stdout."""
        if self.env is None:
            raise RuntimeError(
                "NETLOOM_E2E_URL points at an outside server: manage.py is not available"
            )
        done = subprocess.run(
            [sys.executable, str(REPO / "manage.py"), *args],
            cwd=REPO,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"manage.py {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
        return done.stdout


@dataclass(frozen=True)
class Account:
    """A user the test signs in as."""

    username: str
    password: str
    team: str


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _redis_answers(url: str) -> bool:
    """True when a Redis server answers PING at `url`."""
    import redis

    try:
        return bool(redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2).ping())
    except redis.RedisError:
        return False


def _forget_keys(url: str, prefix: str) -> None:
    """Remove this session's keys (queues, unacked messages, groups) from the shared Redis."""
    import redis

    try:
        client = redis.Redis.from_url(url, socket_timeout=5)
        for key in client.scan_iter(match=f"{prefix}*", count=500):
            client.delete(key)
    except redis.RedisError:
        pass


def _wait_for(url: str, proc: subprocess.Popen[bytes], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited with {proc.returncode} before answering")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError(f"the server did not answer {url} within {timeout:.0f} s")


@pytest.fixture(scope="session")
def netloom_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """Netloom served by the ASGI server on a free port, with a fresh SQLite database."""
    outside = os.environ.get("NETLOOM_E2E_URL")
    if outside:
        yield LiveServer(url=outside.rstrip("/"), env=None)
        return
    if not DIST_INDEX.is_file():
        pytest.skip("frontend/dist is not built: run `make frontend`")
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian's chromium is not installed: run `make browser`")
    tmp = tmp_path_factory.mktemp("live")
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
        "REDIS_URL": E2E_REDIS_URL,
        "NETLOOM_DATASET_PROCESSING": "sync",
        "NETLOOM_WEB_WORKERS": "1",
        "DEBUG": "1",
        "PYTHONUNBUFFERED": "1",
    }
    if not with_redis:
        env.pop("REDIS_URL")
    server = LiveServer(url="", env=env)
    server.manage("migrate", "--noinput")
    port = _free_port()
    # The model server, as `make run` starts it: the front sends /v2/ to SERVING_PORT, so the
    # Models page's try-it form and charts reach it through the same address and session.
    env["SERVING_PORT"] = str(_free_port())
    env["SERVING_POLL_S"] = "0.5"
    log = open(tmp / "server.log", "wb")  # noqa: SIM115 (closed below)
    serving_log = open(tmp / "serving.log", "wb")  # noqa: SIM115 (closed below)
    procs = [subprocess.Popen(command, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)
             for command, out in (
                 ([sys.executable, "-m", "webapp.serve", "--host", "127.0.0.1", "--port", str(port)], log),
                 ([sys.executable, "-m", "serving"], serving_log))]
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_for(f"{url}/api/auth/csrf/", procs[0])
        _wait_for(f"http://127.0.0.1:{env['SERVING_PORT']}/v2/health/ready", procs[1], timeout=120)
        yield LiveServer(url=url, env=env)
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
        log.close()
        serving_log.close()
        if with_redis:
            _forget_keys(E2E_REDIS_URL, prefix)


@pytest.fixture(scope="session")
def celery_worker(netloom_server: LiveServer) -> Iterator[Path]:
    """A Celery worker (train, short and datasets queues, solo pool) on the live server's database and Redis.

    Yields the worker's log file; the worker is stopped at the end of the session.
    """
    env = netloom_server.env
    if env is None:
        yield Path()  # an outside server brings its own workers
        return
    if env.get("NETLOOM_CHANNEL_LAYER") == "memory":
        pytest.skip(f"no Redis at {E2E_REDIS_URL}: runs need a broker")
    worker_env = {**env, "NETLOOM_E2E_STEP_DELAY": E2E_STEP_DELAY}
    log_path = Path(env["MEDIA_ROOT"]).parent / "worker.log"
    log = open(log_path, "ab")  # noqa: SIM115 (closed below)
    proc = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "webapp.celery", "worker", "-Q", "train,short,datasets",
         "-c", "1", "--pool=solo", "-n", f"{env['NETLOOM_E2E_PREFIX']}@%h", "--without-gossip",
         "--without-mingle", "--without-heartbeat", "-l", "info"],
        cwd=REPO, env=worker_env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 90
        while b" ready." not in log_path.read_bytes():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the worker did not start:\n{log_path.read_text()[-3000:]}")
            time.sleep(0.2)
        yield log_path
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        log.close()


@pytest.fixture
def new_account(netloom_server: LiveServer) -> Account:
    """A brand-new user, editor of a brand-new team."""
    if netloom_server.env is None:
        return Account(
            os.environ["NETLOOM_E2E_USER"],
            os.environ["NETLOOM_E2E_PASSWORD"],
            os.environ.get("NETLOOM_E2E_TEAM", ""),
        )
    suffix = uuid.uuid4().hex[:8]
    account = Account(f"e2e_{suffix}", f"pw-{uuid.uuid4().hex}", f"E2E {suffix}")
    netloom_server.manage(
        "createuser",
        account.username,
        "--password",
        account.password,
        "--team",
        account.team,
        "--role",
        "editor",
    )
    return account


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    """Debian's Chromium through Playwright (Playwright cannot download its own here)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser: object, request: pytest.FixtureRequest) -> Iterator[object]:
    """A 1280x800 page in a fresh context; console errors are printed when the test fails."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})  # type: ignore[attr-defined]
    page = context.new_page()
    messages: list[str] = []
    page.on(
        "console",
        lambda m: (
            messages.append(f"{m.type}: {m.text}") if m.type in ("error", "warning") else None
        ),
    )
    page.on("pageerror", lambda e: messages.append(f"pageerror: {e}"))
    yield page
    if getattr(request.node, "rep_call", None) is not None and request.node.rep_call.failed:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"{request.node.name}-failure.png"))
        print("\n".join(messages[-40:]))
    context.close()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    """Keep each phase's report on the item, so fixtures can tell a failed test."""
    report = yield
    setattr(item, f"rep_{report.when}", report)
    return report
