"""Accounts app: users, teams, roles and API tokens."""

from django.apps import AppConfig


class AccountsConfig(AppConfig):
    """Teams, memberships and API tokens."""

    name = "webapp.accounts"
    label = "accounts"
    verbose_name = "Accounts and teams"

    def ready(self) -> None:
        """Register the OpenAPI descriptions of our authentication classes."""
        from webapp.api import schema  # noqa: F401
