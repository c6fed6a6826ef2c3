"""NETLOOM_WORKER_THREADS: a worker process's torch threads, and the rule for co-hosted workers."""

from __future__ import annotations

import os
from typing import Any

import pytest
import torch

from webapp.devserver import cohosted_worker_threads
from workers.runs import _torch_threads


@pytest.fixture
def torch_threads_kept(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The test process's torch threads and OMP_NUM_THREADS as they were, afterwards."""
    before = torch.get_num_threads()
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    yield before
    torch.set_num_threads(before)


def test_a_set_count_becomes_torchs_threads_and_the_ranks_environment(settings: Any, torch_threads_kept: int) -> None:
    settings.NETLOOM_WORKER_THREADS = 1
    _torch_threads()
    assert torch.get_num_threads() == 1
    assert os.environ["OMP_NUM_THREADS"] == "1"


def test_zero_leaves_torchs_own_count(settings: Any, torch_threads_kept: int) -> None:
    settings.NETLOOM_WORKER_THREADS = 0
    _torch_threads()
    assert torch.get_num_threads() == torch_threads_kept
    assert "OMP_NUM_THREADS" not in os.environ


def test_cohosted_workers_leave_the_web_one_core_unless_told(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NETLOOM_WORKER_THREADS", raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {0, 1})
    assert cohosted_worker_threads() == "1"
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: set(range(8)))
    assert cohosted_worker_threads() == "7"
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {0})
    assert cohosted_worker_threads() == "1"
    monkeypatch.setenv("NETLOOM_WORKER_THREADS", "3")
    assert cohosted_worker_threads() == "3"
