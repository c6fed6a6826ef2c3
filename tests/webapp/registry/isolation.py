"""Team-A objects for tests/webapp/test_isolation.py's {model}, {model_version}, {alias}, {approval} placeholders."""

from __future__ import annotations

from typing import Any


def objects(*, team: Any, user: Any, dataset: Any, revision: Any) -> dict[str, Any]:
    """A registered model of team A with one version (files not needed: every answer is a 404 first)."""
    from webapp.registry.models import AliasApproval, ModelAlias, ModelVersion, RegisteredModel

    model = RegisteredModel.objects.create(team=team, name="secret-a model", created_by=user)
    version = ModelVersion.objects.create(model=model, number=1, source={"run_name": "secret-a run"}, created_by=user)
    ModelAlias.objects.create(model=model, name="staging", version=version, updated_by=user)
    approval = AliasApproval.objects.create(model=model, alias="production", version=version, requested_by=user)
    return {"model": model.pk, "model_version": 1, "alias": "staging", "approval": approval.pk}
