"""Fine-tune and resume from another run's checkpoint, with the real worker.

Against the real stack: the digits CNN is trained (the source); a second revision pools to 2x2
before the classifier, so `logits` takes 128 features instead of 32. The init plan names that
node as the one mismatch; the fine-tuned run (conv1 frozen) starts from the source's best
checkpoint and its first evaluation is far better than the same config from scratch at the same
step; the frozen node's weights are exactly the source checkpoint's at the end. A resume of the
source's last checkpoint for more epochs continues from its step.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.stack.stack import ServiceStack
from tests.stack.test_run_e2e import wait_status

pytestmark = [pytest.mark.slow, pytest.mark.one_database]

SPECS = Path(__file__).resolve().parents[2] / "examples" / "specs"
SOURCE_CONFIG = {"device": "cpu", "epochs": 10, "batch_size": 32, "optimizer": {"lr": 0.01}, "seed": 0,
                 "log_every": 5}
# One epoch of 20 steps: where a good feature extractor shows.
TUNE_CONFIG = {"device": "cpu", "epochs": 1, "batch_size": 64, "optimizer": {"lr": 0.01}, "seed": 1,
               "log_every": 5, "freeze": ["conv1"]}


def finished(stack: ServiceStack, run_id: int) -> dict[str, Any]:
    done = wait_status(stack, run_id, {"succeeded", "failed", "cancelled"}, timeout=300)
    assert done["status"] == "succeeded", (done, stack.logs())
    return done


def start(stack: ServiceStack, body: dict[str, Any]) -> int:
    answer = stack.api("a").post("/api/runs/", json=body)
    assert answer.status_code == 201, answer.text
    return int(answer.json()["id"])


def first_val_accuracy(stack: ServiceStack, run_id: int) -> tuple[int, float, float]:
    series = stack.api("a").get(f"/api/runs/{run_id}/metrics/?keys=val/accuracy").json()["series"]["val/accuracy"]
    return series["step"][0], series["epoch"][0], series["value"][0]


def weights(stack: ServiceStack, path: str) -> dict[str, Any]:
    from safetensors.torch import load

    answer = stack.api("a").get(path)
    assert answer.status_code == 200, answer.text
    return load(answer.content)


def test_finetune_from_the_best_checkpoint_beats_scratch_and_keeps_frozen_weights(stack: ServiceStack) -> None:
    api = stack.api("a")
    team = stack.world["a"]["team"]
    digits = api.post("/api/datasets/", json={"team": team, "builtin": "digits"})
    assert digits.status_code == 201, digits.text
    spec = json.loads((SPECS / "digits_cnn.json").read_text())
    graph = api.post("/api/graphs/", json={"team": team, "name": "digits cnn", "spec": spec})
    assert graph.status_code == 201, graph.text
    graph_id, dataset_id = graph.json()["id"], digits.json()["id"]
    source = finished(stack, start(stack, {"graph": graph_id, "dataset": dataset_id, "config": SOURCE_CONFIG}))
    assert source["best_checkpoint"]["name"] == "best"

    changed = json.loads(json.dumps(spec))
    for node in changed["nodes"]:
        if node["id"] == "pool2":
            node["params"]["output_size"] = [2, 2]  # the classifier now reads 32 x 2 x 2 features
    revision = api.post(f"/api/graphs/{graph_id}/revisions/", json={"spec": changed})
    assert revision.status_code == 201, revision.text
    plan = api.post("/api/runs/init-plan/", json={
        "graph": graph_id, "revision": 2, "from_run": source["id"], "checkpoint": "best", "mode": "finetune",
    })
    assert plan.status_code == 200, plan.text
    plan = plan.json()
    assert [(m["node"], m["checkpoint_shape"], m["graph_shape"]) for m in plan["mismatched"]] == [
        ("logits", [10, 32], [10, 128])
    ]
    assert "conv1.weight" in plan["loaded"] and plan["problems"] == []

    init = {"run": source["id"], "checkpoint": "best", "mode": "finetune"}
    tuned_id = start(stack, {"graph": graph_id, "revision": 2, "dataset": dataset_id, "config": TUNE_CONFIG,
                             "init": init, "name": "fine-tuned"})
    scratch_id = start(stack, {"graph": graph_id, "revision": 2, "dataset": dataset_id, "config": TUNE_CONFIG,
                               "name": "from scratch"})
    tuned = finished(stack, tuned_id)
    finished(stack, scratch_id)
    assert [m["node"] for m in tuned["init"]["plan"]["mismatched"]] == ["logits"]
    tuned_step, tuned_epoch, tuned_acc = first_val_accuracy(stack, tuned_id)
    scratch_step, scratch_epoch, scratch_acc = first_val_accuracy(stack, scratch_id)
    assert (tuned_step, tuned_epoch) == (scratch_step, scratch_epoch) == (20, 1.0)
    assert tuned_acc >= 0.85 and tuned_acc >= scratch_acc + 0.1, (tuned_acc, scratch_acc)

    # conv1 was frozen: the fine-tuned export holds exactly the source checkpoint's conv1.
    before = weights(stack, f"/api/runs/{source['id']}/checkpoints/best/export/?format=safetensors")
    after = weights(stack, f"/api/runs/{tuned_id}/export/?format=safetensors")
    for name in ("conv1.weight", "conv1.bias"):
        assert bool((before[name] == after[name]).all()), name
    assert not bool((before["conv2.weight"] == after["conv2.weight"]).all())  # the rest trained

    # Resume the source's last epoch checkpoint for two more epochs: it goes on from its step.
    last = [c for c in api.get(f"/api/runs/{source['id']}/checkpoints/").json() if c["kind"] == "epoch"][-1]
    refused = api.post("/api/runs/", json={"graph": graph_id, "revision": 1, "dataset": dataset_id,
                                           "config": SOURCE_CONFIG,
                                           "init": {**init, "checkpoint": last["name"], "mode": "resume"}})
    assert refused.status_code == 400 and list(refused.json()["error"]["fields"]) == ["config.epochs"]
    resumed_id = start(stack, {"graph": graph_id, "revision": 1, "dataset": dataset_id,
                               "config": {**SOURCE_CONFIG, "epochs": 12},
                               "init": {**init, "checkpoint": last["name"], "mode": "resume"}})
    resumed = finished(stack, resumed_id)
    steps = api.get(f"/api/runs/{resumed_id}/metrics/?keys=val/accuracy").json()["series"]["val/accuracy"]["step"]
    assert steps[0] > last["step"] and resumed["progress"]["step"] == last["step"] * 12 // 10


@pytest.mark.django_db(transaction=True)
def test_a_requeued_run_resumes_its_own_checkpoint_before_its_init(iris_run: Any) -> None:
    """run_start_from: the run's own recorded checkpoint first, else init/ as its mode says."""
    import shutil

    from engine.build import build
    from engine.train.checkpoint import save_checkpoint
    from webapp.runs import conf
    from webapp.runs.models import Run
    from webapp.runs.selectors import run_start_from
    from webapp.runs.stream.events import events_record

    run = iris_run()

    def folder(path: Path, step: int) -> Path:
        return save_checkpoint(path, model=build(run.graph_revision.spec, seed=0), optimizer=None,
                               state={"epoch": 1, "step": step, "batch_in_epoch": 0})

    assert run_start_from(run=run) == {"resume_from": None}
    init = folder(conf.run_dir(run.pk) / "init", 5)
    for mode, key in (("finetune", "init_from"), ("resume", "resume_from")):
        Run.objects.filter(pk=run.pk).update(init={"run": 1, "checkpoint": "best", "mode": mode})
        run.refresh_from_db()
        assert run_start_from(run=run) == {key: init}
    own = folder(conf.run_dir(run.pk) / "checkpoints" / "epoch-0001", 9)
    events_record(run_id=run.pk, events=[{"type": "checkpoint", "step": 9, "epoch": 1.0, "name": own.name,
                                          "path": str(own)}])
    assert run_start_from(run=run) == {"resume_from": own}
    # `best` recorded at step 9 and then rewritten in place at step 14 by a worker killed before
    # it recorded that: its steps 10-14 were never stored, so the run resumes from epoch-0001.
    best = folder(conf.run_dir(run.pk) / "checkpoints" / "best", 9)
    events_record(run_id=run.pk, events=[{"type": "checkpoint", "step": 9, "epoch": 1.0, "name": "best",
                                          "path": str(best)}])
    folder(best, 14)
    assert run_start_from(run=run) == {"resume_from": own}
    shutil.rmtree(own)
    assert run_start_from(run=run) == {"resume_from": init}, "no recorded folder holds its step: init/"
    shutil.rmtree(init)
    with pytest.raises(ValueError, match="missing"):
        run_start_from(run=run)
