"""Multi-process runs (engine.train.distributed): N gloo ranks on the CPU train what 1 process does.

Each test starts real ranks: `launch()` through PyTorch's elastic launcher, and for two "nodes"
two `python -m torch.distributed.run --nnodes 2` invocations on loopback. Tiny MLP on iris.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors.torch import load_file

from engine.train import ConfigError, ListSink, parse_config, train
from engine.train.distributed import JOB_FILE, job_write, launch
from tests.engine.train.conftest import load, mlp_spec

ROOT = Path(__file__).resolve().parents[3]
RECIPE = {"source": {"kind": "builtin", "name": "iris"}}
# 105 training rows: 7 batches of 16 a epoch, the last one of 9 rows (5 and 4 on two ranks).
CONFIG = {
    "epochs": 2,
    "batch_size": 16,
    "log_every": 1,
    "device": "cpu",
    "seed": 3,
    "optimizer": {"name": "adam", "lr": 0.01},
}


def one_process(config: dict[str, Any], out_dir: Path | None = None) -> tuple[Any, ListSink]:
    sink = ListSink()
    result = train(mlp_spec([4], 3, hidden=16), load("iris"), config, sink=sink, out_dir=out_dir)
    return result, sink


def job(config: dict[str, Any], out_dir: Path | None = None, **more: Any) -> dict[str, Any]:
    return {
        "spec": mlp_spec([4], 3, hidden=16),
        "data": RECIPE,
        "config": config,
        "out_dir": str(out_dir) if out_dir else None,
        **more,
    }


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def assert_same_weights(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> None:
    assert a.keys() == b.keys()
    for name in a:
        torch.testing.assert_close(a[name], b[name], rtol=1e-5, atol=1e-6, msg=name)


def test_two_processes_train_the_weights_one_process_trains_and_report_each_step_once(
    tmp_path: Path,
) -> None:
    single, single_sink = one_process(CONFIG)
    events: list[dict[str, Any]] = []
    result = launch(
        job({**CONFIG, "processes": 2}, tmp_path / "run"), tmp_path / "job", on_event=events.append
    )

    assert result.status == "succeeded" and result.steps == single.steps == 14
    assert_same_weights(result.model.state_dict(), single.model.state_dict())
    # Both ranks hold the same weights at the end.
    assert_same_weights(
        load_file(tmp_path / "job" / "rank-1.safetensors"), result.model.state_dict()
    )
    # Rank 0 alone reports: every step once, with the global batch's loss.
    train_points = [
        (e["step"], e["values"]["train/loss"])
        for e in events
        if e["type"] == "metric" and "train/loss" in e["values"]
    ]
    assert [s for s, _ in train_points] == list(range(1, 15))
    expected = single_sink.series("train/loss")
    for (step, loss), (step_1, loss_1) in zip(train_points, expected, strict=True):
        assert step == step_1 and loss == pytest.approx(loss_1, rel=1e-5)
    assert [e["step"] for e in events if e["type"] == "batch_end"] == list(range(1, 15))
    # Validation shared out over the ranks and reduced: the whole split's metrics.
    assert result.metrics["val/accuracy"] == pytest.approx(single.metrics["val/accuracy"])
    assert result.metrics["val/loss"] == pytest.approx(single.metrics["val/loss"], rel=1e-5)
    assert result.metrics["test/accuracy"] == pytest.approx(single.metrics["test/accuracy"])
    assert result.metrics["test/loss"] == pytest.approx(single.metrics["test/loss"], rel=1e-5)
    # Rank 0 alone writes the checkpoints.
    assert sorted(p.name for p in (tmp_path / "run" / "checkpoints").iterdir()) == [
        "best",
        "epoch-0001",
        "epoch-0002",
    ]
    outcomes = [json.loads((tmp_path / "job" / f"rank-{r}.json").read_text()) for r in (0, 1)]
    assert [(o["rank"], o["world"], o["steps"]) for o in outcomes] == [(0, 2, 14), (1, 2, 14)]


def test_a_batch_that_does_not_split_over_the_processes_is_refused_naming_both() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config({"batch_size": 30, "processes": 4})
    assert caught.value.problems[0]["field"] == "processes"
    assert "batch_size 30" in str(caught.value) and "4 processes" in str(caught.value)
    with pytest.raises(ConfigError, match="less than or equal to 8"):
        parse_config({"processes": 9})


def test_nodes_multiply_the_ranks_a_batch_is_shared_over() -> None:
    cfg = parse_config({"nodes": 2, "processes": 4, "batch_size": 64})
    assert cfg.world == 8
    with pytest.raises(ConfigError) as caught:
        parse_config({"nodes": 3, "batch_size": 16})  # 1 process on each of 3 nodes: 16 rows over 3
    assert caught.value.problems[0]["field"] == "processes" and "3 nodes x 1 processes" in str(caught.value)
    with pytest.raises(ConfigError) as caught:
        parse_config({"nodes": 2, "device": "cuda:1"})
    assert "cuda:LOCAL_RANK" in str(caught.value)
    assert parse_config({"nodes": 2, "processes": 1, "strategy": "fsdp"}).world == 2


def test_one_machine_refuses_a_run_of_several_nodes(tmp_path: Path) -> None:
    from engine.train import TrainingError

    with pytest.raises(TrainingError, match="Kubernetes") as caught:
        launch(job({**CONFIG, "nodes": 2}), tmp_path / "job")
    assert caught.value.field == "nodes"


def test_train_without_a_process_group_refuses_more_than_one_process() -> None:
    from engine.train import TrainingError

    with pytest.raises(TrainingError, match="engine.train.distributed") as caught:
        train(mlp_spec([4], 3), load("iris"), {**CONFIG, "processes": 2})
    assert caught.value.field == "processes"


def test_the_stop_file_stops_every_rank_at_the_same_step_and_a_resume_finishes_the_run(
    tmp_path: Path,
) -> None:
    config = {**CONFIG, "epochs": 4, "processes": 2}
    seen: list[int] = []

    def on_event(event: dict[str, Any]) -> None:
        if event["type"] == "batch_end":
            seen.append(event["step"])

    stopped = launch(
        job(config, tmp_path / "run", step_delay_s=0.02),
        tmp_path / "job",
        on_event=on_event,
        should_stop=lambda: len(seen) >= 5,
    )
    assert stopped.status == "cancelled"
    outcomes = [json.loads((tmp_path / "job" / f"rank-{r}.json").read_text()) for r in (0, 1)]
    assert {o["steps"] for o in outcomes} == {stopped.steps}, outcomes
    assert (
        stopped.last_checkpoint is not None
        and stopped.last_checkpoint.name == f"step-{stopped.steps:07d}"
    )

    resumed = launch(
        job(config, tmp_path / "run", resume_from=str(tmp_path / "run")), tmp_path / "job"
    )
    straight, _ = one_process({**config, "processes": 1})
    assert resumed.status == "succeeded" and resumed.steps == straight.steps
    assert_same_weights(resumed.model.state_dict(), straight.model.state_dict())


def test_a_rank_error_fails_the_launch_with_the_engines_message(tmp_path: Path) -> None:
    from engine.train import TrainingError

    bad = job({**CONFIG, "processes": 2, "freeze": ["nope"]})
    with pytest.raises(TrainingError, match="freeze names 'nope'"):
        launch(bad, tmp_path / "job")


def test_two_nodes_of_one_process_each_train_the_weights_of_one_process(tmp_path: Path) -> None:
    single, _ = one_process(CONFIG)
    nodes = []
    for node in (0, 1):
        folder = tmp_path / f"node{node}"
        job_write(folder, job({**CONFIG, "processes": 2}, tmp_path / f"run{node}"))
        nodes.append(folder)
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "torch.distributed.run",
                "--nnodes",
                "2",
                "--nproc-per-node",
                "1",
                "--rdzv-backend",
                "c10d",
                "--rdzv-endpoint",
                f"127.0.0.1:{port}",
                "--rdzv-id",
                "two-nodes",
                "--max-restarts",
                "0",
                "-m",
                "engine.train.distributed",
                str(folder / JOB_FILE),
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        for folder in nodes
    ]
    for proc in procs:
        out, _ = proc.communicate(timeout=240)
        assert proc.returncode == 0, out.decode(errors="replace")[-3000:]
    ranks = {}
    for folder in nodes:
        (outcome,) = [json.loads(p.read_text()) for p in folder.glob("rank-*.json")]
        assert outcome["world"] == 2 and outcome["status"] == "succeeded"
        ranks[outcome["rank"]] = load_file(folder / f"rank-{outcome['rank']}.safetensors")
    assert sorted(ranks) == [0, 1]
    assert_same_weights(ranks[0], ranks[1])
    assert_same_weights(ranks[0], single.model.state_dict())


# --- strategy "fsdp": FSDP2's fully_shard over a gloo mesh --------------------------------------

FSDP = {**CONFIG, "processes": 2, "strategy": "fsdp"}


def assert_close_weights(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> None:
    assert a.keys() == b.keys()
    for name in a:
        torch.testing.assert_close(a[name], b[name], rtol=1e-4, atol=1e-5, msg=name)


def test_two_sharded_processes_train_the_weights_of_one_process_and_checkpoint_whole_tensors(
    tmp_path: Path,
) -> None:
    single, single_sink = one_process(CONFIG)
    events: list[dict[str, Any]] = []
    result = launch(job(FSDP, tmp_path / "run"), tmp_path / "job", on_event=events.append)

    assert result.status == "succeeded" and result.steps == single.steps == 14
    assert_close_weights(result.model.state_dict(), single.model.state_dict())
    assert_close_weights(load_file(tmp_path / "job" / "rank-1.safetensors"), result.model.state_dict())
    losses = [e["values"]["train/loss"] for e in events if e["type"] == "metric" and "train/loss" in e["values"]]
    assert losses == pytest.approx([v for _, v in single_sink.series("train/loss")], rel=1e-4)
    assert result.metrics["val/accuracy"] == pytest.approx(single.metrics["val/accuracy"])
    assert result.metrics["test/loss"] == pytest.approx(single.metrics["test/loss"], rel=1e-4)
    # The checkpoint holds whole tensors, as a 1-process run's: a 1-process run resumes from it.
    epoch = load_file(tmp_path / "run" / "checkpoints" / "epoch-0002" / "model.safetensors")
    assert {k: tuple(v.shape) for k, v in epoch.items()} == {
        k: tuple(v.shape) for k, v in single.model.state_dict().items()}
    resumed = train(mlp_spec([4], 3, hidden=16), load("iris"), {**CONFIG, "epochs": 3},
                    resume_from=tmp_path / "run" / "checkpoints" / "epoch-0002")
    straight, _ = one_process({**CONFIG, "epochs": 3})
    assert_close_weights(resumed.model.state_dict(), straight.model.state_dict())


def test_a_sharded_run_stops_on_every_rank_at_one_step_and_resumes_sharded(tmp_path: Path) -> None:
    config = {**FSDP, "epochs": 4}
    seen: list[int] = []

    def on_event(event: dict[str, Any]) -> None:
        if event["type"] == "batch_end":
            seen.append(event["step"])

    stopped = launch(job(config, tmp_path / "run", step_delay_s=0.02), tmp_path / "job",
                     on_event=on_event, should_stop=lambda: len(seen) >= 5)
    assert stopped.status == "cancelled"
    outcomes = [json.loads((tmp_path / "job" / f"rank-{r}.json").read_text()) for r in (0, 1)]
    assert {o["steps"] for o in outcomes} == {stopped.steps}, outcomes
    resumed = launch(job(config, tmp_path / "run", resume_from=str(tmp_path / "run")), tmp_path / "job")
    straight, _ = one_process({**CONFIG, "epochs": 4})
    assert resumed.status == "succeeded" and resumed.steps == straight.steps
    assert_close_weights(resumed.model.state_dict(), straight.model.state_dict())


def test_fsdp_needs_more_than_one_process() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config({"strategy": "fsdp"})
    assert caught.value.problems[0]["field"] == "strategy" and "processes" in str(caught.value)
