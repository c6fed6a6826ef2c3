"""Checkpoints: safetensors + JSON only, atomic, and an exact resume on CPU."""

from __future__ import annotations

import json

import pytest
import torch
from conftest import cnn_spec, mlp_spec
from safetensors.torch import load_file

from engine.train import CallbackBase, load_checkpoint, train
from engine.train.checkpoint import latest_checkpoint, save_checkpoint


def assert_same_weights(a: torch.nn.Module, b: torch.nn.Module) -> None:
    sa, sb = a.state_dict(), b.state_dict()
    assert sa.keys() == sb.keys()
    for key in sa:
        assert torch.equal(sa[key], sb[key]), f"{key} differs"


RESUME_CONFIG = {
    "epochs": 4,
    "batch_size": 64,
    "checkpoint_every": 1,
    "keep_checkpoints": 10,
    "seed": 7,
    "optimizer": {"name": "adam", "lr": 0.005},
    "scheduler": {"name": "onecycle"},
}


def test_resume_from_epoch_checkpoint_gives_exactly_the_same_weights(digits_augmented, tmp_path):
    spec = cnn_spec()  # dropout, batchnorm, augmentation: every RNG and buffer matters
    full = train(spec, digits_augmented, RESUME_CONFIG, out_dir=tmp_path / "full")
    epoch2 = tmp_path / "full" / "checkpoints" / "epoch-0002"
    resumed = train(spec, digits_augmented, RESUME_CONFIG, out_dir=tmp_path / "resumed", resume_from=epoch2)
    assert resumed.status == "succeeded" and resumed.steps == full.steps and resumed.epochs == 4
    assert_same_weights(full.model, resumed.model)
    assert resumed.metrics["test/accuracy"] == full.metrics["test/accuracy"]


def test_resume_after_cancel_mid_epoch_gives_exactly_the_same_weights(digits_augmented, tmp_path):
    spec = cnn_spec()
    full = train(spec, digits_augmented, RESUME_CONFIG)
    steps = []

    class Count(CallbackBase):
        def on_train_batch_end(self, state, loss):
            steps.append(state.step)

    run = tmp_path / "run"
    cancelled = train(spec, digits_augmented, RESUME_CONFIG, out_dir=run, callbacks=[Count()],
                      should_stop=lambda: len(steps) >= 27)  # 20 steps an epoch: mid-epoch 2
    assert cancelled.status == "cancelled" and cancelled.steps == 27
    # Resuming from the run directory picks its latest checkpoint.
    assert latest_checkpoint(run / "checkpoints") == run / "checkpoints" / "step-0000027"
    resumed = train(spec, digits_augmented, RESUME_CONFIG, out_dir=run, resume_from=run)
    assert resumed.steps == full.steps
    assert_same_weights(full.model, resumed.model)


def test_checkpoint_directory_holds_safetensors_and_json_only(digits, tmp_path):
    train(mlp_spec([1, 8, 8], 10, dropout=0.1), digits,
          {"epochs": 1, "optimizer": {"name": "sgd", "lr": 0.1, "momentum": 0.9}}, out_dir=tmp_path)
    ck = tmp_path / "checkpoints" / "epoch-0001"
    assert sorted(p.name for p in ck.iterdir()) == [
        "model.safetensors", "optimizer.safetensors", "rng.safetensors", "state.json"
    ]
    state = json.loads((ck / "state.json").read_text())
    assert state["epoch"] == 1 and state["step"] == 40
    assert state["config"]["optimizer"]["name"] == "sgd"
    assert [n["id"] for n in state["spec"]["nodes"]] == ["flat", "fc1", "act", "drop", "fc2"]
    assert set(load_file(ck / "model.safetensors")) == {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}
    rng = load_file(ck / "rng.safetensors")
    assert rng["torch_cpu"].dtype == torch.uint8 and rng["shuffle_generator"].dtype == torch.uint8
    opt = load_file(ck / "optimizer.safetensors")
    assert "optimizer/state/0/momentum_buffer" in opt
    # No temporary directories are left behind by the atomic writes.
    assert not [p for p in (tmp_path / "checkpoints").iterdir() if p.name.startswith(".")]


def test_old_epoch_checkpoints_are_pruned(digits, tmp_path):
    train(mlp_spec([1, 8, 8], 10), digits, {"epochs": 4, "keep_checkpoints": 2}, out_dir=tmp_path)
    names = sorted(p.name for p in (tmp_path / "checkpoints").iterdir())
    assert names == ["best", "epoch-0003", "epoch-0004"]


