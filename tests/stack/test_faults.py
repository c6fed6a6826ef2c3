"""The fault campaign's short default, against the real stack: Redis stopped and started while
a run, an upload and an explanation are created; SIGKILL of the worker inside runs.export and in
the middle of a checkpoint write, and mid-epoch a few steps after a checkpoint. Each asserts what
the user sees: the answers, then the work done with no action on their side; after a training
worker's kill, a replay of the run's stream from seq 0 holds every seq once and every event a live
watcher was sent. `FAULT_TRIALS=N make test-faults` runs the long seeded
campaign (test_fault_campaign.py). Results: docs/reliability.md.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.stack import faults
from tests.stack.stack import RedisServer

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not RedisServer.available(), reason="needs a redis-server binary for a private Redis"),
]


@pytest.fixture(scope="module")
def fault_stack(tmp_path_factory: pytest.TempPathFactory) -> Any:
    with faults.fault_stack(tmp_path_factory.mktemp("faults")) as stack:
        yield stack


@pytest.fixture(scope="module")
def trained_run(fault_stack: Any) -> int:
    run = fault_stack.create_run(epochs=1)
    assert faults.run_finished(fault_stack, run["id"])["status"] == "succeeded", fault_stack.logs()
    return run["id"]


def test_with_redis_stopped_a_run_an_upload_and_an_explanation_answer_2xx_and_are_done_after_it_returns(
    fault_stack: Any, trained_run: int
) -> None:
    ok, note = faults.redis_outage(fault_stack, trained_run)
    assert ok, f"{note}\n{fault_stack.logs()}"


def test_a_worker_killed_during_the_export_leaves_it_pending_and_the_next_worker_makes_it_ready(
    fault_stack: Any, trained_run: int
) -> None:
    ok, note = faults.kill_during_export(fault_stack)
    assert ok, f"{note}\n{fault_stack.logs()}"


def test_a_worker_killed_mid_checkpoint_write_resumes_and_its_half_written_folder_is_swept(
    fault_stack: Any, trained_run: int
) -> None:
    ok, note = faults.kill_mid_checkpoint_write(fault_stack)
    assert ok, f"{note}\n{fault_stack.logs()}"


@pytest.mark.parametrize("at_step", [9, 12])
def test_a_worker_killed_mid_epoch_resumes_and_the_replay_from_zero_holds_every_seq_a_watcher_got(
    fault_stack: Any, trained_run: int, at_step: int
) -> None:
    # Killed a few steps after an epoch's checkpoint: the resume redoes the steps after it.
    ok, note = faults.kill_mid_epoch(fault_stack, at_step=at_step)
    assert ok, f"{note}\n{fault_stack.logs()}"
