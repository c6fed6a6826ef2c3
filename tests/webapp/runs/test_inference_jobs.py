"""Explanations, exports and evaluations asked for asynchronously are jobs (webapp/jobs) like dataset processing: with the broker
stopped (a private redis-server) every kind's work is owed and the one re-send path (the reaper's
pass: run_reap -> jobs_reap) sends each once the broker is back, and again when its message is
lost; a lost explanation job fails the explanation (its kind's on_failed), never leaving it queued."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone

from tests.webapp.conftest import iris_like_csv
from tests.webapp.jobs.conftest import broker, redis_server  # noqa: F401 - fixtures
from webapp.jobs.models import Job
from webapp.runs.models import Explanation, ExplanationStatus, Run, RunStatus
from webapp.runs.stream.events import events_since, flatten

KINDS = {"runs.explain", "runs.export", "runs.evaluate", "datasets.process"}


@pytest.mark.django_db(transaction=True)
def test_with_the_broker_stopped_each_kind_is_sent_by_the_reaper_once_it_is_back_and_again_when_lost(
    api_a: Any, team_a: Any, run_a: Any, broker: Any, settings: Any  # noqa: F811 - the fixture
) -> None:
    from webapp.runs.inference.exports import run_export_request
    from webapp.runs.scheduling.reaper import run_reap
    from webapp.runs.selectors import run_export_dir

    settings.NETLOOM_DATASET_PROCESSING = "celery"
    Run.objects.filter(pk=run_a.pk).update(status=RunStatus.SUCCEEDED)
    broker.down()
    explained = api_a.post(f"/api/runs/{run_a.pk}/explanations/", {"index": 0, "method": "saliency"}, format="json")
    assert explained.status_code in (201, 202), explained.content
    assert run_export_request(run=Run.objects.get(pk=run_a.pk))
    run_export_dir(run_a).mkdir(parents=True, exist_ok=True)
    (run_export_dir(run_a) / "model.safetensors").write_bytes(b"")  # "trained", for the check
    evaluating = api_a.post(f"/api/runs/{run_a.pk}/evaluation/", {}, format="json", HTTP_PREFER="respond-async")
    assert evaluating.status_code == 202, evaluating.content
    uploaded = api_a.post("/api/datasets/upload/", {
        "team": team_a.id, "kind": "csv", "options": json.dumps({"target": "species"}),
        "file": SimpleUploadedFile("flowers.csv", iris_like_csv(30)),
    }, format="multipart")  # fmt: skip
    assert uploaded.status_code in (201, 202), uploaded.content
    jobs = {job.kind: job for job in Job.objects.all()}
    assert set(jobs) == KINDS and all(job.send_owed for job in jobs.values())
    assert api_a.get(f"/api/runs/{run_a.pk}/").json()["exports"]["status"] == "pending"

    run_reap()  # still down: tried, left owed
    assert Job.objects.filter(send_owed=True).count() == len(KINDS)
    broker.up()
    run_reap()
    def taken() -> dict[str, list[Any]]:
        return {queue: sorted(broker.take(queue)) for queue in ("short", "datasets")}

    sent = taken()
    # Each kind once, as jobs.run; an upload's processing on the datasets queue, apart.
    assert sent == {
        "short": sorted(("jobs.run", [job.pk]) for kind, job in jobs.items() if kind != "datasets.process"),
        "datasets": [("jobs.run", [jobs["datasets.process"].pk])],
    }
    assert not Job.objects.filter(send_owed=True).exists()
    run_reap()
    assert taken() == {"short": [], "datasets": []}, "sent once; later passes only re-send work queued too long"

    # The messages were taken and lost (a Redis restart): past every kind's resend interval (60 s,
    # 120 s, 60 s, 60 s) the same path sends each again.
    run_reap(now=timezone.now() + timedelta(seconds=125))
    assert taken() == sent
    assert Explanation.objects.get().status == ExplanationStatus.QUEUED


@pytest.mark.django_db
@pytest.mark.parametrize("how", ["worker lost", "never taken"])
def test_a_lost_explanation_job_fails_the_explanation_with_the_jobs_message(
    api_a: Any, run_a: Any, settings: Any, django_capture_on_commit_callbacks: Any, how: str
) -> None:
    from webapp.jobs.services import job_claim, jobs_expire

    Run.objects.filter(pk=run_a.pk).update(status=RunStatus.SUCCEEDED)
    created = api_a.post(f"/api/runs/{run_a.pk}/explanations/", {"index": 0, "method": "saliency"}, format="json")
    job = Job.objects.get(kind="runs.explain", subject_id=created.json()["id"])
    at = job.created_at
    if how == "worker lost":
        for attempt in range(1, 4):
            assert job_claim(job_id=job.pk, now=at).attempts == attempt
            at += timedelta(seconds=61)
            with django_capture_on_commit_callbacks():
                expired = jobs_expire(now=at)
        message = "lost 3 times"
    else:
        settings.JOBS_KINDS = {"runs.explain": {"queued_expire_seconds": 30.0}}
        expired = jobs_expire(now=at + timedelta(seconds=31))
        message = "No worker took it within 30 s"
    assert expired == {"requeued": [], "failed": [job.pk]}
    body = api_a.get(f"/api/explanations/{created.json()['id']}/").json()
    assert body["status"] == "failed" and message in body["error"], body
    events = [e for e in flatten(events_since(run_id=run_a.pk)) if e["type"] == "explanation"]
    assert [e["status"] for e in events] == ["queued", "failed"] and message in events[-1]["error"]
