"""Crash leftovers (half-written checkpoint and export folders, unfinished uploads) are swept."""

from __future__ import annotations

import os
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.django_db


def aged(path: Path, seconds: float) -> Path:
    """Make `path` look `seconds` old."""
    then = time.time() - seconds
    os.utime(path, (then, then))
    return path


def test_the_reaper_removes_old_leftovers_and_keeps_young_ones_and_finished_files(runs_env: Any) -> None:
    from webapp.runs import conf
    from webapp.runs.scheduling.reaper import leftovers_sweep

    media = Path(runs_env.MEDIA_ROOT)
    checkpoints = conf.run_dir(7) / "checkpoints"
    (checkpoints / "step-0000014").mkdir(parents=True)
    (checkpoints / "step-0000014" / "model.safetensors").write_bytes(b"kept")
    old_tmp = checkpoints / ".step-0000021.tmp-1a2b3c4d"
    old_tmp.mkdir()
    (old_tmp / "model.safetensors").write_bytes(b"half")
    aged(old_tmp, 7200)
    old_export = aged(_mkdir(conf.run_dir(7) / ".export.old-deadbeef"), 7200)
    young_tmp = _mkdir(checkpoints / ".step-0000028.tmp-5e6f7a8b")  # a writer may be using it
    uploads = media / "uploads"
    uploads.mkdir(parents=True)
    stale_part = aged(_touch(uploads / "abc.part"), 7200)
    arriving_part = _touch(uploads / "def.part")

    removed = leftovers_sweep(older_than_s=3600)
    assert sorted(removed) == sorted([old_tmp, old_export, stale_part])
    assert young_tmp.exists() and arriving_part.exists()
    assert (checkpoints / "step-0000014" / "model.safetensors").read_bytes() == b"kept"


def test_an_upload_file_whose_writer_is_gone_is_removed_at_once_and_a_live_writers_is_kept(runs_env: Any) -> None:
    import socket
    import subprocess
    import sys

    from webapp.datasets.services import upload_leftovers_sweep

    uploads = Path(runs_env.MEDIA_ROOT) / "uploads"
    uploads.mkdir(parents=True)
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid, host = int(gone.stdout), socket.gethostname()
    killed_writers = _touch(uploads / f"a1b2-{dead_pid}-{host}.part")
    live_writers = _touch(uploads / f"c3d4-{os.getpid()}-{host}.part")
    other_hosts = _touch(uploads / f"e5f6-{dead_pid}-elsewhere.example.part")

    assert upload_leftovers_sweep(older_than_s=600) == [killed_writers]
    assert live_writers.exists() and other_hosts.exists()


def test_every_reaper_pass_sweeps_at_most_once_per_interval(runs_env: Any) -> None:
    from django.utils import timezone

    from webapp.runs import conf
    from webapp.runs.scheduling import reaper

    runs_env.RUNS_SWEEP_SECONDS = 300.0
    reaper._last_sweep[0] = 0.0
    first = aged(_mkdir(conf.run_dir(3) / ".export.tmp-00000001"), 7200)
    reaper.run_reap()
    assert not first.exists()
    second = aged(_mkdir(conf.run_dir(3) / ".export.tmp-00000002"), 7200)
    reaper.run_reap()
    assert second.exists(), "swept again only after RUNS_SWEEP_SECONDS"
    reaper.run_reap(now=timezone.now() + timedelta(seconds=301))
    assert not second.exists()


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True)
    return path


def _touch(path: Path) -> Path:
    path.write_bytes(b"x")
    return path
