"""Gradient accumulation: k micro-batches per optimizer step, steps counted as optimizer steps."""

from __future__ import annotations

import math

import torch
from conftest import mlp_spec

from engine.train import CallbackBase, ListSink, train

SGD = {"optimizer": {"name": "sgd", "lr": 0.1, "momentum": 0.0}, "seed": 5}


class Sizes(CallbackBase):
    def on_train_start(self, state):
        self.steps_per_epoch, self.total_steps = state.steps_per_epoch, state.total_steps


def test_accumulated_micro_batches_step_like_one_big_batch(digits):
    # 1257 training rows = 419 micro-batches of 3; 4 of them are one batch of 12, and the
    # epoch's last step takes the 3 micro-batches left (the last batch of 12 has 9 rows).
    spec = mlp_spec([1, 8, 8], 10)
    sizes = Sizes()
    small = train(spec, digits, {**SGD, "epochs": 1, "batch_size": 3, "grad_accumulation": 4},
                  callbacks=[sizes])
    big = train(spec, digits, {**SGD, "epochs": 1, "batch_size": 12})
    assert small.steps == big.steps == math.ceil(419 / 4) == 105
    assert sizes.steps_per_epoch == 105 and sizes.total_steps == 105
    for key, value in big.model.state_dict().items():
        torch.testing.assert_close(small.model.state_dict()[key], value, rtol=1e-4, atol=1e-5)
    assert abs(small.metrics["train/loss"] - big.metrics["train/loss"]) < 1e-4


def test_a_trailing_remainder_steps_and_every_count_is_in_optimizer_steps(digits):
    # 40 micro-batches of 32 per epoch in steps of 3: 13 full steps and one of a single batch.
    sink, sizes = ListSink(), Sizes()
    cfg = {"epochs": 2, "grad_accumulation": 3, "log_every": 7, "max_steps": 100}
    result = train(mlp_spec([1, 8, 8], 10), digits, cfg, sink=sink, callbacks=[sizes])
    assert sizes.steps_per_epoch == 14 and result.steps == 28 and result.epochs == 2
    train_steps = [step for step, _, values in sink.points if "train/loss" in values]
    assert train_steps == [7, 14, 21, 28]
    val_points = [(step, epoch) for step, epoch, values in sink.points if "val/loss" in values]
    assert val_points == [(14, 1.0), (28, 2.0)]
    assert train(mlp_spec([1, 8, 8], 10), digits, {**cfg, "max_steps": 5}).steps == 5


def test_an_interrupted_accumulating_run_resumes_exactly(digits, tmp_path):
    spec = mlp_spec([1, 8, 8], 10, dropout=0.3)
    cfg = {"epochs": 2, "grad_accumulation": 3, "seed": 2, "optimizer": {"name": "adamw", "lr": 0.01},
           "scheduler": {"name": "cosine", "warmup_steps": 4}}
    full = train(spec, digits, cfg)
    steps: list[int] = []

    class Count(CallbackBase):
        def on_train_batch_end(self, state, loss):
            steps.append(state.step)

    cut = train(spec, digits, cfg, out_dir=tmp_path, callbacks=[Count()], should_stop=lambda: len(steps) >= 17)
    assert cut.status == "cancelled" and cut.steps == 17  # mid second epoch
    resumed = train(spec, digits, cfg, out_dir=tmp_path, resume_from=tmp_path)
    assert resumed.steps == full.steps == 28
    for key, value in full.model.state_dict().items():
        assert torch.equal(resumed.model.state_dict()[key], value), key
    assert resumed.metrics["test/accuracy"] == full.metrics["test/accuracy"]
