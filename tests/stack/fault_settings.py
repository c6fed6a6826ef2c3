"""Settings of a fault-test stack: tests/stack/e2e_settings.py with short re-send deadlines,
and named fault points a test can arm, so a SIGKILL lands exactly where the test means it to.

A point is armed by creating the file `$NETLOOM_FAULT_DIR/arm-<point>`; the worker takes the arm
(one shot), creates `hit-<point>` and then sleeps, holding the work at that point until the test
kills it. Points:
    checkpoint   inside the checkpoint write: files written to `.checkpoint-*.tmp-*`, not renamed
    export       at the start of a "runs.export" job's jobs.run (the export is pending, its
                 message taken)
Nothing here runs in production: only a stack started with this settings module has the points.
"""

import os
import time
from contextlib import contextmanager
from pathlib import Path

from tests.stack.e2e_settings import *  # noqa: F403

# Lost work is sent again within seconds (the defaults are minutes).
JOBS_KINDS = {"runs.export": {"resend_seconds": 3.0}, "runs.explain": {"resend_seconds": 3.0}}
NETLOOM_DATASET_RESEND_SECONDS = 2.0
# Leftovers of a killed writer are swept when the next worker starts (it waits seconds for that).
RUNS_LEFTOVER_SECONDS = 1.0
RUNS_SWEEP_SECONDS = 3600.0  # only the sweep at worker start: no writer of the test is ever swept

FAULT_DIR = os.environ.get("NETLOOM_FAULT_DIR", "")
FAULT_PAUSE_SECONDS = 120.0


def _take_arm(point: str) -> bool:
    """True (once) when the test armed `point`; marks it hit."""
    if not FAULT_DIR:
        return False
    arm = Path(FAULT_DIR) / f"arm-{point}"
    try:
        arm.unlink()
    except FileNotFoundError:
        return False
    (Path(FAULT_DIR) / f"hit-{point}").touch()
    return True


def _install_fault_points(**_: object) -> None:
    import engine.train.checkpoint as checkpoint

    original = checkpoint.atomic_dir

    @contextmanager
    def atomic_dir_with_fault(final: object):  # type: ignore[no-untyped-def]
        with original(final) as tmp:
            yield tmp
            if _take_arm("checkpoint"):
                time.sleep(FAULT_PAUSE_SECONDS)  # the files are written, the rename not done

    checkpoint.atomic_dir = atomic_dir_with_fault


def _pause_export(sender: object = None, task: object = None, args: object = None, **_: object) -> None:
    if getattr(task, "name", "") != "jobs.run" or not args:
        return
    from webapp.jobs.models import Job

    kind = Job.objects.filter(pk=int(args[0])).values_list("kind", flat=True).first()  # type: ignore[index]
    if kind == "runs.export" and _take_arm("export"):
        time.sleep(FAULT_PAUSE_SECONDS)


if FAULT_DIR:
    from celery import signals

    signals.worker_init.connect(_install_fault_points, weak=False)
    signals.task_prerun.connect(_pause_export, weak=False)
