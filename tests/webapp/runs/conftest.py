"""Fixtures of the runs API tests: a queued run of team A (nothing is sent to a broker)."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture(autouse=True)
def _memory_broker() -> Any:
    """Tasks queued by these tests go to an in-memory broker (never the machine's Redis)."""
    from webapp.celery import app

    previous = app.conf.broker_url
    app.conf.broker_url = "memory://"
    app._pool = None
    yield
    app.conf.broker_url = previous
    app._pool = None


@pytest.fixture
def run_body(graph_a: Any, dataset_a: Any) -> dict[str, Any]:
    """A valid POST /api/runs/ body for team A."""
    return {"graph": graph_a.pk, "revision": 1, "dataset": dataset_a.pk, "config": {"epochs": 2}}


@pytest.fixture
def run_a(user_a: Any, team_a: Any, revision_a: Any, dataset_a: Any) -> Any:
    """A queued run of team A."""
    from webapp.runs.services import run_create

    return run_create(user=user_a, team=team_a, graph_revision=revision_a, dataset=dataset_a, config={"epochs": 2})
