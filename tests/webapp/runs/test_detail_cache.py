"""GET /api/runs/<id>/ of a finished run comes from webapp/runs/api/detail.py's cache, kept per run
version: after each change to what the document is made of, it answers what the uncached path answers.

The uncached path is the same request with `?team=` (the cache serves only the bare URL), so each
answer is checked against the serializer itself, not against a copy of its rules.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.core.cache import cache

from webapp.accounts.services.memberships import membership_remove
from webapp.accounts.services.tokens import token_revoke
from webapp.datasets.services import dataset_rename
from webapp.graphs.services import graph_rename
from webapp.jobs.models import Job
from webapp.jobs.services import job_claim, job_finish
from webapp.runs import conf
from webapp.runs.api import detail
from webapp.runs.models import Run, RunStatus
from webapp.runs.scheduling.sends import export_job_create
from webapp.runs.services import run_create
from webapp.runs.stream.events import events_record

pytestmark = pytest.mark.django_db(transaction=True)


def fail_export(run: Run) -> None:
    """The run's export job taken by a worker that then fails it (the jobs services' path)."""
    job = Job.objects.filter(kind="runs.export", subject_id=run.pk, state="queued").get()
    claimed = job_claim(job_id=job.pk)
    assert claimed is not None
    assert job_finish(job_id=job.pk, attempt=claimed.attempts, error={"message": "no room", "code": "failed"})


def kept(run: Run, user: Any) -> bool:
    """Whether the run's document for its current version is in the cache."""
    head = detail.run_head(run_id=run.pk, user_id=user.pk)
    return head is not None and cache.get(detail._key(head)) is not None


