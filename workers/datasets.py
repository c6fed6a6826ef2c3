"""Dataset work on the workers: the handler of "datasets.process" jobs (the service does the
work), and the old `datasets.process` task, for a message an older server sent."""

from __future__ import annotations

from typing import Any

from webapp.celery import app
from webapp.datasets.models import Dataset, DatasetStatus, DatasetVersion
from webapp.datasets.services import dataset_process
from webapp.jobs.models import Job, JobState
from webapp.queues import DATASETS_PROCESS
from workers.jobs import JobFailed, Progress, job_execute, job_handler


@job_handler(DATASETS_PROCESS)
def process_dataset_job(job: Job, progress: Progress) -> dict[str, Any]:
    """Check and summarise the job's dataset; a bad file fails the job with the engine's error."""
    if job.subject_id is None or not Dataset.objects.filter(pk=job.subject_id).exists():
        return {"dataset": job.subject_id, "status": "deleted"}
    # A ready dataset's job checks its new versions: one refused fails the job with its error too.
    pending = list(DatasetVersion.objects.filter(dataset_id=job.subject_id, status=DatasetStatus.PROCESSING)
                   .values_list("pk", flat=True))
    dataset = dataset_process(job.subject_id, progress=progress)
    if dataset.status == DatasetStatus.FAILED:
        raise JobFailed(dataset.error or {"message": "the dataset could not be read"}, code="invalid_dataset")
    failed = DatasetVersion.objects.filter(pk__in=pending, status=DatasetStatus.FAILED).first()
    if failed is not None:
        raise JobFailed(failed.error or {"message": "the version could not be read"}, code="invalid_dataset")
    return {"dataset": dataset.pk, "status": str(dataset.status)}


@app.task(name=DATASETS_PROCESS, acks_late=True, reject_on_worker_lost=True)
def process_dataset(dataset_id: int) -> str:
    """A `datasets.process` message from an older server (the current one sends `jobs.run`):
    run the dataset's queued job, or process it directly when it has none; idempotent."""
    job_id = (
        Job.objects.filter(kind=DATASETS_PROCESS, subject_id=int(dataset_id), state=JobState.QUEUED)
        .order_by("-created_at", "-id")
        .values_list("pk", flat=True)
        .first()
    )
    if job_id is not None:
        job_execute(job_id)
        return str(Dataset.objects.filter(pk=dataset_id).values_list("status", flat=True).first() or "missing")
    return str(dataset_process(int(dataset_id)).status)
