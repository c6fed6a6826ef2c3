"""Graph and GraphRevision: every save of a spec is a new immutable, numbered revision."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models


class Graph(models.Model):
    """A named network design owned by a team; its content lives in its revisions."""

    team = models.ForeignKey("accounts.Team", on_delete=models.CASCADE, related_name="graphs")
    name = models.CharField(max_length=200)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="graphs",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at", "-id"]

    def __str__(self) -> str:
        return self.name


class GraphRevision(models.Model):
    """One saved spec of a graph, numbered 1, 2, 3 ...; only its canvas layout may change later.

    `valid` and `error_count` record the engine's verdict at save time, so drafts can be saved
    and the list shows which revisions can be trained.
    """

    graph = models.ForeignKey(Graph, on_delete=models.CASCADE, related_name="revisions")
    number = models.PositiveIntegerField()
    spec = models.JSONField()
    spec_hash = models.CharField(max_length=64, db_index=True)
    valid = models.BooleanField(default=False)
    error_count = models.PositiveIntegerField(default=0)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="graph_revisions",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    layout_updated_at = models.DateTimeField(null=True, blank=True)
    # "" for a revision someone saved; else what made it (a sweep's architecture variant:
    # "sweep 3 trial 5"). Such revisions are numbered like the others but never the graph's
    # latest: the editor opens, and new saves follow, the latest revision a person saved.
    origin = models.CharField(max_length=100, blank=True, default="")
    # {node id: its params} of the spec, filled when the revision is made (the spec never changes
    # after): what the runs list's filter and ordering read as nodes.<id>.<param>.
    node_params = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["graph_id", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["graph", "number"], name="graphrevision_unique_number")
        ]

    def __str__(self) -> str:
        return f"{self.graph} r{self.number}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        """Save; a new revision records its spec's node parameters (node_params)."""
        if self._state.adding and not self.node_params:
            self.node_params = spec_node_params(self.spec)
        super().save(*args, **kwargs)


def spec_node_params(spec: Any) -> dict[str, dict[str, Any]]:
    """{node id: params} of a spec's nodes (a node without params: {}); {} for what is not a spec."""
    nodes = spec.get("nodes") if isinstance(spec, dict) else None
    found: dict[str, dict[str, Any]] = {}
    for node in nodes if isinstance(nodes, list) else []:
        if isinstance(node, dict) and isinstance(node.get("id"), str):
            params = node.get("params")
            found[node["id"]] = params if isinstance(params, dict) else {}
    return found


class GraphCollabDoc(models.Model):
    """The shared (Yjs) document of a graph's canvas: a snapshot plus the updates since it.

    The row exists once the room was seeded (from the latest revision, exactly once: the graph is
    unique here). `snapshot` is one merged Yjs update; `base_revision` is the revision number the
    document was seeded from (null: an empty graph). docs/subsystems/coediting.md.
    """

    graph = models.OneToOneField(Graph, on_delete=models.CASCADE, related_name="collab_doc")
    snapshot = models.BinaryField(default=b"")
    base_revision = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    compacted_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.graph} shared doc"


class GraphCollabUpdate(models.Model):
    """One accepted Yjs update of a graph's shared document, in arrival order (the id)."""

    doc = models.ForeignKey(GraphCollabDoc, on_delete=models.CASCADE, related_name="updates")
    data = models.BinaryField()
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["doc_id", "id"]

    def __str__(self) -> str:
        return f"{self.doc_id} update {self.pk}"
