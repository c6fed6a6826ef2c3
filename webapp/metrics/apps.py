"""Metrics app configuration."""

from django.apps import AppConfig


class MetricsConfig(AppConfig):
    """The metric store of runs: points packed in chunks, block summaries, downsampled reads."""

    name = "webapp.metrics"
    label = "metrics"
    verbose_name = "Metrics"
    default_auto_field = "django.db.models.BigAutoField"
