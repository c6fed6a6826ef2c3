"""Jobs app: one record and one code path for background work (queue, send, claim, retry, expire)."""

from django.apps import AppConfig


class JobsConfig(AppConfig):
    """Background jobs of every kind; each kind is a JobType registered by the app that owns it."""

    name = "webapp.jobs"
    label = "jobs"
