"""Writes for accounts, one module per concern: teams, memberships, tokens, invitations, users
and single sign-on. Import from the module that owns the function
(`from webapp.accounts.services.tokens import token_create`)."""
