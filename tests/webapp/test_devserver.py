"""`make run`'s supervisor (webapp/devserver.py) on real child processes: a child that dies is started
again after a back-off; one that keeps dying at start makes it give up, naming the child."""

from __future__ import annotations

import sys
import time

import pytest

from webapp import devserver
from webapp.devserver import GaveUp, Supervised, stop_all, supervise


@pytest.fixture
def quick_restarts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(devserver, "RESTART_FIRST_DELAY", 0.05)
    monkeypatch.setattr(devserver, "QUICK_CRASH_LIMIT", 3)


def test_a_child_that_keeps_crashing_at_start_is_given_up_naming_it(
    quick_restarts: None, capsys: pytest.CaptureFixture[str]
) -> None:
    crashing = Supervised("broken worker", [sys.executable, "-c", "raise SystemExit(3)"])
    crashing.start()
    with pytest.raises(GaveUp, match=r"the broken worker process died 3 times within 30 s of its start \(last status 3\)"):
        supervise([crashing], poll_seconds=0.05)
    said = capsys.readouterr().out
    assert said.count("exited with status 3") == 2 and said.count("restarted the broken worker process") == 2


def test_a_dead_child_is_restarted_and_stop_all_ends_it(quick_restarts: None) -> None:
    child = Supervised("sleeper", [sys.executable, "-c", "import time; time.sleep(60)"])
    child.start()
    assert child.process is not None
    first = child.process
    first.kill()
    first.wait()
    deadline = time.monotonic() + 10
    while child.process is first and time.monotonic() < deadline:
        child.check(time.monotonic())
        child.restart_if_due(time.monotonic())
        time.sleep(0.02)
    assert child.process is not first and child.process.poll() is None
    stop_all([child], grace_seconds=5)
    assert child.process.poll() is not None
