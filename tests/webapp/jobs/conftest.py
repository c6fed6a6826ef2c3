"""Fixtures for the jobs tests: a job kind of their own ("tests.echo", with its handler), and a
real Redis broker this module owns, which a test can stop and start again.

    echo_kind      the registered JobType of "tests.echo"; its handler (workers side) returns
                   {"echo": params} or does what params say ("fail", "crash", "progress")
    broker         the Celery app sends to a private redis-server: .take(queue) -> [(task, args)],
                   .down() stops the server (every send is refused, as when Redis is stopped),
                   .up() starts it again on the same port
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.stack.stack import RedisServer
from webapp.queues import ALL_QUEUES

ECHO = "tests.echo"


@pytest.fixture
def echo_kind() -> Any:
    from webapp.jobs.registry import JobType, job_types
    from workers.jobs import HANDLERS, JobFailed

    class EchoJob(JobType):
        kind = ECHO
        reports_progress = True
        failed: list[Any] = []

        def on_failed(self, job: Any) -> None:
            self.failed.append((job.pk, job.error))

    calls: list[int] = []

    def echo(job: Any, progress: Any) -> dict[str, Any]:
        calls.append(job.pk)
        what = job.params.get("do")
        if what == "fail":
            raise JobFailed({"message": "the echo refused", "row": 3}, code="refused")
        if what == "crash":
            raise RuntimeError("boom")
        if what == "progress":
            for fraction in (0.25, 0.5, 1.0):
                progress(fraction)
        return {"echo": job.params}

    job_type = job_types.register(EchoJob())
    job_type.calls = calls  # type: ignore[attr-defined]
    HANDLERS[ECHO] = echo
    yield job_type
    HANDLERS.pop(ECHO, None)
    job_types.unregister(ECHO)


@pytest.fixture(scope="module")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    if not RedisServer.available():
        pytest.skip("needs a redis-server binary")
    server = RedisServer.private(tmp_path_factory.mktemp("redis"))
    yield server
    server.stop()


@pytest.fixture
def broker(redis_server: RedisServer) -> Any:
    from webapp.celery import app

    class Broker:
        def _reset(self) -> None:
            app._after_fork()  # Celery's own reset of its connection and producer pools

        def down(self) -> None:
            redis_server.stop()
            self._reset()

        def up(self) -> None:
            if redis_server.proc is None:
                redis_server.start()
            self._reset()

        def take(self, queue: str = "short") -> list[tuple[str, Any]]:
            """Every message on `queue`: (task name, args or kwargs)."""
            taken = []
            with app.connection_for_read() as conn:
                while (message := conn.default_channel.basic_get(queue, no_ack=True)) is not None:
                    args, kwargs, _ = message.decode()
                    taken.append((message.headers["task"], args or kwargs))
            return taken

    previous = app.conf.broker_url
    app.conf.broker_url = redis_server.url
    broker = Broker()
    broker.up()
    for queue in ALL_QUEUES:
        broker.take(queue)
    yield broker
    broker.up()
    app.conf.broker_url = previous
    app._after_fork()
