"""Fixtures for the worker tests.

In-process (tasks called as functions, the recorder thread on the test database):
    runs_env           MEDIA_ROOT in tmp, in-memory channel layer, the Celery app on an in-memory broker
    iris_run(**config) a queued run on built-in iris (team A), created through run_create

Real processes (tests/stack/stack.py, used by test_run_e2e.py and test_service_e2e.py):
    ServiceStack: a file SQLite DB migrated for the test, Redis (shared 6379 with its own db and
    key prefix, or a private redis-server), `celery -A webapp.celery worker`, daphne.
    stack              one ServiceStack for the session (uploads processed by the worker)
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.stack.stack import E2E_STEP_DELAY, RedisServer, ServiceStack

# The webapp fixtures (users, teams, tokens, iris dataset, graph) are reused as they are.
from tests.webapp.conftest import (  # noqa: F401
    anon,
    api_a,
    api_b,
    api_viewer_a,
    client_for,
    dataset_a,
    graph_a,
    make_user,
    revision_a,
    team_a,
    team_b,
    user_a,
    user_b,
    valid_spec,
    viewer_a,
)
from webapp.settings import caches


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Database, worker, daphne on the machine's Redis (db 5, a prefix of its own).

    Uploads go through the worker (NETLOOM_DATASET_PROCESSING=celery), as under `make run`.
    """
    server = RedisServer.for_tests(lambda: tmp_path_factory.mktemp("redis"))
    with ServiceStack(
        tmp_path_factory.mktemp("stack"), server, step_delay=E2E_STEP_DELAY, dataset_processing="celery"
    ) as running:
        yield running


@pytest.fixture
def runs_env(settings: Any, tmp_path: Any) -> Any:
    """Files in tmp, in-memory channel layer, tasks queued to an in-memory broker (never Redis)."""
    from webapp.celery import app

    settings.MEDIA_ROOT = tmp_path / "media"
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    settings.RUNS_LEASE_SECONDS = 30.0
    # The real Redis cache under a prefix of this test's own: nothing kept leaks between tests.
    settings.CACHES = caches("redis", settings.REDIS_URL, f"test-{uuid.uuid4().hex}")
    previous = app.conf.broker_url
    app.conf.broker_url = "memory://"
    app._pool = None  # the next send opens a connection to the new broker
    yield settings
    app.conf.broker_url = previous
    app._pool = None


@pytest.fixture
def iris_run(runs_env: Any, user_a: Any, team_a: Any, revision_a: Any, dataset_a: Any) -> Any:  # noqa: F811
    """Factory: a queued run of the small MLP on iris with the given config."""
    from webapp.runs.services import run_create

    def make(**config: Any) -> Any:
        cfg = {"epochs": 2, "batch_size": 16, "log_every": 1, "device": "cpu", **config}
        return run_create(user=user_a, team=team_a, graph_revision=revision_a, dataset=dataset_a, config=cfg)

    return make
