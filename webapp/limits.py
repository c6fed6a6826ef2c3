"""The engine's validation limits with this service's settings: the one place graphs and blocks read them."""

from __future__ import annotations

from typing import Any

from django.conf import settings


def engine_limits() -> Any:
    """The engine's validation Limits with this service's settings (NETLOOM_MAX_NODES, ...)."""
    from engine.validate import Limits

    return Limits(
        max_nodes=settings.NETLOOM_MAX_NODES,
        max_params=settings.NETLOOM_MAX_PARAMS,
        max_activation_bytes=settings.NETLOOM_MAX_ACTIVATION_BYTES,
        max_spec_bytes=settings.NETLOOM_MAX_SPEC_BYTES,
    )
