"""Before the first step: sizes of a run, the model built from the seed, the data checked."""

from __future__ import annotations

import pytest
import torch
from conftest import mlp_spec

from engine.data import TensorSet
from engine.train import TrainConfig, TrainingError
from engine.train.precision import Precision
from engine.train.setup import RunSize, prepare_model, probe_task

CPU = torch.device("cpu")


class Splits:
    def __init__(self, n: int) -> None:
        self.train = TensorSet(torch.randn(n, 4), torch.randint(0, 3, (n,)))
        self.info = None


def test_run_size_counts_steps_and_caps_them_at_max_steps():
    size = RunSize.of(Splits(100), TrainConfig.model_validate({"epochs": 3, "batch_size": 32}))
    assert (size.steps_per_epoch, size.total_steps, size.eval_batch_size) == (4, 12, 256)
    capped = RunSize.of(Splits(100), TrainConfig.model_validate({"epochs": 3, "max_steps": 5}))
    assert capped.total_steps == 5


def test_an_empty_training_split_is_refused():
    with pytest.raises(TrainingError, match="the training split is empty"):
        RunSize.of(Splits(0), TrainConfig())


def test_the_model_is_built_from_the_seed_and_the_global_rng_starts_from_it():
    _, first = prepare_model(mlp_spec([4], 3), None, 5, CPU)
    drawn = torch.rand(3)
    _, again = prepare_model(mlp_spec([4], 3), None, 5, CPU)
    assert torch.equal(torch.rand(3), drawn)
    for a, b in zip(first.parameters(), again.parameters(), strict=True):
        assert torch.equal(a, b)


def test_the_probe_decides_the_task_and_checks_the_input_shape():
    spec, model = prepare_model(mlp_spec([4], 3), None, 0, CPU)
    task, first_y = probe_task(spec, model, Splits(10), TrainConfig(), Precision.for_device("fp32", CPU), CPU)
    assert (task.kind, task.num_outputs) == ("multiclass", 3) and first_y.dtype == torch.int64
    wrong, model5 = prepare_model(mlp_spec([5], 3), None, 0, CPU)
    with pytest.raises(TrainingError, match=r"samples of shape \[4\] but the graph input 'x' is \[5\]"):
        probe_task(wrong, model5, Splits(10), TrainConfig(), Precision.for_device("fp32", CPU), CPU)
