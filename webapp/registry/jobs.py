"""The registry's job kind (webapp/jobs): building a version's formats for other runtimes.

"registry.formats" is about one version (`subject_id`: the ModelVersion; `params`: {"formats":
[...]}); its handler (workers/registry.py) builds each format beside the version's files,
measures it on the test split and stores the figures in `ModelVersion.formats`; the job's result
is that dict.
"""

from __future__ import annotations

from webapp.jobs.registry import JobType, job_types
from webapp.queues import REGISTRY_FORMATS, SHORT_QUEUE


class FormatsJob(JobType):
    """Build and measure `.pt2` / int8 (/ AOTInductor) of a version (subject_id: the version)."""

    kind = REGISTRY_FORMATS
    queue = SHORT_QUEUE
    reports_progress = True
    # An MLP's pt2 and int8 take seconds; AOTInductor's compiler a minute or two on a busy machine.
    resend_seconds = 120.0


job_types.register(FormatsJob())
