"""scheduler.warmup_steps: a linear warm-up before (and composed with) every schedule."""

from __future__ import annotations

import pytest
import torch
from conftest import mlp_spec

from engine.train import CallbackBase, ListSink, TrainConfig, train
from engine.train.schedule import Schedule


def rates(scheduler: dict, steps: int = 10, epoch_every: int = 3) -> list[float]:
    param = torch.nn.Parameter(torch.zeros(2))
    optimizer = torch.optim.SGD([param], lr=0.1)
    cfg = TrainConfig.model_validate({"scheduler": scheduler, "optimizer": {"name": "sgd", "lr": 0.1}})
    schedule, seen = Schedule(optimizer, cfg, steps), []
    for i in range(steps):
        seen.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        if schedule.step_after_batch is not None:
            schedule.step_after_batch()
        if i % epoch_every == epoch_every - 1:
            schedule.after_epoch({"val/loss": 1.0})
    return seen


def test_warm_up_alone_rises_linearly_to_the_rate_and_stays():
    assert rates({"name": "none", "warmup_steps": 4}) == pytest.approx([0.02, 0.04, 0.06, 0.08] + [0.1] * 6)


def test_cosine_starts_after_the_warm_up_over_the_remaining_steps():
    seen = rates({"name": "cosine", "warmup_steps": 4})
    assert seen[:5] == pytest.approx([0.02, 0.04, 0.06, 0.08, 0.1])
    assert seen[5:] == pytest.approx([0.05 * (1 + torch.cos(torch.tensor(torch.pi * i / 6)).item()) for i in range(1, 6)])


def test_a_per_epoch_schedule_composes_with_the_warm_up():
    # step: halves after every 3 steps (an "epoch"); warm-up factor x schedule factor.
    seen = rates({"name": "step", "step_size": 1, "gamma": 0.5, "warmup_steps": 4})
    assert seen == pytest.approx([0.02, 0.04, 0.06, 0.04, 0.05, 0.05, 0.025, 0.025, 0.025, 0.0125])


def test_training_logs_the_warm_up_and_resumes_inside_it_exactly(digits, tmp_path):
    spec = mlp_spec([1, 8, 8], 10)
    cfg = {"epochs": 2, "log_every": 1, "optimizer": {"lr": 0.01},
           "scheduler": {"name": "step", "step_size": 1, "gamma": 0.5, "warmup_steps": 50}}
    sink = ListSink()
    full = train(spec, digits, cfg, sink=sink)
    lrs = dict(sink.series("lr"))
    assert lrs[1] == pytest.approx(0.01 * 2 / 51) and lrs[39] == pytest.approx(0.01 * 40 / 51)
    assert lrs[41] == pytest.approx(0.005 * 42 / 51) and lrs[50] == pytest.approx(0.005)
    seen: list[int] = []

    class Count(CallbackBase):
        def on_train_batch_end(self, state, loss):
            seen.append(state.step)

    cut = train(spec, digits, cfg, out_dir=tmp_path, callbacks=[Count()], should_stop=lambda: len(seen) >= 45)
    assert cut.status == "cancelled" and cut.steps == 45
    resumed_sink = ListSink()
    resumed = train(spec, digits, cfg, out_dir=tmp_path, resume_from=tmp_path, sink=resumed_sink)
    for key, value in full.model.state_dict().items():
        assert torch.equal(resumed.model.state_dict()[key], value), key
    assert dict(resumed_sink.series("lr")) == {s: v for s, v in lrs.items() if s > 45}
