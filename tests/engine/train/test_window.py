"""The metric window: mean loss, accuracy and samples/s per window; a NaN named by its step."""

from __future__ import annotations

import math

import pytest
import torch

from engine.train import TrainingError
from engine.train.window import MetricWindow

CPU = torch.device("cpu")


def logits_for(classes: list[int], n: int = 3) -> torch.Tensor:
    out = torch.zeros(len(classes), n)
    out[torch.arange(len(classes)), torch.tensor(classes)] = 1.0
    return out


def test_a_window_gives_mean_loss_accuracy_and_rate():
    window = MetricWindow(device=CPU, count_correct=True, first_step=0)
    assert window.flush(0, 0.1) is None  # nothing added yet
    window.add(torch.tensor(1.0), logits_for([0, 1]), torch.tensor([0, 2]), 2)  # 1 of 2 right
    window.add(torch.tensor(3.0), logits_for([2, 2]), torch.tensor([2, 2]), 2)  # 2 of 2 right
    values = window.flush(2, 0.1)
    assert values["train/loss"] == 2.0 and values["lr"] == 0.1
    assert values["train/accuracy"] == 0.75
    assert values["samples_per_s"] > 0
    assert window.flush(2, 0.1) is None  # emptied


def test_regression_windows_have_no_accuracy():
    window = MetricWindow(device=CPU, count_correct=False, first_step=0)
    window.add(torch.tensor(0.5), torch.zeros(4, 1), torch.zeros(4, 1), 4)
    assert set(window.flush(1, 0.01)) == {"train/loss", "lr", "samples_per_s"}


@pytest.mark.parametrize(("bad", "kind"), [(math.nan, "NaN"), (math.inf, "infinite")])
def test_a_loss_that_is_not_finite_is_named_by_its_step(bad, kind):
    window = MetricWindow(device=CPU, count_correct=False, first_step=0)
    for _ in range(10):
        window.add(torch.tensor(1.0), torch.zeros(1, 1), torch.zeros(1, 1), 1)
    window.flush(10, 0.1)  # steps 1..10 are fine; the next window starts after step 10
    window.add(torch.tensor(1.0), torch.zeros(1, 1), torch.zeros(1, 1), 1)
    window.add(torch.tensor(bad), torch.zeros(1, 1), torch.zeros(1, 1), 1)
    with pytest.raises(TrainingError, match=f"loss is {kind} at step 12; stopping") as err:
        window.flush(12, 0.1)
    assert err.value.step == 12


def test_a_long_window_counts_its_hits_early_and_gives_the_same_accuracy():
    torch.manual_seed(0)
    batches = [(torch.randn(4096, 600), torch.randint(0, 600, (4096,))) for _ in range(3)]
    long, short = (MetricWindow(device=CPU, count_correct=True, first_step=0) for _ in range(2))
    for out, target in batches:  # 2.4M logits per batch: the second batch folds the first
        long.add(torch.tensor(1.0), out, target, len(target))
    expected = sum(int((out.argmax(1) == target).sum()) for out, target in batches) / (3 * 4096)
    assert long.flush(3, 0.1)["train/accuracy"] == pytest.approx(expected)
    out, target = batches[0]
    short.add(torch.tensor(1.0), out, target, len(target))
    assert short.flush(1, 0.1)["train/accuracy"] == pytest.approx(
        int((out.argmax(1) == target).sum()) / 4096
    )
