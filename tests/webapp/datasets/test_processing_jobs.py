"""Uploads processed on the worker go through a job of kind "datasets.process" (webapp/jobs): the
upload answers as before (202, processing), the job's handler checks the file, the dataset shows
the outcome as before, and the job records attempts, progress and the engine's error."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from tests.webapp.conftest import iris_like_csv
from tests.webapp.jobs.conftest import broker, redis_server  # noqa: F401 - fixtures
from webapp.datasets.models import Dataset, DatasetStatus
from webapp.jobs.models import Job, JobState

pytestmark = pytest.mark.django_db


def _upload(api: Any, team: Any, content: bytes) -> Any:
    return api.post("/api/datasets/upload/", {
        "team": team.id, "kind": "csv", "options": json.dumps({"target": "species"}),
        "file": SimpleUploadedFile("flowers.csv", content),
    }, format="multipart")  # fmt: skip


@pytest.fixture
def on_worker(settings: Any) -> None:
    settings.NETLOOM_DATASET_PROCESSING = "celery"


def test_an_upload_queues_a_job_whose_task_makes_the_dataset_ready(
    api_a: Any, team_a: Any, user_a: Any, on_worker: None
) -> None:
    from workers.jobs import run_job

    answer = _upload(api_a, team_a, iris_like_csv(30))
    assert answer.status_code == 202, answer.content
    body = answer.json()
    assert body["status"] == "processing" and body["summary"] == {} and body["progress"] is None
    job = Job.objects.get()
    assert (job.kind, job.subject_id, job.team, job.owner) == ("datasets.process", body["id"], team_a, user_a)
    assert job.state == JobState.QUEUED

    assert run_job(job.pk) == "done"
    dataset = api_a.get(f"/api/datasets/{body['id']}/").json()
    assert dataset["status"] == "ready" and dataset["progress"] == 1.0 and dataset["error"] is None
    assert dataset["summary"]["rows"]["total"] == 30
    job.refresh_from_db()
    assert job.state == JobState.DONE and job.progress == 1.0 and job.attempts == 1
    assert job.result == {"dataset": body["id"], "status": "ready"}
    assert api_a.get(f"/api/jobs/{job.pk}/").json()["state"] == "done"


def test_a_bad_file_fails_the_dataset_and_the_job_with_the_engines_error(
    api_a: Any, team_a: Any, on_worker: None
) -> None:
    from workers.jobs import run_job

    answer = _upload(api_a, team_a, iris_like_csv(30, bad_row=7))
    assert answer.status_code == 202, answer.content
    job = Job.objects.get()
    assert run_job(job.pk) == "failed"
    dataset = Dataset.objects.get(pk=answer.json()["id"])
    assert dataset.status == DatasetStatus.FAILED and dataset.error["row"] == 8
    assert dataset.error["column"] == "sepal_width" and dataset.file == ""
    job.refresh_from_db()
    assert job.state == JobState.FAILED and job.error["code"] == "invalid_dataset"
    assert job.error["row"] == 8 and job.error["column"] == "sepal_width"
    assert job.error["message"] == dataset.error["message"]


def test_a_dataset_whose_worker_was_lost_too_often_fails_with_the_jobs_message(
    api_a: Any, team_a: Any, on_worker: None, django_capture_on_commit_callbacks: Any
) -> None:
    from webapp.jobs.services import job_claim, jobs_expire

    answer = _upload(api_a, team_a, iris_like_csv(30))
    job = Job.objects.get()
    at = job.created_at
    for attempt in range(1, 4):
        assert job_claim(job_id=job.pk, now=at).attempts == attempt
        at += timedelta(seconds=61)
        with django_capture_on_commit_callbacks():
            expired = jobs_expire(now=at)
    assert expired == {"requeued": [], "failed": [job.pk]}
    dataset = Dataset.objects.get(pk=answer.json()["id"])
    assert dataset.status == DatasetStatus.FAILED and dataset.file == ""
    assert "lost 3 times" in dataset.error["message"] and dataset.error["row"] is None
    assert not dataset.storage_dir.exists()


def test_deleting_a_dataset_still_processing_cancels_its_job(api_a: Any, team_a: Any, on_worker: None) -> None:
    from workers.jobs import run_job

    answer = _upload(api_a, team_a, iris_like_csv(30))
    job = Job.objects.get()
    assert api_a.delete(f"/api/datasets/{answer.json()['id']}/").status_code == 204
    job.refresh_from_db()
    assert job.state == JobState.CANCELLED
    assert run_job(job.pk) == "not queued"


def test_a_datasets_process_message_of_an_older_server_runs_the_datasets_job(
    api_a: Any, team_a: Any, on_worker: None
) -> None:
    from workers.datasets import process_dataset

    answer = _upload(api_a, team_a, iris_like_csv(30))
    assert process_dataset(dataset_id=answer.json()["id"]) == DatasetStatus.READY
    assert Job.objects.get().state == JobState.DONE
    assert process_dataset(answer.json()["id"]) == DatasetStatus.READY, "again: nothing to do"


@pytest.mark.django_db(transaction=True)
def test_an_upload_made_while_the_broker_is_down_is_201_and_processed_once_it_is_back(
    api_a: Any, team_a: Any, settings: Any, broker: Any  # noqa: F811 - the fixture
) -> None:
    from webapp.jobs.services import jobs_resend
    from workers.jobs import run_job

    settings.NETLOOM_DATASET_PROCESSING = "celery"
    settings.NETLOOM_DATASET_RESEND_SECONDS = 60.0
    broker.down()
    answer = _upload(api_a, team_a, iris_like_csv(30))
    assert answer.status_code in (201, 202), answer.content
    dataset_id = answer.json()["id"]
    assert answer.json()["status"] == "processing" and Dataset.objects.count() == 1
    job = Job.objects.get(subject_id=dataset_id)
    assert job.send_owed
    created = Dataset.objects.get(pk=dataset_id).created_at

    later = created + timedelta(seconds=61)
    assert jobs_resend(now=later) == [], "still down: tried, not sent"
    broker.up()
    assert jobs_resend(now=later) == [job.pk], "the failed try left it owed"
    assert broker.take("datasets") == [("jobs.run", [job.pk])]
    assert jobs_resend(now=later + timedelta(seconds=30)) == [], "backing off"
    assert run_job(job.pk) == "done"
    assert Dataset.objects.get(pk=dataset_id).status == DatasetStatus.READY
    assert jobs_resend(now=later + timedelta(seconds=600)) == [], "a ready one is never sent again"


def test_a_new_version_is_processed_by_the_same_job_kind(api_a: Any, team_a: Any, settings: Any) -> None:
    from workers.jobs import run_job

    made = _upload(api_a, team_a, iris_like_csv(30))
    assert made.status_code == 201, made.content  # processed in the request (sync, the tests' default)
    dataset_id = made.json()["id"]
    settings.NETLOOM_DATASET_PROCESSING = "celery"
    answer = api_a.post(f"/api/datasets/{dataset_id}/versions/",
                        {"file": SimpleUploadedFile("flowers.csv", iris_like_csv(25))}, format="multipart")
    assert answer.status_code == 202, answer.content
    assert answer.json()["status"] == "processing" and answer.json()["number"] == 2
    assert api_a.get(f"/api/datasets/{dataset_id}/").json()["latest_version"]["number"] == 1
    job = Job.objects.get()
    assert (job.kind, job.subject_id) == ("datasets.process", dataset_id)
    assert run_job(job.pk) == "done"
    version = api_a.get(f"/api/datasets/{dataset_id}/versions/2/").json()
    assert version["status"] == "ready" and version["summary"]["rows"]["total"] == 25 and version["progress"] == 1.0
    detail = api_a.get(f"/api/datasets/{dataset_id}/").json()
    assert detail["latest_version"]["number"] == 2 and detail["summary"]["rows"]["total"] == 25


def test_a_bad_new_version_fails_its_job_and_keeps_the_dataset_on_the_last_good_one(
    api_a: Any, team_a: Any, settings: Any
) -> None:
    from workers.jobs import run_job

    dataset_id = _upload(api_a, team_a, iris_like_csv(30)).json()["id"]
    settings.NETLOOM_DATASET_PROCESSING = "celery"
    answer = api_a.post(f"/api/datasets/{dataset_id}/versions/",
                        {"file": SimpleUploadedFile("flowers.csv", iris_like_csv(30, bad_row=3))}, format="multipart")
    assert answer.status_code == 202, answer.content
    job = Job.objects.get()
    assert run_job(job.pk) == "failed"
    job.refresh_from_db()
    assert job.error["code"] == "invalid_dataset" and job.error["row"] == 4
    version = api_a.get(f"/api/datasets/{dataset_id}/versions/2/").json()
    assert version["status"] == "failed" and version["error"]["column"] == "sepal_width"
    assert api_a.get(f"/api/datasets/{dataset_id}/").json()["latest_version"]["number"] == 1
