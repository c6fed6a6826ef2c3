"""Blocks app: team-owned, versioned subgraph definitions that graphs place as instances."""

from django.apps import AppConfig


class BlocksConfig(AppConfig):
    """The team block library."""

    name = "webapp.blocks"
    label = "blocks"
