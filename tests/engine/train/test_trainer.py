"""The training loop as a user of train() sees it: results, metrics, stop, errors."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from conftest import cnn_spec, mlp_spec

from engine.train import CallbackBase, ListSink, TrainingError, train


class Recorder(CallbackBase):
    def __init__(self) -> None:
        self.calls: list[str] = []
        self.losses: list[tuple[int, float | None]] = []
        self.checkpoints: list[Path] = []

    def on_train_start(self, state):
        self.calls.append("start")

    def on_train_batch_end(self, state, loss):
        self.losses.append((state.step, loss))

    def on_validation_end(self, state, metrics):
        self.calls.append(f"val:{state.epoch}")

    def on_checkpoint(self, state, path):
        self.checkpoints.append(path)

    def on_train_end(self, state, result):
        self.calls.append(f"end:{result.status}")


def test_train_reports_named_metrics_to_sink_and_result(digits, tmp_path):
    sink, rec = ListSink(), Recorder()
    result = train(
        mlp_spec([1, 8, 8], 10), digits, {"epochs": 2, "log_every": 5}, out_dir=tmp_path,
        sink=sink, callbacks=[rec],
    )
    assert result.status == "succeeded"
    assert result.epochs == 2 and result.steps == 2 * 40  # 1257 rows / 32
    keys = {k for _, _, values in sink.points for k in values}
    assert {"train/loss", "train/accuracy", "lr", "samples_per_s"} <= keys
    assert {"val/loss", "val/accuracy", "val/f1", "test/loss", "test/accuracy", "test/f1"} <= keys
    matrix = result.metrics["test/confusion_matrix"]
    assert len(matrix) == 10 and all(len(row) == 10 for row in matrix)
    assert sum(map(sum, matrix)) == len(digits.test)
    assert rec.calls == ["start", "val:1", "val:2", "end:succeeded"]
    # The loss reaches Python only every log_every steps (and at the epoch's end).
    synced = [step for step, loss in rec.losses if loss is not None]
    assert synced == [s for s in range(5, 81, 5)]
    assert result.best_checkpoint is not None and (result.best_checkpoint / "model.safetensors").is_file()
    assert (tmp_path / "checkpoints" / "epoch-0002" / "state.json").is_file()
    # Epoch fractions go up with the steps.
    train_points = [(s, e) for s, e, v in sink.points if "train/loss" in v]
    assert train_points[0] == (5, 5 / 40)


def test_regression_reports_mae_rmse_r2(diabetes):
    result = train(mlp_spec([10], 1), diabetes, {"epochs": 2, "optimizer": {"lr": 0.05}})
    assert result.task == "regression"
    for key in ("val/mae", "val/rmse", "val/r2", "test/mae", "test/rmse", "test/r2"):
        assert isinstance(result.metrics[key], float), key
    assert "test/accuracy" not in result.metrics


def test_should_stop_cancels_within_one_step(digits, tmp_path):
    steps_seen = []

    class Count(CallbackBase):
        def on_train_batch_end(self, state, loss):
            steps_seen.append(state.step)

    result = train(
        mlp_spec([1, 8, 8], 10), digits, {"epochs": 5}, out_dir=tmp_path,
        callbacks=[Count()], should_stop=lambda: len(steps_seen) >= 13,
    )
    assert result.status == "cancelled"
    assert result.steps == 13 and steps_seen[-1] == 13
    assert result.last_checkpoint is not None and result.last_checkpoint.name == "step-0000013"
    assert "test/accuracy" not in result.metrics


def test_should_stop_before_the_first_step_trains_nothing(digits):
    result = train(mlp_spec([1, 8, 8], 10), digits, {"epochs": 1}, should_stop=lambda: True)
    assert result.status == "cancelled" and result.steps == 0


class NaNAfter(torch.nn.Module):
    """Gives NaN outputs from the n-th training forward on (a model that breaks)."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(64, 10)
        self.n, self.calls = n, 0

    def forward(self, x):
        out = self.fc(x.flatten(1))
        if self.training:
            self.calls += 1
            if self.calls >= self.n:
                out = out * float("nan")
        return out


def test_nan_loss_error_names_the_step(digits):
    rec = Recorder()
    with pytest.raises(TrainingError, match=r"^loss is NaN at step 17; stopping$") as info:
        train(None, digits, {"epochs": 3, "log_every": 10}, model=NaNAfter(17), callbacks=[rec])
    assert info.value.step == 17


def test_exceptions_reach_on_exception_hook(digits):
    seen = []

    class Hook(CallbackBase):
        def on_exception(self, state, exc):
            seen.append((state.step, str(exc)))

    with pytest.raises(TrainingError):
        train(None, digits, {"epochs": 1, "log_every": 4}, model=NaNAfter(3), callbacks=[Hook()])
    assert seen == [(4, "loss is NaN at step 3; stopping")]


