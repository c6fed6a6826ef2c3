"""Team-A objects for tests/webapp/test_isolation.py's {sweep} placeholder."""

from __future__ import annotations

from typing import Any


def objects(*, team: Any, user: Any, dataset: Any, revision: Any) -> dict[str, Any]:
    """A running sweep of team A without trials (nothing is queued anywhere)."""
    from webapp.sweeps.models import Sweep

    sweep = Sweep.objects.create(
        team=team, created_by=user, name="secret-a sweep", graph_revision=revision, dataset=dataset,
        config={"epochs": 1}, space={"optimizer.lr": {"type": "float", "low": 0.001, "high": 0.1}},
        strategy="random", objective={"metric": "val/loss", "mode": "min"}, budget=2, parallelism=1,
    )
    return {"sweep": sweep.pk}
