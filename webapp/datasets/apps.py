"""Datasets app: built-in and uploaded datasets, validated and summarised by the engine."""

from django.apps import AppConfig


class DatasetsConfig(AppConfig):
    """Datasets owned by teams."""

    name = "webapp.datasets"
    label = "datasets"

    def ready(self) -> None:
        from . import jobs  # noqa: F401 - registers the "datasets.process" job kind
