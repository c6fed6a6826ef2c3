"""Shared REST API infrastructure: errors, authentication, permissions, pagination, team scoping."""
