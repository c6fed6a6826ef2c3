"""Registry app: a team's named models, their immutable versions made from runs, and aliases."""

from django.apps import AppConfig


class RegistryConfig(AppConfig):
    """Models in use: versions copied from a run's export, aliases moved with a history."""

    name = "webapp.registry"
    label = "registry"

    def ready(self) -> None:
        from . import jobs  # noqa: F401 - registers the "registry.formats" job kind
