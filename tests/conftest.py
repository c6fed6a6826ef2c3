"""Test session setup shared by every suite."""

from __future__ import annotations

import os
import sys

import pytest

# Subprocesses a test starts (manage.py, a worker) check events too (webapp/runs/stream/event_types.py).
os.environ.setdefault("NETLOOM_CHECK_EVENTS", "1")


def pytest_report_header(config: pytest.Config) -> str:
    """Say which database the webapp tests run against (SQLite default or DATABASE_URL)."""
    from django.conf import settings

    db = settings.DATABASES["default"]
    engine = db["ENGINE"].rsplit(".", 1)[-1]
    where = (
        f"{db.get('HOST') or 'localhost'}:{db.get('PORT') or ''}/{db['NAME']}"
        if engine != "sqlite3"
        else str(db["NAME"])
    )
    return f"database: {engine} {where} (tests use a separate test database)"


def pytest_configure(config: pytest.Config) -> None:
    """Every event the suite stores, publishes or streams is checked against its model.

    webapp/runs/stream/event_types.py: a misshapen event raises EventSchemaError where it is emitted;
    pytest_sessionfinish fails the session for any that a thread or a callback swallowed.
    """
    from django.conf import settings

    settings.NETLOOM_CHECK_EVENTS = True


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the session when any event did not fit its model (even one whose error was caught)."""
    event_types = sys.modules.get("webapp.runs.stream.event_types")
    found = list(getattr(event_types, "violations", []))
    if found:
        print(f"\n{len(found)} stream event(s) did not fit their model:\n" + "\n".join(found[:20]))
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
