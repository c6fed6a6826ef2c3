"""Graphs app: graph specs with immutable, numbered revisions."""

from django.apps import AppConfig


class GraphsConfig(AppConfig):
    """Graphs owned by teams."""

    name = "webapp.graphs"
    label = "graphs"
