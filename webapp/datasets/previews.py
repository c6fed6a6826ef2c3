"""Dataset previews: the first rows of a table, or sample thumbnails (base64 PNG) of images."""

from __future__ import annotations

from typing import Any

from .models import Dataset


def dataset_preview(*, dataset: Dataset) -> dict[str, Any]:
    """The preview the engine made while summarising: {"kind": "table", "columns", "rows"} or
    {"kind": "images", "samples": [{"label", "png"}]} (png is base64)."""
    preview = dict(dataset.summary.get("preview") or {})
    preview.setdefault("kind", "table")
    return preview
