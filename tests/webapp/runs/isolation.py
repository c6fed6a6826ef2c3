"""Team-A objects for tests/webapp/test_isolation.py's {run}, {explanation}, {split}, {index}, {checkpoint},
{run_view} placeholders."""

from __future__ import annotations

from typing import Any


def objects(*, team: Any, user: Any, dataset: Any, revision: Any) -> dict[str, Any]:
    """A queued run of team A and a finished explanation of it (nothing is queued anywhere)."""
    from webapp.runs.models import Explanation, Run, RunStatus, RunView

    run = Run.objects.create(
        team=team, graph_revision=revision, dataset=dataset, config={"epochs": 1}, created_by=user,
        status=RunStatus.SUCCEEDED,
    )
    explanation = Explanation.objects.create(
        run=run, method="saliency", sample={"index": 0}, status="succeeded", result={"prediction": 0}, created_by=user
    )
    view = RunView.objects.create(team=team, name="secret-a view", filter="metrics.val/accuracy > 0.5", created_by=user)
    return {"run_view": view.pk, "run": run.pk, "explanation": explanation.pk, "split": "test", "index": 0, "checkpoint": "best"}
