"""The LR schedule steps per batch (cosine, one-cycle) or per epoch (step, plateau)."""

from __future__ import annotations

import pytest
import torch

from engine.train import TrainConfig, TrainingError
from engine.train.schedule import Schedule


def schedule_for(scheduler: dict, total_steps: int = 100) -> tuple[Schedule, torch.optim.Optimizer]:
    param = torch.nn.Parameter(torch.zeros(2))
    optimizer = torch.optim.SGD([param], lr=0.1)
    cfg = TrainConfig.model_validate({"scheduler": scheduler, "optimizer": {"name": "sgd", "lr": 0.1}})
    return Schedule(optimizer, cfg, total_steps), optimizer


def lr(optimizer: torch.optim.Optimizer) -> float:
    return optimizer.param_groups[0]["lr"]


@pytest.mark.parametrize("name", ["cosine", "onecycle"])
def test_per_step_schedules_step_after_each_batch_only(name):
    schedule, optimizer = schedule_for({"name": name})
    assert schedule.step_after_batch is not None
    start = lr(optimizer)
    optimizer.step()
    schedule.step_after_batch()
    moved = lr(optimizer)
    assert moved != start
    schedule.after_epoch({"val/loss": 1.0})
    assert lr(optimizer) == moved


def test_step_schedule_steps_per_epoch():
    schedule, optimizer = schedule_for({"name": "step", "step_size": 2, "gamma": 0.5})
    assert schedule.step_after_batch is None
    for _ in range(2):
        optimizer.step()
        schedule.after_epoch({})
    assert lr(optimizer) == pytest.approx(0.05)


def test_plateau_reads_its_metric_and_names_a_missing_one():
    schedule, optimizer = schedule_for({"name": "plateau", "patience": 0, "factor": 0.5})
    schedule.after_epoch({"val/loss": 1.0})
    schedule.after_epoch({"val/loss": 2.0})
    assert lr(optimizer) == pytest.approx(0.05)
    schedule.after_epoch({})  # no validation pass: nothing to read
    with pytest.raises(TrainingError, match="scheduler.metric 'val/loss' is not a validation metric") as err:
        schedule.after_epoch({"val/accuracy": 0.5})
    assert err.value.field == "scheduler.metric"


def test_no_schedule_keeps_the_rate_and_has_no_state():
    schedule, optimizer = schedule_for({"name": "none"})
    schedule.after_epoch({"val/loss": 1.0})
    assert schedule.step_after_batch is None and schedule.state_dict() is None
    assert lr(optimizer) == 0.1


def test_state_round_trips_with_the_optimizer_state():
    """As in a checkpoint: the optimizer holds the current rate, the scheduler its counters."""
    schedule, optimizer = schedule_for({"name": "cosine"})
    for _ in range(7):
        optimizer.step()
        schedule.step_after_batch()
    again, optimizer2 = schedule_for({"name": "cosine"})
    optimizer2.load_state_dict(optimizer.state_dict())
    again.load_state_dict(schedule.state_dict())
    optimizer.step()
    schedule.step_after_batch()
    optimizer2.step()
    again.step_after_batch()
    assert again.scheduler.get_last_lr() == schedule.scheduler.get_last_lr()
