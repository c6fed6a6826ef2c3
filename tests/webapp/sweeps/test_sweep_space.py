"""The search space's pieces: where a trial's values go, and the sampler's seeding."""

from __future__ import annotations

from typing import Any

import pytest

from webapp.errors import DomainError
from webapp.sweeps.space import space_dimensions, space_parse, trial_config, trial_spec


def test_a_trial_sets_config_paths_and_node_parameters_on_copies_of_the_base(valid_spec: dict[str, Any]) -> None:
    from webapp.runs.services import run_config_parse

    base = run_config_parse({"epochs": 3})
    space = {"optimizer.lr": {"type": "float", "low": 1e-4, "high": 0.1, "log": True},
             "early_stopping.patience": {"type": "int", "low": 1, "high": 4},
             "nodes.fc1.out_features": {"type": "categorical", "choices": [8, 64]}}
    dims = space_parse(space, strategy="random", spec=valid_spec, base_config=base)
    params = {"optimizer.lr": 0.01, "early_stopping.patience": 2, "nodes.fc1.out_features": 64}
    config = trial_config(base, dims, params)
    assert config["optimizer"]["lr"] == 0.01 and config["early_stopping"] == {"patience": 2}
    assert run_config_parse(config)["early_stopping"]["metric"] == "val/loss"
    spec = trial_spec(valid_spec, dims, params)
    assert spec["nodes"][0]["params"] == {"out_features": 64}
    assert valid_spec["nodes"][0]["params"] == {"out_features": 16} and base["optimizer"]["lr"] == 0.001


def test_the_space_is_read_in_key_order_with_its_grid_values() -> None:
    dims = space_dimensions({"b": {"type": "int", "low": 2, "high": 8, "step": 3},
                             "a": {"type": "categorical", "choices": ["x", None, True]}}, strategy="grid")
    assert [(d.key, d.values) for d in dims] == [("a", ("x", None, True)), ("b", (2, 5, 8))]
    with pytest.raises(DomainError) as caught:
        space_dimensions({"a": {"type": "int", "low": 1, "high": 10**9}}, strategy="grid")
    assert caught.value.field == "space.a"
    with pytest.raises(DomainError) as caught:
        space_dimensions({f"k{i}": {"type": "int", "low": 1, "high": 100} for i in range(4)}, strategy="grid")
    assert caught.value.field == "space" and "100000000 points" in caught.value.message


def test_random_trials_of_a_rebuilt_study_never_repeat_the_first_sample(
    api_a: Any, sweep_body: dict[str, Any], commits: Any
) -> None:
    body = {**sweep_body, "strategy": "random", "budget": 6, "parallelism": 6}
    with commits():
        first = api_a.post("/api/sweeps/", body, format="json").json()
    lrs = [t["params"]["optimizer.lr"] for t in first["trials"]]
    assert len(set(lrs)) == 6
    with commits():
        again = api_a.post("/api/sweeps/", body, format="json").json()
    assert [t["params"]["optimizer.lr"] for t in again["trials"]] == lrs, "the same seed asks the same trials"
