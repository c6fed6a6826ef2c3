"""Sweeps app configuration."""

from django.apps import AppConfig


class SweepsConfig(AppConfig):
    """Hyper-parameter and architecture sweeps: Optuna-driven trials that are ordinary runs."""

    name = "webapp.sweeps"
    label = "sweeps"
    verbose_name = "Sweeps"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        """Schedule a sweep's next trials whenever one of its runs ends (webapp.runs.signals)."""
        from webapp.runs.signals import run_finished

        from .services import sweep_run_finished

        run_finished.connect(sweep_run_finished, dispatch_uid="sweeps.sweep_run_finished")
