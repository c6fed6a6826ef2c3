"""The datasets app's job kind: processing an upload (the engine's check and summary) on the
datasets queue, served by a worker of its own so a large archive never holds an explanation. Its handler is workers/datasets.py::process_dataset_job; the job's subject is the
dataset. The dataset keeps its own status, progress and error (what users see); the job records
the attempts, and a job that fails without the dataset knowing (its worker lost too often)
fails the dataset too."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.conf import settings

from webapp.jobs.registry import JobType, job_types
from webapp.queues import DATASETS_PROCESS, DATASETS_QUEUE

if TYPE_CHECKING:
    from webapp.jobs.models import Job


class DatasetProcessJob(JobType):
    """Check and summarise one uploaded dataset (subject_id: the dataset)."""

    kind = DATASETS_PROCESS
    queue = DATASETS_QUEUE
    reports_progress = True
    # Teams take turns: one team's many uploads never hold another's (jobs.services.job_claim_fairest).
    fair = True

    @property
    def resend_seconds(self) -> float:  # type: ignore[override]
        """NETLOOM_DATASET_RESEND_SECONDS, read at each use (tests and deployments set it)."""
        return float(settings.NETLOOM_DATASET_RESEND_SECONDS)

    def on_failed(self, job: Job) -> None:
        from .services import dataset_processing_failed

        if job.subject_id is not None:
            dataset_processing_failed(dataset_id=job.subject_id, error=job.error or {})


job_types.register(DatasetProcessJob())
