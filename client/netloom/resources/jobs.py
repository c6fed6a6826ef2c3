"""Background jobs the service runs for a request: wait for one to end."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, cast

from netloom.api_types import Job
from netloom.errors import JobFailed, NetloomError
from netloom.resources.transport import Transport


class JobsMixin(Transport):
    """Jobs the service runs on its workers."""

    def job_wait(
        self,
        job_id: int,
        *,
        timeout: float = 600.0,
        poll: float = 0.5,
        progress: Callable[[Job], None] | None = None,
    ) -> Job:
        """Wait until a job (GET /api/jobs/<id>/) is done: the job, or JobFailed with its error."""
        deadline = time.monotonic() + timeout
        while True:
            job = cast(Job, self._json("GET", f"/api/jobs/{job_id}/"))
            if progress:
                progress(job)
            if job["state"] == "done":
                return job
            if job["state"] in ("failed", "cancelled"):
                raise JobFailed(cast(dict[str, Any], job))
            if time.monotonic() > deadline:
                raise NetloomError(f"job {job_id} ({job['kind']}) is still {job['state']} after {timeout:.0f} s")
            time.sleep(poll)
