"""The registry's job handler: "registry.formats" (webapp/registry/jobs.py declares the kind).
Thin: load the version, call the service, record the outcome."""

from __future__ import annotations

from typing import Any

from webapp.errors import DomainError
from webapp.jobs.models import Job
from webapp.queues import REGISTRY_FORMATS
from webapp.registry.models import ModelVersion
from webapp.registry.services import version_formats_build
from workers.jobs import JobFailed, Progress, job_handler


@job_handler(REGISTRY_FORMATS)
def formats_job(job: Job, progress: Progress) -> dict[str, Any]:
    """Build and measure the formats the job's params name; the result is their figures."""
    version = ModelVersion.objects.select_related("model__team", "run").filter(pk=job.subject_id).first()
    if version is None:
        raise JobFailed(f"Model version {job.subject_id} no longer exists.", code="not_found")
    try:
        built = version_formats_build(version=version, formats=list((job.params or {}).get("formats") or []),
                                      progress=progress)
    except DomainError as exc:  # the dataset or the files went away since it was asked for
        raise JobFailed(exc.message, code=exc.code) from exc
    if built and all("error" in figures for figures in built.values()):
        first = next(iter(built.values()))["error"]
        raise JobFailed(f"no format could be built for this graph: {first}", code="formats_failed")
    return {"version": version.number, "model": version.model_id, "formats": built}
