"""Fine-tuning from a checkpoint (init_from, freeze) and resuming a finished run for more epochs."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from conftest import mlp_spec
from safetensors.torch import load_file

from engine.build import build
from engine.train import CallbackBase, ListSink, TrainingError, train
from engine.train.finetune import apply_init, init_plan


def stack(*layers: tuple[str, int]) -> dict[str, Any]:
    """Flatten -> (Linear -> ReLU)* -> Linear fc2 (10 classes), hidden layers named as given."""
    nodes: list[dict[str, Any]] = [{"id": "flat", "op": "Flatten", "inputs": ["x"]}]
    last = "flat"
    for node, width in layers:
        nodes += [{"id": node, "op": "Linear", "params": {"out_features": width}, "inputs": [last]},
                  {"id": f"{node}_act", "op": "ReLU", "inputs": [node]}]
        last = f"{node}_act"
    nodes.append({"id": "fc2", "op": "Linear", "params": {"out_features": 10}, "inputs": [last]})
    return {"version": 1, "inputs": [{"id": "x", "shape": [1, 8, 8]}], "nodes": nodes, "outputs": ["fc2"]}


SOURCE = stack(("fc1", 32), ("mid", 32))
TARGET = stack(("fc1", 32), ("fc3", 16))  # mid removed, fc3 added: fc2's input width changes


def with_dropout(spec: dict[str, Any]) -> dict[str, Any]:
    """The same layers with a Dropout before the head: a changed graph whose tensors all match."""
    nodes = [dict(n) for n in spec["nodes"]]
    head = nodes[-1]
    nodes.insert(-1, {"id": "drop", "op": "Dropout", "params": {"p": 0.1}, "inputs": head["inputs"]})
    head["inputs"] = ["drop"]
    return {**spec, "nodes": nodes}


@pytest.fixture(scope="module")
def source_run(digits, tmp_path_factory):
    out = tmp_path_factory.mktemp("source")
    train(SOURCE, digits, {"epochs": 3, "optimizer": {"lr": 0.01}}, out_dir=out)
    return out / "checkpoints" / "best"


def test_the_plan_lists_loaded_mismatched_new_and_unused_by_node(source_run):
    plan = init_plan(TARGET, source_run).to_json()
    assert plan == {
        "loaded": ["fc1.weight", "fc1.bias", "fc2.bias"],
        "mismatched": [{"node": "fc2", "parameter": "fc2.weight", "checkpoint_shape": [10, 32], "graph_shape": [10, 16]}],
        "new": [{"node": "fc3", "parameter": "fc3.weight", "shape": [16, 32]},
                {"node": "fc3", "parameter": "fc3.bias", "shape": [16]}],
        "unused": [{"node": "mid", "parameter": "mid.bias", "shape": [32]},  # in the checkpoint's order
                   {"node": "mid", "parameter": "mid.weight", "shape": [32, 32]}],
    }


def test_matching_tensors_are_copied_and_the_rest_keep_their_seeded_init(source_run):
    fresh, model = build(TARGET, seed=4), build(TARGET, seed=4)
    apply_init(model, source_run)
    saved = load_file(source_run / "model.safetensors")
    assert torch.equal(model.fc1.weight, saved["fc1.weight"]) and torch.equal(model.fc2.bias, saved["fc2.bias"])
    assert torch.equal(model.fc3.weight, fresh.fc3.weight) and torch.equal(model.fc2.weight, fresh.fc2.weight)


def test_a_fine_tune_starts_far_ahead_and_its_frozen_node_stays_exactly(digits, source_run):
    cfg = {"epochs": 1, "optimizer": {"lr": 1e-3, "weight_decay": 0.1, "name": "adamw"}, "freeze": ["fc1"]}
    in_optimizer: list[set[int]] = []

    class Look(CallbackBase):
        def on_train_start(self, state):
            in_optimizer.append({id(p) for g in state.optimizer.param_groups for p in g["params"]})

    target = with_dropout(SOURCE)
    tuned_sink, scratch_sink = ListSink(), ListSink()
    tuned = train(target, digits, cfg, init_from=source_run, sink=tuned_sink, callbacks=[Look()])
    scratch = train(target, digits, {**cfg, "freeze": []}, sink=scratch_sink)
    assert tuned.init_plan is not None and tuned.init_plan.to_json() == init_plan(target, source_run).to_json()
    assert len(tuned.init_plan.loaded) == 6 and not tuned.init_plan.new and scratch.init_plan is None
    saved = load_file(source_run / "model.safetensors")
    assert torch.equal(tuned.model.fc1.weight, saved["fc1.weight"])
    assert torch.equal(tuned.model.fc1.bias, saved["fc1.bias"])
    assert not tuned.model.fc1.weight.requires_grad and id(tuned.model.fc1.weight) not in in_optimizer[0]
    assert not torch.equal(tuned.model.fc2.bias, saved["fc2.bias"])  # the rest trains
    first_tuned = next(v["val/accuracy"] for _, _, v in tuned_sink.points if "val/accuracy" in v)
    first_scratch = next(v["val/accuracy"] for _, _, v in scratch_sink.points if "val/accuracy" in v)
    assert first_tuned > first_scratch + 0.2


def test_an_unknown_node_to_freeze_is_named(digits):
    with pytest.raises(TrainingError, match=r"freeze names 'fc9', which is not a node of this graph") as err:
        train(mlp_spec([1, 8, 8], 10), digits, {"epochs": 1, "freeze": ["fc1", "fc9"]})
    assert err.value.field == "freeze"


def test_init_from_and_resume_from_do_not_go_together(digits, source_run):
    with pytest.raises(TrainingError, match="give one of them"):
        train(SOURCE, digits, {"epochs": 1}, init_from=source_run, resume_from=source_run)


def test_init_from_something_that_is_not_a_checkpoint_is_named(digits, tmp_path):
    with pytest.raises(TrainingError, match="is not a checkpoint") as err:
        train(SOURCE, digits, {"epochs": 1}, init_from=tmp_path)
    assert err.value.field == "init_from"


@pytest.mark.parametrize("scheduler", [{"name": "none"}, {"name": "step", "step_size": 1, "gamma": 0.7}],
                         ids=["no-schedule", "step"])
def test_a_finished_run_resumed_for_more_epochs_equals_the_longer_run(digits, tmp_path, scheduler):
    spec = mlp_spec([1, 8, 8], 10, dropout=0.2)
    cfg = {"optimizer": {"name": "sgd", "lr": 0.05}, "scheduler": scheduler, "seed": 1}
    straight = train(spec, digits, {**cfg, "epochs": 4})
    short = train(spec, digits, {**cfg, "epochs": 2}, out_dir=tmp_path / "short")
    assert short.epochs == 2
    longer = train(spec, digits, {**cfg, "epochs": 4}, out_dir=tmp_path / "longer", resume_from=tmp_path / "short")
    assert longer.epochs == 4 and longer.steps == straight.steps
    for key, value in straight.model.state_dict().items():
        assert torch.equal(longer.model.state_dict()[key], value), key
    assert longer.metrics["test/accuracy"] == straight.metrics["test/accuracy"]


@pytest.mark.parametrize("scheduler", [{"name": "cosine", "warmup_steps": 10}, {"name": "onecycle", "max_lr": 0.01}])
def test_a_schedule_over_the_total_is_laid_out_again_over_the_new_total(digits, tmp_path, scheduler):
    spec = mlp_spec([1, 8, 8], 10)
    cfg = {"scheduler": scheduler, "log_every": 5}
    straight_sink, sink = ListSink(), ListSink()
    train(spec, digits, {**cfg, "epochs": 4}, sink=straight_sink)
    train(spec, digits, {**cfg, "epochs": 2}, out_dir=tmp_path)
    longer = train(spec, digits, {**cfg, "epochs": 4}, out_dir=tmp_path, resume_from=tmp_path, sink=sink)
    assert longer.status == "succeeded" and longer.steps == 160
    # From the resumed step on, the rate is the one of a run planned for 4 epochs.
    expected = {s: v for s, v in straight_sink.series("lr") if s > 80}
    assert dict(sink.series("lr")) == pytest.approx(expected)
