"""Runs app configuration."""

from django.apps import AppConfig


class RunsConfig(AppConfig):
    """Training runs, their event stream, explanations and exports."""

    name = "webapp.runs"
    label = "runs"
    verbose_name = "Runs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from .inference import jobs  # noqa: F401 - registers the "runs.explain" and "runs.export" job kinds
        from .signals import connect_name_receivers

        connect_name_receivers()