class OOMAt(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(64, 10)

    def forward(self, x):
        if self.training:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return self.fc(x.flatten(1))


def test_out_of_memory_error_names_the_batch_size(digits):
    with pytest.raises(TrainingError, match="out of memory on cpu at batch size 48") as info:
        train(None, digits, {"epochs": 1, "batch_size": 48}, model=OOMAt())
    assert info.value.field == "batch_size"


def test_early_stopping_stops_when_metric_stalls(digits, tmp_path):
    cfg = {"epochs": 10, "early_stopping": {"metric": "val/loss", "patience": 2, "min_delta": 100.0}}
    result = train(mlp_spec([1, 8, 8], 10), digits, cfg, out_dir=tmp_path)
    assert result.status == "stopped_early"
    assert result.epochs == 3  # best at 1, no real improvement at 2 and 3
    assert "test/accuracy" in result.metrics
    assert result.best_checkpoint == tmp_path / "checkpoints" / "best"


def test_unknown_early_stopping_metric_is_named(digits):
    cfg = {"epochs": 2, "early_stopping": {"metric": "val/r2", "mode": "max"}}
    with pytest.raises(TrainingError, match=r"early_stopping.metric 'val/r2' is not a validation metric; choose one of .*val/accuracy"):
        train(mlp_spec([1, 8, 8], 10), digits, cfg)


def test_wrong_output_size_is_explained(digits):
    with pytest.raises(TrainingError, match="10 classes but the model outputs 7"):
        train(mlp_spec([1, 8, 8], 7), digits, {"epochs": 1})


def test_fp16_on_cpu_is_a_clear_error(digits):
    with pytest.raises(TrainingError, match="fp16' needs a CUDA device") as info:
        train(mlp_spec([1, 8, 8], 10), digits, {"epochs": 1, "precision": "fp16", "device": "cpu"})
    assert info.value.field == "precision"


def test_bf16_autocast_trains_on_cpu(digits):
    result = train(mlp_spec([1, 8, 8], 10), digits, {"epochs": 1, "precision": "bf16", "device": "cpu"})
    assert result.status == "succeeded" and result.metrics["test/accuracy"] > 0.5


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-CUDA message")
def test_missing_cuda_device_is_a_clear_error(digits):
    with pytest.raises(TrainingError, match="device 'cuda:1' asked for, but CUDA is not available"):
        train(mlp_spec([1, 8, 8], 10), digits, {"epochs": 1, "device": "cuda:1"})


@pytest.mark.parametrize(
    "extra",
    [
        {"optimizer": {"name": "sgd", "lr": 0.05, "momentum": 0.9, "nesterov": True}, "scheduler": {"name": "step", "step_size": 1}},
        {"optimizer": {"name": "adamw", "weight_decay": 0.01}, "scheduler": {"name": "cosine"}},
        {"optimizer": {"name": "rmsprop", "lr": 1e-3}, "scheduler": {"name": "plateau", "patience": 0}},
        {"optimizer": {"name": "adam", "lr": 1e-3}, "scheduler": {"name": "onecycle", "max_lr": 0.01}, "grad_clip": 1.0},
    ],
    ids=["sgd-step", "adamw-cosine", "rmsprop-plateau", "adam-onecycle-clip"],
)
def test_every_optimizer_and_schedule_learns(digits, extra):
    result = train(mlp_spec([1, 8, 8], 10), digits, {"epochs": 2, **extra})
    assert result.metrics["test/accuracy"] > 0.6, extra


def test_max_steps_ends_the_run(digits):
    result = train(mlp_spec([1, 8, 8], 10), digits, {"epochs": 5, "max_steps": 7})
    assert result.status == "succeeded" and result.steps == 7


def test_cnn_with_batchnorm_and_augmentation_trains(digits_augmented):
    result = train(cnn_spec(), digits_augmented, {"epochs": 3, "optimizer": {"lr": 0.01}})
    assert result.metrics["test/accuracy"] > 0.85


@pytest.mark.slow
def test_torch_compile_trains(digits):
    result = train(mlp_spec([1, 8, 8], 10), digits, {"epochs": 1, "compile": True})
    assert result.status == "succeeded" and result.metrics["test/accuracy"] > 0.5
    # The compiled wrapper never leaks into parameter names.
    assert set(result.model.state_dict()) == {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("precision", ["fp32", "bf16", "fp16"])
def test_cuda_training_in_every_precision(digits, precision):
    result = train(cnn_spec(), digits, {"epochs": 2, "device": "cuda", "precision": precision, "optimizer": {"lr": 0.01}})
    assert result.metrics["test/accuracy"] > 0.8
    assert next(result.model.parameters()).device.type == "cuda"


def test_progress_bar_shows_epoch_loss_and_validation(digits):
    import io

    from engine.train import TqdmProgress

    buf = io.StringIO()
    train(mlp_spec([1, 8, 8], 10), digits, {"epochs": 2}, callbacks=[TqdmProgress(file=buf)])
    text = buf.getvalue()
    assert "epoch 2/2" in text and "80/80" in text
    assert "loss=" in text and "val/accuracy=" in text and "samples/s=" in text
