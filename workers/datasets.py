"""Celery task of datasets: check and summarise an upload (the service does the work)."""

from __future__ import annotations

from webapp.celery import app
from webapp.queues import DATASETS_PROCESS


@app.task(name=DATASETS_PROCESS, acks_late=True, reject_on_worker_lost=True)
def process_dataset(dataset_id: int) -> str:
    """Process one uploaded dataset; a ready or failed one is left as it is (idempotent)."""
    from webapp.datasets.services import dataset_process

    return str(dataset_process(int(dataset_id)).status)
