"""A run's trained model, a checkpoint's, and the data description they were exported with."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..models import Run
from ..selectors import run_checkpoint_row, run_data_recipe, run_export_dir


def run_checkpoint_model(*, run: Run, name: str) -> Any:
    """The run's graph built with checkpoint `name`'s weights (eval mode)."""
    from safetensors.torch import load_file

    from engine.build import build

    row = run_checkpoint_row(run=run, name=name)
    model = build(run.graph_revision.spec, seed=0)
    model.load_state_dict(load_file(Path(row.path) / "model.safetensors", device="cpu"))
    return model.eval()


def run_trained_model(*, run: Run) -> Any:
    """The model of a succeeded run (eval mode), rebuilt from its export folder."""
    from engine.export import load_exported

    _, model = load_exported(run_export_dir(run))
    model.eval()
    return model


def run_export_data_info(*, run: Run) -> Any:
    """The DatasetInfo the export was made with (data.json), or the dataset's, reloaded."""
    import json

    from engine.data import DatasetInfo, load_dataset

    data_json = run_export_dir(run) / "data.json"
    if data_json.is_file():
        try:
            return DatasetInfo.from_json(json.loads(data_json.read_text()))
        except (TypeError, ValueError):
            pass
    return load_dataset(run_data_recipe(run)).info
