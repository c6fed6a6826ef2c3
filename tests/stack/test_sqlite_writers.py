"""SQLite under concurrent writers keeps every sweep report (`make run`'s default database).

Three processes report the per-epoch objectives of a sweep's 8 trials (trial_report, the pruner
asked after each) for 10 epochs while two others store metric batches (events_record) and the
stack's worker trains a run, all on one SQLite file with `make run`'s options
(webapp/settings.py SQLITE_OPTIONS). Every report must be kept and no writer may fail: a dropped
report is a hole the pruner and the sweep's charts would use. docs/reliability.md "SQLite".
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.stack.stack import ROOT, ServiceStack

pytestmark = [pytest.mark.slow]

TRIALS, EPOCHS = 8, 10


def writer(stack: ServiceStack, *args: object) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.stack.sqlite_writers", *map(str, args)],
        cwd=ROOT, env=stack.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )


def test_every_sweep_report_is_kept_with_concurrent_writers_on_the_sqlite_file(stack: ServiceStack) -> None:
    if stack.env.get("NETLOOM_E2E_DB_URL"):
        pytest.skip("SQLite's locking; the PostgreSQL pass has row locks")
    mine = stack.world["a"]
    made = writer(stack, "sweep", mine["team"], mine["graph"], mine["dataset"], TRIALS)
    out, _ = made.communicate(timeout=120)
    assert made.returncode == 0, out
    sweep_id = int(out.strip().splitlines()[-1])
    run = stack.create_run(epochs=3)  # the worker's recorder writes meanwhile too

    writers = [writer(stack, "events", run["id"], 20) for _ in range(2)]
    writers += [writer(stack, "report", sweep_id, EPOCHS, *range(first, TRIALS + 1, 3)) for first in (1, 2, 3)]
    outputs = [w.communicate(timeout=300)[0] for w in writers]
    failed = [out for w, out in zip(writers, outputs, strict=True) if w.returncode != 0]
    assert not failed, "\n---\n".join(failed)

    sweep = stack.api("a").get(f"/api/sweeps/{sweep_id}/").json()
    kept = {trial["number"]: [epoch for epoch, _ in trial["intermediate"]] for trial in sweep["trials"]}
    assert kept == {number: list(range(1, EPOCHS + 1)) for number in range(1, TRIALS + 1)}
