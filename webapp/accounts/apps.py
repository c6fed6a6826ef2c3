"""Accounts app: users, teams, roles and API tokens."""

from django.apps import AppConfig


class AccountsConfig(AppConfig):
    """Teams, memberships and API tokens."""

    name = "webapp.accounts"
    label = "accounts"
    verbose_name = "Accounts and teams"

    def ready(self) -> None:
        """Register the OpenAPI descriptions of our authentication classes, and forget a token's
        kept lookup (selectors.token_for_secret) when its user changes or it is deleted."""
        from django.contrib.auth import get_user_model
        from django.db.models.signals import post_delete, post_save

        from webapp.api import schema  # noqa: F401

        from . import oidc  # noqa: F401  (its deploy check: the SSO provider answers)
        from .models import ApiToken
        from .services.tokens import token_forget, user_tokens_forget

        def user_saved(sender, instance, created, update_fields=None, **kwargs):  # type: ignore[no-untyped-def]
            if not created and set(update_fields or ()) != {"last_login"}:  # a sign-in changes nothing kept
                user_tokens_forget(user_id=instance.pk)

        def token_deleted(sender, instance, **kwargs):  # type: ignore[no-untyped-def]
            token_forget(digests=[instance.token_hash])

        post_save.connect(user_saved, sender=get_user_model(), weak=False, dispatch_uid="accounts.user_tokens")
        post_delete.connect(token_deleted, sender=ApiToken, weak=False, dispatch_uid="accounts.token_deleted")
