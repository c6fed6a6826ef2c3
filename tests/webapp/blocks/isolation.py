"""Team-A objects for tests/webapp/test_isolation.py's {block} and {block_version} placeholders."""

from __future__ import annotations

from typing import Any


def objects(*, team: Any, user: Any, dataset: Any, revision: Any) -> dict[str, Any]:
    """A block of team A with one version (written directly: no engine check needed here)."""
    from webapp.blocks.models import Block, BlockVersion

    block = Block.objects.create(
        team=team, name="secret_a_block", description="secret-a", created_by=user
    )
    BlockVersion.objects.create(
        block=block,
        number=1,
        created_by=user,
        definition={
            "name": "secret_a_block",
            "version": 1,
            "params": [],
            "inputs": [{"id": "x"}],
            "nodes": [{"id": "act", "op": "ReLU", "params": {}, "inputs": ["x"]}],
            "outputs": ["act"],
            "description": "secret-a",
            "layout": {},
            "ui": {},
        },
    )
    return {"block": block.pk, "block_version": 1}
