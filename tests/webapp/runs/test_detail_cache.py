"""GET /api/runs/<id>/ of a finished run comes from webapp/runs/detail.py's per-process cache:
after each change to what the document is made of, it answers what the uncached path answers.

The uncached path is the same request with `?team=` (the cache serves only the bare URL), so each
answer is checked against the serializer itself, not against a copy of its rules.
"""

from __future__ import annotations

from typing import Any

import pytest

from webapp.accounts.services import membership_remove
from webapp.datasets.models import Dataset
from webapp.graphs.models import Graph
from webapp.runs import conf, detail
from webapp.runs.events import events_record
from webapp.runs.models import Run, RunStatus
from webapp.runs.services import run_create

pytestmark = pytest.mark.django_db(transaction=True)


def both(api: Any, run: Run) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the cached answer, the uncached one) for the run."""
    cached = api.get(f"/api/runs/{run.pk}/")
    fresh = api.get(f"/api/runs/{run.pk}/?team={run.team_id}")
    assert cached.status_code == 200 and fresh.status_code == 200, (cached.content, fresh.content)
    return cached.json(), fresh.json()


def test_a_finished_runs_cached_detail_follows_every_change_it_is_made_of(api_a, user_a, revision_a, dataset_a):
    detail._documents.clear()
    run = run_create(user=user_a, team=revision_a.graph.team, graph_revision=revision_a, dataset=dataset_a,
                     config={"epochs": 2})
    events_record(run_id=run.pk, events=[{"type": "metric", "step": 1, "epoch": 0.5, "values": {"val/loss": 0.9}}])
    Run.objects.filter(pk=run.pk).update(status=RunStatus.SUCCEEDED)
    first, fresh = both(api_a, run)
    assert first == fresh and first["summary"]["final"] == {"val/loss": 0.9}
    assert run.pk in detail._documents, "a finished run's document is kept"

    changes = [
        ("a rename over REST", lambda: api_a.patch(f"/api/runs/{run.pk}/", {"name": "wide", "tags": ["x"]},
                                                    format="json"),
         lambda d: d["name"] == "wide" and d["tags"] == ["x"]),
        ("a stored metric", lambda: events_record(run_id=run.pk, events=[
            {"type": "metric", "step": 2, "epoch": 1.0, "values": {"val/loss": 0.4}}]),
         lambda d: d["summary"]["final"] == {"val/loss": 0.4} and d["summary"]["best"]["val/loss"]["step"] == 2),
        ("a best checkpoint", lambda: events_record(run_id=run.pk, events=[
            {"type": "checkpoint", "step": 2, "epoch": 1.0, "name": "best", "path": "/nowhere", "metrics": {}}]),
         lambda d: d["best_checkpoint"]["step"] == 2),
        ("the graph renamed", lambda: Graph.objects.filter(pk=revision_a.graph_id).update(name="renamed graph"),
         lambda d: d["graph_name"] == "renamed graph"),
        ("the dataset renamed", lambda: Dataset.objects.filter(pk=dataset_a.pk).update(name="renamed data"),
         lambda d: d["dataset_name"] == "renamed data"),
        ("the export task's state", lambda: Run.objects.filter(pk=run.pk).update(export_status="failed",
                                                                                 export_error="no room"),
         lambda d: d["exports"]["status"] == "failed"),
        ("a zip made on download (no row changes)", lambda: (conf.run_dir(run.pk)).mkdir(parents=True, exist_ok=True)
         or (conf.run_dir(run.pk) / "export.zip").write_bytes(b"PK"),
         lambda d: d["exports"]["zip"] is True),
    ]
    for what, change, shows in changes:
        change()
        cached, fresh = both(api_a, run)
        assert cached == fresh, what
        assert shows(cached), (what, cached)


def test_the_cache_never_answers_for_someone_who_may_not_read_the_run(api_a, api_b, api_viewer_a, viewer_a, user_a,
                                                                      team_a, revision_a, dataset_a):
    detail._documents.clear()
    run = run_create(user=user_a, team=team_a, graph_revision=revision_a, dataset=dataset_a, config={"epochs": 2})
    Run.objects.filter(pk=run.pk).update(status=RunStatus.SUCCEEDED)
    assert api_viewer_a.get(f"/api/runs/{run.pk}/").status_code == 200  # now cached
    assert api_b.get(f"/api/runs/{run.pk}/").status_code == 404  # another team's member
    membership_remove(team=team_a, user=viewer_a)
    assert api_viewer_a.get(f"/api/runs/{run.pk}/").status_code == 404  # left the team
    assert api_a.get(f"/api/runs/{run.pk}/").status_code == 200
    assert api_a.get("/api/runs/99999999/").status_code == 404


def test_an_unfinished_run_is_built_for_every_request(api_a, user_a, team_a, revision_a, dataset_a):
    detail._documents.clear()
    queued = run_create(user=user_a, team=team_a, graph_revision=revision_a, dataset=dataset_a, config={"epochs": 2})
    answer = api_a.get(f"/api/runs/{queued.pk}/").json()
    assert answer["status"] == "queued" and answer["queue"]["position"] >= 1
    assert not detail._documents, "a queued run's position depends on other runs: never kept"


def test_a_tokens_read_of_a_kept_document_answers_what_drf_answered_without_drf(api_a, user_a, team_a, revision_a,
                                                                               dataset_a, monkeypatch):
    """webapp/runs/api.py::run_detail_route answers the hot read itself: the same status, body and
    headers as DRF's answer before it, while DRF's retrieve is not called; every other case
    (a revoked token, a disabled user, another Accept, a changed row) is DRF's answer."""
    from webapp.accounts.models import ApiToken
    from webapp.runs.api import RunViewSet

    detail._documents.clear()
    run = run_create(user=user_a, team=team_a, graph_revision=revision_a, dataset=dataset_a, config={"epochs": 2})
    Run.objects.filter(pk=run.pk).update(status=RunStatus.SUCCEEDED)
    url = f"/api/runs/{run.pk}/"
    by_drf = api_a.get(url)  # builds and keeps the document
    served = []
    drf_retrieve = RunViewSet.retrieve
    monkeypatch.setattr(RunViewSet, "retrieve", lambda self, *a, **k: served.append(1) or drf_retrieve(self, *a, **k))
    kept = api_a.get(url, HTTP_ACCEPT="application/json")
    assert not served, "the kept document was answered through DRF"
    assert (kept.status_code, kept.json()) == (200, by_drf.json())
    assert dict(kept.headers) == dict(by_drf.headers)
    assert kept["Allow"] == "GET, PATCH, HEAD, OPTIONS"

    assert api_a.get(url, HTTP_ACCEPT="text/html").status_code == 406  # DRF's negotiation refuses it
    Run.objects.filter(pk=run.pk).update(name="changed")
    assert api_a.get(url).json()["name"] == "changed" and served == [1]  # rebuilt by DRF, kept again
    assert api_a.get(url).json()["name"] == "changed" and served == [1]
    user_a.is_active = False
    user_a.save()
    assert api_a.get(url).status_code == 401
    user_a.is_active = True
    user_a.save()
    assert api_a.get(url).status_code == 200 and served == [1]  # active again: kept
    for change in ({"expires_at": "2026-01-01T00:00:00Z"}, {"expires_at": None, "revoked_at": "2026-01-01T00:00:00Z"}):
        ApiToken.objects.filter(user=user_a).update(**change)
        refused = api_a.get(url)
        assert refused.status_code == 401 and refused.json()["error"]["code"] == "authentication_failed", change


def test_a_document_built_inside_a_transaction_is_not_served_for_a_later_write_of_the_same_one(
        api_a, user_a, team_a, revision_a, dataset_a):
    """On PostgreSQL the cache knows a run's row by its version (xmin, ctid), and every UPDATE in
    one transaction writes a version with the same xmin: the document of the first must not
    answer for the second once the transaction commits."""
    from django.db import transaction

    from webapp.runs.api import RunSerializer

    detail._documents.clear()
    run = run_create(user=user_a, team=team_a, graph_revision=revision_a, dataset=dataset_a, config={"epochs": 2})
    Run.objects.filter(pk=run.pk).update(status=RunStatus.SUCCEEDED)
    with transaction.atomic():
        Run.objects.filter(pk=run.pk).update(name="first")
        document = detail.run_detail_cached(run_id=run.pk, user_id=user_a.pk,
                                            render=lambda: RunSerializer(Run.objects.get(pk=run.pk)).data)
        assert document is not None and document["name"] == "first"
        assert run.pk in detail._documents
        Run.objects.filter(pk=run.pk).update(name="second")
    cached, fresh = both(api_a, run)
    assert cached == fresh and cached["name"] == "second"
