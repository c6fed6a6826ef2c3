"""Reads of the jobs app."""

from __future__ import annotations

from .models import Job


def job_latest(*, kind: str, subject_id: int) -> Job | None:
    """The newest job of `kind` about `subject_id`, or None."""
    return Job.objects.filter(kind=kind, subject_id=subject_id).order_by("-created_at", "-id").first()
