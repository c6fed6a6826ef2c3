"""Parameter groups: weight decay on weights only (nanoGPT's rule), and old runs resume as they began."""

from __future__ import annotations

import pytest
import torch
from conftest import cnn_spec, mlp_spec
from torch import nn

from engine.build import build
from engine.train import CallbackBase, TrainConfig, TrainingError, train
from engine.train.optim import make_optimizer, parameter_groups


def names_in(model: nn.Module, group: dict) -> set[str]:
    ids = {id(p) for p in group["params"]}
    return {name for name, p in model.named_parameters() if id(p) in ids}


def test_biases_and_norm_layers_are_not_decayed():
    model = build(cnn_spec(), seed=0)
    decay, no_decay = parameter_groups(model, 0.1)
    assert decay["weight_decay"] == 0.1 and no_decay["weight_decay"] == 0.0
    assert names_in(model, decay) == {"conv1.weight", "fc.weight"}
    assert names_in(model, no_decay) == {"conv1.bias", "bn1.weight", "bn1.bias", "fc.bias"}


def test_a_norm_layer_with_a_many_dimensional_weight_is_not_decayed():
    model = nn.Sequential(nn.Conv2d(1, 4, 3), nn.LayerNorm([4, 6, 6]), nn.Flatten(), nn.Linear(144, 2))
    decay, no_decay = parameter_groups(model, 0.01)
    assert model[1].weight.dim() == 3
    assert names_in(model, decay) == {"0.weight", "3.weight"}
    assert names_in(model, no_decay) == {"0.bias", "1.weight", "1.bias", "3.bias"}


def test_without_weight_decay_there_is_one_group_of_every_trainable_parameter():
    model = build(mlp_spec([4], 3), seed=0)
    model.fc1.bias.requires_grad_(False)
    (group,) = parameter_groups(model, 0.0)
    assert names_in(model, group) == {"fc1.weight", "fc2.weight", "fc2.bias"}


def test_a_model_without_trainable_parameters_is_refused():
    model = nn.Sequential(nn.Linear(2, 2)).requires_grad_(False)
    with pytest.raises(TrainingError, match="no trainable parameters"):
        parameter_groups(model, 0.1)


@pytest.mark.parametrize("name", ["sgd", "adam", "adamw", "rmsprop"])
def test_every_optimizer_decays_only_the_weights(name):
    """One step on zero gradients: decay alone moves weights; biases stay where they were."""
    model = build(mlp_spec([4], 3), seed=0)
    cfg = TrainConfig.model_validate({"optimizer": {"name": name, "lr": 1e-3, "weight_decay": 0.5}})
    optimizer = make_optimizer(model, cfg)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    for p in model.parameters():
        p.grad = torch.zeros_like(p)
    optimizer.step()
    after = model.state_dict()
    for key in ("fc1.bias", "fc2.bias"):
        assert torch.equal(after[key], before[key]), key
    for key in ("fc1.weight", "fc2.weight"):
        assert after[key].abs().sum() < before[key].abs().sum(), key


def test_decay_every_parameter_is_the_single_group_runs_had_before():
    model = build(mlp_spec([4], 3), seed=0)
    cfg = TrainConfig.model_validate({"optimizer": {"name": "adamw", "weight_decay": 0.2}})
    (group,) = make_optimizer(model, cfg, decay_every_parameter=True).param_groups
    assert group["weight_decay"] == 0.2 and len(group["params"]) == 4


def test_a_checkpoint_from_before_the_groups_resumes_with_its_single_group(digits, tmp_path):
    """Such a run goes on decaying everything, as it started, instead of failing to load."""
    cfg = {"epochs": 2, "batch_size": 128, "optimizer": {"name": "adamw", "weight_decay": 0.1}}
    spec = mlp_spec([1, 8, 8], 10)
    first = train(spec, digits, {**cfg, "epochs": 1}, out_dir=tmp_path / "run")
    # Rewrite the checkpoint's optimizer as one group, as the trainer before the groups wrote it.
    from engine.train.checkpoint import load_checkpoint, save_checkpoint

    ck = load_checkpoint(first.last_checkpoint)
    model = build(spec, seed=0)
    model.load_state_dict(ck.model)
    old = make_optimizer(model, TrainConfig.model_validate(cfg), decay_every_parameter=True)
    for p in model.parameters():
        p.grad = torch.zeros_like(p)
    old.step()
    save_checkpoint(first.last_checkpoint, model=model, optimizer=old,
                    generator_state=ck.rng["tensors"]["shuffle_generator"], state=ck.state)
    groups = []

    class Groups(CallbackBase):
        def on_train_start(self, state):
            groups.append(len(state.optimizer.param_groups))

    resumed = train(spec, digits, cfg, out_dir=tmp_path / "run", resume_from=tmp_path / "run",
                    callbacks=[Groups()])
    assert resumed.status == "succeeded" and resumed.epochs == 2
    assert groups == [1]
    fresh = []
    train(spec, digits, cfg, callbacks=[type("G", (CallbackBase,), {
        "on_train_start": lambda self, state: fresh.append(len(state.optimizer.param_groups))})()])
    assert fresh == [2]
