"""Team A's objects for the isolation test's datasets placeholders ({dataset_version})."""

from __future__ import annotations

from typing import Any


def objects(*, team: Any, user: Any, dataset: Any, revision: Any) -> dict[str, Any]:
    return {"dataset_version": dataset.versions.get(number=1).number}
