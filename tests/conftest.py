"""Test session setup shared by every suite."""

from __future__ import annotations

import pytest


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
