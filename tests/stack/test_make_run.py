"""`make run` (`python -m webapp.devserver`) keeps its children alive and stops them all on Ctrl-C.

One devserver of its own (a free port, its own SQLite file, media folder and Redis key prefix on the
machine's Redis): the training worker SIGKILLed is restarted with a log line; the web tier's parent
SIGKILLed is restarted and the API answers again; SIGINT then stops everything, leaving no process
of this instance behind.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.stack.stack import ROOT, RedisServer, free_port, proc_stat

pytestmark = pytest.mark.slow


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        fields = proc_stat(int(entry.name))
        if fields is not None and int(fields[1]) == pid and fields[0] != "Z":
            found.append(int(entry.name))
    return found


def _child(devserver: subprocess.Popen[bytes], needle: str) -> int | None:
    return next((pid for pid in _children(devserver.pid) if needle in _cmdline(pid)), None)


def _of_instance(instance: str) -> list[int]:
    """Every live process whose environment names this instance."""
    marker = f"NETLOOM_INSTANCE={instance}".encode()
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            if marker in entry.joinpath("environ").read_bytes().split(b"\0"):
                fields = proc_stat(int(entry.name))
                if fields is not None and fields[0] != "Z":
                    found.append(int(entry.name))
        except OSError:
            continue
    return found


def _until(what: str, check: Callable[[], Any], timeout: float = 120) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.3)
    raise AssertionError(f"not within {timeout} s: {what}")


def _api_answers(base: str) -> bool:
    try:
        signed_in = httpx.post(f"{base}/api/auth/token/", json={"username": "demo", "password": "demo"}, timeout=10)
        return signed_in.status_code in (200, 201) and httpx.get(
            f"{base}/api/graphs/", headers={"Authorization": f"Bearer {signed_in.json()['token']}"}, timeout=10
        ).status_code == 200
    except httpx.HTTPError:
        return False


@pytest.fixture
def make_run(tmp_path: Path) -> Any:
    if not RedisServer.available():
        pytest.skip("needs Redis")
    instance = f"nltest-make-run-{uuid.uuid4().hex[:8]}"
    port = free_port()
    env = {
        **os.environ, "PORT": str(port), "NETLOOM_INSTANCE": instance, "REDIS_URL": "redis://127.0.0.1:6379/5",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}", "MEDIA_ROOT": str(tmp_path / "media"),
        "STATIC_ROOT": str(tmp_path / "static"), "NETLOOM_WEB_WORKERS": "1", "NETLOOM_STREAM_WORKERS": "1",
        "PYTHONUNBUFFERED": "1",
    }
    env.pop("DJANGO_SETTINGS_MODULE", None)
    log_path = tmp_path / "make-run.log"
    with open(log_path, "wb") as log:
        devserver = subprocess.Popen([sys.executable, "-m", "webapp.devserver"], cwd=ROOT, env=env,
                                     stdout=log, stderr=subprocess.STDOUT)
    try:
        yield devserver, f"http://127.0.0.1:{port}", log_path, instance
    finally:
        if devserver.poll() is None:
            devserver.send_signal(signal.SIGINT)
            try:
                devserver.wait(60)
            except subprocess.TimeoutExpired:
                devserver.kill()
        for pid in _of_instance(instance):
            os.kill(pid, signal.SIGKILL)


def test_make_run_restarts_a_dead_worker_and_web_tier_and_ctrl_c_stops_everything(make_run: Any) -> None:
    devserver, base, log_path, instance = make_run
    _until("the API answers", lambda: _api_answers(base), timeout=240)

    worker = _until("the training worker", lambda: _child(devserver, "-Q train"))
    os.kill(worker, signal.SIGKILL)
    _until("the training worker restarted", lambda: "restarted the train worker process" in log_path.read_text())
    restarted = _until("a new training worker", lambda: _child(devserver, "-Q train"))
    assert restarted != worker
    log = log_path.read_text()
    assert f"the train worker process (pid {worker}) exited with status -9" in log, log[-3000:]

    web = _until("the web tier", lambda: _child(devserver, "webapp.serve"))
    os.kill(web, signal.SIGKILL)
    _until("the web tier restarted", lambda: "restarted the web process" in log_path.read_text())
    _until("the API answers again", lambda: _api_answers(base), timeout=240)
    assert _child(devserver, "webapp.serve") not in (None, web)
    assert devserver.poll() is None

    devserver.send_signal(signal.SIGINT)  # Ctrl-C
    assert devserver.wait(60) == 0
    _until("no process of this instance left", lambda: not _of_instance(instance), timeout=30)