@pytest.mark.parametrize("name", ["sgd", "adam", "adamw", "rmsprop"])
def test_optimizer_state_round_trips_exactly(tmp_path, name):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8), torch.nn.Linear(8, 2))
    opt_cls = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam, "adamw": torch.optim.AdamW,
               "rmsprop": torch.optim.RMSprop}[name]
    kwargs = {"momentum": 0.9} if name in ("sgd", "rmsprop") else {}
    opt = opt_cls(model.parameters(), lr=0.01, **kwargs)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    for _ in range(3):
        opt.zero_grad()
        model(torch.randn(16, 4)).pow(2).mean().backward()
        opt.step()
        sched.step()
    path = save_checkpoint(tmp_path / "ck", model=model, optimizer=opt, scheduler=sched,
                           state={"epoch": 3, "step": 3})
    ck = load_checkpoint(path)
    fresh_opt = opt_cls(model.parameters(), lr=0.01, **kwargs)
    fresh_opt.load_state_dict(ck.optimizer)
    want, got = opt.state_dict(), fresh_opt.state_dict()
    assert got["param_groups"] == want["param_groups"]
    for idx, entries in want["state"].items():
        for key, value in entries.items():
            if isinstance(value, torch.Tensor):
                assert torch.equal(got["state"][idx][key], value), (idx, key)
            else:
                assert got["state"][idx][key] == value
    assert ck.scheduler == sched.state_dict()
    for key, value in model.state_dict().items():
        assert torch.equal(ck.model[key], value)


def test_overwriting_a_checkpoint_replaces_it_whole(tmp_path):
    model = torch.nn.Linear(2, 2)
    save_checkpoint(tmp_path / "best", model=model, optimizer=None, state={"epoch": 1, "step": 10})
    save_checkpoint(tmp_path / "best", model=model, optimizer=None, state={"epoch": 2, "step": 20})
    assert load_checkpoint(tmp_path / "best").step == 20
    assert [p.name for p in tmp_path.iterdir()] == ["best"]


def test_loading_a_directory_that_is_not_a_checkpoint_says_so(tmp_path):
    with pytest.raises(FileNotFoundError, match="not a checkpoint: state.json is missing"):
        load_checkpoint(tmp_path)


def test_a_checkpoint_write_on_a_full_volume_leaves_nothing_and_says_enospc_naming_the_folder(tmp_path) -> None:
    """safetensors reports the kernel's ENOSPC as its own error type; engine.atomic makes it an OSError
    naming the destination, so the worker can tell a full volume from a broken run (workers/training.py)."""
    import errno
    import shutil
    import subprocess

    from engine.atomic import storage_full
    from engine.train.checkpoint import save_checkpoint

    volume = tmp_path / "small"
    volume.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(volume)], capture_output=True).returncode:
        pytest.skip("mounting a small tmpfs is not permitted here")
    try:
        model = torch.nn.Linear(1000, 1000)  # 4 MB of weights on a 1 MiB volume
        with pytest.raises(OSError) as raised:
            save_checkpoint(volume / "step-1", model=model, optimizer=None, state={"epoch": 0, "step": 1})
        assert raised.value.errno == errno.ENOSPC
        assert raised.value.filename == str(volume / "step-1")
        assert storage_full(raised.value) is raised.value
        assert list(volume.iterdir()) == []  # the half-written folder is gone
        assert shutil.disk_usage(volume).used < 64 * 1024
    finally:
        subprocess.run(["umount", "-l", str(volume)], check=False)


def test_storage_full_tells_a_full_volume_from_other_failures() -> None:
    import errno

    from engine.atomic import storage_full

    class LibraryError(Exception):
        pass

    assert storage_full(LibraryError("I/O error: No space left on device (os error 28)")).errno == errno.ENOSPC
    assert storage_full(RuntimeError("rank 0 failed: [Errno 122] Disk quota exceeded")).errno == errno.EDQUOT
    assert storage_full(OSError(errno.EACCES, "Permission denied")) is None
    assert storage_full(LibraryError("I/O error: Permission denied (os error 13)")) is None
    try:
        try:
            raise OSError(errno.ENOSPC, "No space left on device")
        except OSError as inner:
            raise RuntimeError("wrapped") from inner
    except RuntimeError as outer:
        assert storage_full(outer).errno == errno.ENOSPC