def both(api: Any, run: Run) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the cached answer, the uncached one) for the run."""
    cached = api.get(f"/api/runs/{run.pk}/")
    fresh = api.get(f"/api/runs/{run.pk}/?team={run.team_id}")
    assert cached.status_code == 200 and fresh.status_code == 200, (cached.content, fresh.content)
    return cached.json(), fresh.json()


def test_a_finished_runs_cached_detail_follows_every_change_it_is_made_of(api_a, user_a, revision_a, dataset_a):
    run = run_create(user=user_a, team=revision_a.graph.team, graph_revision=revision_a, dataset=dataset_a,
                     config={"epochs": 2})
    events_record(run_id=run.pk, events=[{"type": "metric", "step": 1, "epoch": 0.5, "values": {"val/loss": 0.9}}])
    Run.objects.filter(pk=run.pk).update(status=RunStatus.SUCCEEDED)
    first, fresh = both(api_a, run)
    assert first == fresh and first["summary"]["final"] == {"val/loss": 0.9}
    assert kept(run, user_a), "a finished run's document is kept"

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
        ("the graph renamed", lambda: graph_rename(graph=revision_a.graph, name="renamed graph"),
         lambda d: d["graph_name"] == "renamed graph"),
        ("the dataset renamed", lambda: dataset_rename(dataset=dataset_a, name="renamed data"),
         lambda d: d["dataset_name"] == "renamed data"),
        ("the export job queued", lambda: export_job_create(run=run),
         lambda d: d["exports"]["status"] == "pending"),
        ("the export job failed", lambda: fail_export(run),
         lambda d: d["exports"]["status"] == "failed" and d["exports"]["onnx"] == "unavailable"),
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
    run = run_create(user=user_a, team=team_a, graph_revision=revision_a, dataset=dataset_a, config={"epochs": 2})
    Run.objects.filter(pk=run.pk).update(status=RunStatus.SUCCEEDED)
    assert api_viewer_a.get(f"/api/runs/{run.pk}/").status_code == 200  # now cached
    assert api_b.get(f"/api/runs/{run.pk}/").status_code == 404  # another team's member
    membership_remove(team=team_a, user=viewer_a)
    assert api_viewer_a.get(f"/api/runs/{run.pk}/").status_code == 404  # left the team
    assert api_a.get(f"/api/runs/{run.pk}/").status_code == 200
    assert api_a.get("/api/runs/99999999/").status_code == 404


def test_an_unfinished_run_is_built_for_every_request(api_a, user_a, team_a, revision_a, dataset_a):
    queued = run_create(user=user_a, team=team_a, graph_revision=revision_a, dataset=dataset_a, config={"epochs": 2})
    response = api_a.get(f"/api/runs/{queued.pk}/")
    answer = response.json()
    assert answer["status"] == "queued" and answer["queue"]["position"] >= 1
    assert not kept(queued, user_a), "a queued run's position depends on other runs: never kept"
    assert "ETag" not in response.headers


def test_a_kept_document_is_drfs_answer_and_a_poller_gets_304_until_it_changes(api_a, user_a, team_a, revision_a,
                                                                               dataset_a, monkeypatch):
    """The kept document is answered through DRF (its negotiation, authentication, headers), with
    an ETag of the run's version and files: If-None-Match gets a 304 until either changes; a
    disabled user, an expired or a revoked token is refused at once."""
    from datetime import timedelta

    from django.utils import timezone

    from webapp.accounts.models import ApiToken
    from webapp.runs.api.runs import RunSerializer

    run = run_create(user=user_a, team=team_a, graph_revision=revision_a, dataset=dataset_a, config={"epochs": 2})
    Run.objects.filter(pk=run.pk).update(status=RunStatus.SUCCEEDED)
    url = f"/api/runs/{run.pk}/"
    by_drf = api_a.get(url)  # builds and keeps the document
    rendered = []
    to_representation = RunSerializer.to_representation
    monkeypatch.setattr(RunSerializer, "to_representation",
                        lambda self, *a: rendered.append(1) or to_representation(self, *a))
    again = api_a.get(url, HTTP_ACCEPT="application/json")
    assert not rendered, "the kept document was rendered again"
    assert (again.status_code, again.json()) == (200, by_drf.json())
    assert dict(again.headers) == dict(by_drf.headers)
    assert again["Allow"] == "GET, PATCH, HEAD, OPTIONS"
    etag = again["ETag"]
    unchanged = api_a.get(url, HTTP_IF_NONE_MATCH=etag)
    assert unchanged.status_code == 304 and unchanged.content == b""

    assert api_a.get(url, HTTP_ACCEPT="text/html").status_code == 406  # DRF's negotiation refuses it
    Run.objects.filter(pk=run.pk).update(name="changed")
    changed = api_a.get(url, HTTP_IF_NONE_MATCH=etag)
    assert changed.status_code == 200 and changed.json()["name"] == "changed" and rendered == [1]
    assert changed["ETag"] != etag
    assert api_a.get(url).json()["name"] == "changed" and rendered == [1]  # kept again
    user_a.is_active = False
    user_a.save()
    assert api_a.get(url).status_code == 401
    user_a.is_active = True
    user_a.save()
    assert api_a.get(url).status_code == 200 and rendered == [1]  # active again: kept
    token = ApiToken.objects.get(user=user_a)
    ApiToken.objects.filter(pk=token.pk).update(expires_at=timezone.now() + timedelta(minutes=5))
    token_revoke(token=ApiToken.objects.get(pk=token.pk))  # (also forgets the kept lookup)
    refused = api_a.get(url)
    assert refused.status_code == 401 and refused.json()["error"]["code"] == "token_revoked"


def test_a_document_built_inside_a_transaction_is_not_served_for_a_later_write_of_the_same_one(
        api_a, user_a, team_a, revision_a, dataset_a):
    """Every UPDATE moves the run's version, also two in one transaction: the document of the
    first must not answer for the second once the transaction commits."""
    from django.db import transaction

    from webapp.runs.api.runs import RunSerializer

    run = run_create(user=user_a, team=team_a, graph_revision=revision_a, dataset=dataset_a, config={"epochs": 2})
    Run.objects.filter(pk=run.pk).update(status=RunStatus.SUCCEEDED)
    with transaction.atomic():
        Run.objects.filter(pk=run.pk).update(name="first")
        head = detail.run_head(run_id=run.pk, user_id=user_a.pk)
        export = detail.run_head_export(head, None)
        document = detail.run_detail_document(head=head, kept=None, export=export,
                                              exports=detail.run_head_exports(head, export),
                                              render=lambda: RunSerializer(Run.objects.get(pk=run.pk)).data)
        assert document["name"] == "first"
        assert kept(run, user_a)
        Run.objects.filter(pk=run.pk).update(name="second")
    cached, fresh = both(api_a, run)
    assert cached == fresh and cached["name"] == "second"
