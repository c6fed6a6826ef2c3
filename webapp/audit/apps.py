"""Audit app: who changed what in a team, when, and from what to what."""

from django.apps import AppConfig


class AuditConfig(AppConfig):
    """The audit log: one entry per change, written in the change's own transaction."""

    name = "webapp.audit"
    label = "audit"
