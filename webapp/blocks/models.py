"""Block and BlockVersion: a named subgraph of a team, with immutable, numbered versions.

A version's `definition` is an engine BlockSpec (`engine.spec.BlockSpec`) whose name and version
are this block's name and the version's number. Graphs copy the definitions they use into their
spec, so deleting a block never breaks a revision; a version keeps copies of the definitions
it uses in the same way.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Block(models.Model):
    """A named, reusable subgraph owned by a team; its content lives in its versions."""

    team = models.ForeignKey("accounts.Team", on_delete=models.CASCADE, related_name="blocks")
    # A Python identifier: the class name in generated code and the `Name` of `Name@version`.
    name = models.CharField(max_length=64)
    description = models.TextField(blank=True, default="")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="blocks",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["team", "name"], name="block_unique_team_name")
        ]

    def __str__(self) -> str:
        return self.name


class BlockVersion(models.Model):
    """One saved definition of a block, numbered 1, 2, 3 ...; never changed once saved."""

    block = models.ForeignKey(Block, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    definition = models.JSONField()
    # The definitions of the blocks it uses, transitively, dependencies first, as they were when
    # this version was saved: a version stays self-contained when a block it uses is deleted.
    dependencies = models.JSONField(default=list, blank=True)
    note = models.CharField(max_length=500, blank=True, default="")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="block_versions",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["block_id", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["block", "number"], name="blockversion_unique_number")
        ]

    def __str__(self) -> str:
        return f"{self.block.name}@{self.number}"

    @property
    def ref(self) -> str:
        """How a spec names this version: `Name@number`."""
        return f"{self.block.name}@{self.number}"
