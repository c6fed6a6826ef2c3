"""Experiments over REST: run names/notes/tags, the runs table's filters and summaries, compare,
checkpoints (kind, metrics, default, export of one), explanations of a checkpoint, init plans."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

from webapp.errors import DomainError
from webapp.runs.models import Run, RunStatus
from webapp.runs.services import run_create
from webapp.runs.stream.events import events_record

pytestmark = pytest.mark.django_db(transaction=True)


def metrics(run_id: int, points: list[tuple[int, dict[str, float]]]) -> None:
    events_record(run_id=run_id, events=[
        {"type": "metric", "step": step, "epoch": step / 10, "values": values} for step, values in points
    ])


def checkpoint(run: Run, name: str, *, step: int, epoch: int, val: dict[str, float], seed: int = 0) -> Path:
    """A real checkpoint folder of the run's graph (seeded weights), recorded as the worker does."""
    from engine.build import build
    from engine.train.checkpoint import save_checkpoint
    from webapp.runs import conf

    path = conf.run_dir(run.pk) / "checkpoints" / name
    model = build(run.graph_revision.spec, seed=seed)
    save_checkpoint(path, model=model, optimizer=None,
                    state={"epoch": epoch, "step": step, "batch_in_epoch": 0,
                           "trainer": {"last_val": val, "last_train": {}, "monitor": {}}})
    events_record(run_id=run.pk, events=[
        {"type": "checkpoint", "step": step, "epoch": float(epoch), "name": name, "path": str(path), "metrics": val}
    ])
    return path


def new_run(user: Any, revision: Any, dataset: Any, **kwargs: Any) -> Run:
    config = kwargs.pop("config", {"epochs": 2})
    return run_create(user=user, team=revision.graph.team, graph_revision=revision, dataset=dataset,
                      config=config, **kwargs)


# --- names, notes, tags -------------------------------------------------------------------------


def test_create_stores_name_notes_tags_and_origin(user_a, revision_a, dataset_a):
    run = new_run(user_a, revision_a, dataset_a, name="  wide lr ", notes="try 3e-3", tags=[" a ", "b"],
                  origin={"sweep": 7, "trial": 2})
    assert (run.name, run.notes, run.tags, run.origin, run.init) == ("wide lr", "try 3e-3", ["a", "b"],
                                                                      {"sweep": 7, "trial": 2}, {})


@pytest.mark.parametrize("tags", [["x"] * 2, [""], ["x" * 41], [f"t{i}" for i in range(21)], "abc", [3]])
def test_bad_tags_are_refused_naming_tags(user_a, revision_a, dataset_a, tags):
    with pytest.raises(DomainError) as caught:
        new_run(user_a, revision_a, dataset_a, tags=tags)
    assert caught.value.field == "tags"
    assert not Run.objects.exists()


def test_patch_renames_and_retags_for_editors_only(api_a, api_viewer_a, run_a):
    answer = api_a.patch(f"/api/runs/{run_a.pk}/", {"name": "baseline", "notes": "n", "tags": ["keep"]},
                         format="json")
    assert answer.status_code == 200, answer.content
    assert (answer.json()["name"], answer.json()["notes"], answer.json()["tags"]) == ("baseline", "n", ["keep"])
    bad = api_a.patch(f"/api/runs/{run_a.pk}/", {"tags": ["a", "a"]}, format="json")
    assert bad.status_code == 400 and "tags" in bad.json()["error"]["fields"]
    assert api_viewer_a.patch(f"/api/runs/{run_a.pk}/", {"name": "x"}, format="json").status_code == 403
    assert Run.objects.get(pk=run_a.pk).name == "baseline"


# --- the runs table ------------------------------------------------------------------------------


def test_list_filters_by_tag_text_sweep_and_orders(api_a, user_a, revision_a, dataset_a):
    one = new_run(user_a, revision_a, dataset_a, name="alpha", tags=["lr", "small"])
    two = new_run(user_a, revision_a, dataset_a, name="beta", notes="the wide one", tags=["wide"],
                  origin={"sweep": 3, "trial": 0})

    def ids(query: str) -> list[int]:
        answer = api_a.get(f"/api/runs/?{query}")
        assert answer.status_code == 200, answer.content
        return [r["id"] for r in answer.json()["results"]]

    assert ids("tag=lr") == [one.pk]
    assert ids("tag=wid") == []  # a whole tag, not a part of one
    assert ids("q=WIDE") == [two.pk]
    assert ids("q=mlp") == [two.pk, one.pk]  # the graph's name
    assert ids("sweep=3") == [two.pk]
    assert ids("ordering=name") == [one.pk, two.pk]
    assert ids("ordering=-name") == [two.pk, one.pk]
    assert set(ids("ordering=-duration")) == {one.pk, two.pk}
    bad = api_a.get("/api/runs/?ordering=colour")
    assert bad.status_code == 400 and list(bad.json()["error"]["fields"]) == ["ordering"]


def test_run_json_has_summary_best_checkpoint_and_duration(api_a, run_a):
    metrics(run_a.pk, [(10, {"train/loss": 1.0}), (20, {"val/loss": 0.5, "val/accuracy": 0.7}),
                       (30, {"val/loss": 0.8, "val/accuracy": 0.9}), (40, {"train/loss": 0.2})])
    checkpoint(run_a, "best", step=20, epoch=2, val={"val/loss": 0.5, "val/accuracy": 0.7})
    body = api_a.get(f"/api/runs/{run_a.pk}/").json()
    assert body["summary"]["final"] == {"train/loss": 0.2, "val/accuracy": 0.9, "val/loss": 0.8}
    assert body["summary"]["best"]["val/loss"] == {"value": 0.5, "step": 20, "epoch": 2.0, "mode": "min"}
    assert body["summary"]["best"]["val/accuracy"] == {"value": 0.9, "step": 30, "epoch": 3.0, "mode": "max"}
    assert body["best_checkpoint"] == {"name": "best", "step": 20, "epoch": 2.0,
                                       "metrics": {"val/loss": 0.5, "val/accuracy": 0.7}}
    assert body["duration_s"] is None  # not started
    listed = api_a.get("/api/runs/").json()["results"][0]
    assert listed["summary"] == body["summary"] and listed["best_checkpoint"] == body["best_checkpoint"]


def test_a_page_of_runs_costs_the_same_queries_as_one(api_a, user_a, revision_a, dataset_a):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    first = new_run(user_a, revision_a, dataset_a)
    metrics(first.pk, [(1, {"train/loss": 1.0})])
    with CaptureQueriesContext(connection) as one:
        api_a.get("/api/runs/")
    for _ in range(5):
        run = new_run(user_a, revision_a, dataset_a)
        metrics(run.pk, [(1, {"train/loss": 1.0}), (2, {"val/loss": 2.0})])
    with CaptureQueriesContext(connection) as six:
        answer = api_a.get("/api/runs/")
    assert answer.json()["count"] == 6

    def reads(captured: CaptureQueriesContext) -> list[str]:  # the token's last use is written now and then
        return [q["sql"] for q in captured.captured_queries if "accounts_apitoken" not in q["sql"]]

    assert len(reads(six)) == len(reads(one))


# --- compare -------------------------------------------------------------------------------------


def test_compare_answers_runs_config_diff_and_graph_diff(api_a, api_b, user_a, graph_a, revision_a, dataset_a,
                                                         valid_spec):
    from webapp.graphs.services import revision_save

    wider = json.loads(json.dumps(valid_spec))
    wider["nodes"][0]["params"]["out_features"] = 64
    wider["nodes"].insert(2, {"id": "drop", "op": "Dropout", "inputs": ["act"], "params": {"p": 0.2}})
    wider["nodes"][3]["inputs"] = ["drop"]
    revision_2, _ = revision_save(graph=graph_a, spec=wider, created_by=user_a)
    a = new_run(user_a, revision_a, dataset_a, name="a", config={"epochs": 2, "optimizer": {"lr": 0.01}})
    b = new_run(user_a, revision_a, dataset_a, name="b", config={"epochs": 2, "optimizer": {"lr": 0.001}})
    c = new_run(user_a, revision_2, dataset_a, name="c", config={"epochs": 2, "optimizer": {"lr": 0.001}})
    metrics(a.pk, [(5, {"val/loss": 0.3})])
    answer = api_a.get(f"/api/runs/compare/?ids={a.pk},{b.pk},{c.pk}")
    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert [r["id"] for r in body["runs"]] == [a.pk, b.pk, c.pk]
    assert [r["name"] for r in body["runs"]] == ["a", "b", "c"]
    assert body["runs"][0]["series"]["val/loss"]["value"] == [0.3]  # the series answer, kept
    assert body["runs"][0]["summary"]["best"]["val/loss"]["value"] == 0.3
    assert body["runs"][2]["revision"] == 2 and body["runs"][2]["graph_name"] == "mlp"
    assert body["config_diff"] == [
        {"field": "optimizer.lr", "values": {str(a.pk): 0.01, str(b.pk): 0.001, str(c.pk): 0.001}, "distinct": 2}
    ]
    # The graph parameters that differ are fields too (drop exists only in revision 2: null elsewhere).
    assert body["graph_params_diff"] == [
        {"field": "nodes.drop.p", "values": {str(a.pk): None, str(b.pk): None, str(c.pk): 0.2}, "distinct": 2},
        {"field": "nodes.fc1.out_features", "values": {str(a.pk): 16, str(b.pk): 16, str(c.pk): 64}, "distinct": 2},
    ]
    (diff,) = body["graph_diff"]
    assert diff["runs"] == [c.pk] and diff["revision"] == 2
    assert "fc1.out_features: 16 -> 64" in diff["changes"]
    assert "node drop added" in diff["changes"]
    assert "edge act -> fc2 removed" in diff["changes"] and "edge drop -> fc2 added" in diff["changes"]
    same = api_a.get(f"/api/runs/compare/?ids={a.pk},{b.pk}").json()
    assert same["graph_diff"] is None
    for query in (f"ids={a.pk}", "ids=" + ",".join(str(i) for i in range(1, 102)), "ids=x"):
        bad = api_a.get(f"/api/runs/compare/?{query}")
        assert bad.status_code == 400 and list(bad.json()["error"]["fields"]) == ["ids"], query
    assert api_b.get(f"/api/runs/compare/?ids={a.pk},{b.pk}").status_code == 404


def test_graph_parameters_that_differ_are_columns_of_the_table_and_the_comparison(
    api_a, user_a, graph_a, revision_a, dataset_a, valid_spec
):
    from webapp.graphs.services import revision_save

    wider = json.loads(json.dumps(valid_spec))
    wider["nodes"][0]["params"]["out_features"] = 64
    revision_2, _ = revision_save(graph=graph_a, spec=wider, created_by=user_a)
    narrow = new_run(user_a, revision_a, dataset_a, name="narrow")
    wide = new_run(user_a, revision_2, dataset_a, name="wide")

    rows = {r["name"]: r for r in api_a.get("/api/runs/?fields=graph_params").json()["results"]}
    assert rows["narrow"]["graph_params"] == {"nodes.fc1.out_features": 16, "nodes.fc2.out_features": 3}
    assert rows["wide"]["graph_params"]["nodes.fc1.out_features"] == 64
    # Not asked: not read (the list's spec column stays in the database).
    assert api_a.get("/api/runs/").json()["results"][0]["graph_params"] is None

    body = api_a.get(f"/api/runs/compare/?ids={narrow.pk},{wide.pk}").json()
    assert body["graph_params_diff"] == [
        {"field": "nodes.fc1.out_features", "values": {str(narrow.pk): 16, str(wide.pk): 64}, "distinct": 2}
    ]
    assert body["config_diff"] == []


def test_revision_diff_names_params_nodes_and_edges(valid_spec):
    from webapp.graphs.selectors import revision_diff

    changed = json.loads(json.dumps(valid_spec))
    changed["nodes"][0]["params"]["out_features"] = 128
    changed["nodes"][1]["op"] = "GELU"
    changed["layout"] = {"fc1": {"x": 0, "y": 0}}
    assert revision_diff(valid_spec, changed) == ["fc1.out_features: 16 -> 128", "act.op: ReLU -> GELU"]
    assert revision_diff(valid_spec, valid_spec) == []


# --- checkpoints ---------------------------------------------------------------------------------


def finished(run: Run, status: str = RunStatus.SUCCEEDED) -> Run:
    Run.objects.filter(pk=run.pk).update(status=status)
    run.refresh_from_db()
    return run


def test_checkpoints_list_kind_metrics_and_the_default(api_a, run_a):
    import shutil

    from webapp.runs import conf

    checkpoint(run_a, "epoch-0001", step=10, epoch=1, val={"val/loss": 0.9})
    checkpoint(run_a, "best", step=20, epoch=2, val={"val/loss": 0.4})
    checkpoint(run_a, "epoch-0002", step=20, epoch=2, val={"val/loss": 0.4})
    checkpoint(run_a, "step-0000025", step=25, epoch=2, val={})
    shutil.rmtree(conf.run_dir(run_a.pk) / "checkpoints" / "epoch-0001")  # pruned by training
    finished(run_a)
    export = conf.run_dir(run_a.pk) / "export"
    export.mkdir(parents=True)
    (export / "export.json").write_text(json.dumps({"checkpoint": {"name": "best", "step": 20, "epoch": 2}}))
    rows = api_a.get(f"/api/runs/{run_a.pk}/checkpoints/").json()
    by_name = {row["name"]: row for row in rows}
    assert [row["name"] for row in rows] == ["epoch-0001", "best", "epoch-0002", "step-0000025"]
    assert {n: r["kind"] for n, r in by_name.items()} == {
        "epoch-0001": "epoch", "best": "best", "epoch-0002": "epoch", "step-0000025": "cancelled"}
    assert [n for n, r in by_name.items() if r["default"]] == ["best"]
    assert by_name["best"]["metrics"] == {"val/loss": 0.4}
    assert not by_name["epoch-0001"]["available"] and by_name["best"]["available"]


def test_a_checkpoint_downloads_as_an_export_of_its_own_weights(api_a, api_b, run_a):
    from safetensors.torch import load_file

    path = checkpoint(run_a, "step-0000007", step=7, epoch=0, val={}, seed=5)
    finished(run_a, RunStatus.CANCELLED)  # a cancelled run's checkpoint is exported too
    answer = api_a.get(f"/api/runs/{run_a.pk}/checkpoints/step-0000007/export/?format=safetensors")
    assert answer.status_code == 200, answer.content
    got = load_file_bytes(b"".join(answer.streaming_content))
    want = load_file(path / "model.safetensors")
    assert set(got) == set(want) and all((got[k] == want[k]).all() for k in want)
    source = api_a.get(f"/api/runs/{run_a.pk}/checkpoints/step-0000007/export/?format=python")
    assert source.status_code == 200 and b"class" in b"".join(source.streaming_content)
    bundle = api_a.get(f"/api/runs/{run_a.pk}/checkpoints/step-0000007/export/?format=zip")
    names = zipfile.ZipFile(io.BytesIO(b"".join(bundle.streaming_content))).namelist()
    manifest = json.loads(zipfile.ZipFile(io.BytesIO(b"".join(
        api_a.get(f"/api/runs/{run_a.pk}/checkpoints/step-0000007/export/?format=zip").streaming_content
    ))).read(next(n for n in names if n.endswith("export.json"))))
    assert manifest["checkpoint"] == {"name": "step-0000007", "step": 7, "epoch": 0.0}
    missing = api_a.get(f"/api/runs/{run_a.pk}/checkpoints/nothing/export/")
    assert missing.status_code == 404
    assert api_b.get(f"/api/runs/{run_a.pk}/checkpoints/step-0000007/export/").status_code == 404


def load_file_bytes(data: bytes) -> dict[str, Any]:
    from safetensors.torch import load

    return load(data)


def test_explaining_an_unknown_or_pruned_checkpoint_names_checkpoint(api_a, run_a):
    import shutil

    path = checkpoint(run_a, "epoch-0001", step=10, epoch=1, val={})
    finished(run_a)
    unknown = api_a.post(f"/api/runs/{run_a.pk}/explanations/", {"index": 0, "checkpoint": "nope"}, format="json")
    assert unknown.status_code == 400 and list(unknown.json()["error"]["fields"]) == ["checkpoint"]
    shutil.rmtree(path)
    pruned = api_a.post(f"/api/runs/{run_a.pk}/explanations/", {"index": 0, "checkpoint": "epoch-0001"},
                        format="json")
    assert pruned.status_code == 400 and list(pruned.json()["error"]["fields"]) == ["checkpoint"]


def test_an_explanation_of_a_checkpoint_is_queued_with_it(api_a, run_a):
    checkpoint(run_a, "epoch-0001", step=10, epoch=1, val={})
    finished(run_a, RunStatus.CANCELLED)
    answer = api_a.post(f"/api/runs/{run_a.pk}/explanations/", {"index": 0, "checkpoint": "epoch-0001"},
                        format="json")
    assert answer.status_code == 202, answer.content
    assert answer.json()["sample"] == {"index": 0, "checkpoint": "epoch-0001"}


# --- fine-tune / resume --------------------------------------------------------------------------


def test_freeze_naming_an_unknown_node_is_refused(api_a, run_body):
    answer = api_a.post("/api/runs/", {**run_body, "config": {"epochs": 1, "freeze": ["fc1", "ghost"]}},
                        format="json")
    assert answer.status_code == 400
    assert list(answer.json()["error"]["fields"]) == ["config.freeze"]
    assert "ghost" in answer.json()["error"]["fields"]["config.freeze"][0]


def test_init_plan_lists_mismatches_and_resume_problems(api_a, user_a, graph_a, run_a, valid_spec):
    from webapp.graphs.services import revision_save

    checkpoint(run_a, "best", step=20, epoch=2, val={"val/loss": 0.4})
    wider = json.loads(json.dumps(valid_spec))
    wider["nodes"][0]["params"]["out_features"] = 32
    revision_save(graph=graph_a, spec=wider, created_by=user_a)
    body = {"graph": graph_a.pk, "revision": 2, "from_run": run_a.pk, "checkpoint": "best", "mode": "finetune"}
    plan = api_a.post("/api/runs/init-plan/", body, format="json")
    assert plan.status_code == 200, plan.content
    plan = plan.json()
    assert {m["node"] for m in plan["mismatched"]} == {"fc1", "fc2"}  # fc1 wider; fc2 reads 32 inputs now
    assert "fc2.bias" in plan["loaded"] and plan["problems"] == []
    resume = api_a.post("/api/runs/init-plan/", {**body, "mode": "resume", "epochs": 2}, format="json").json()
    assert {p["field"] for p in resume["problems"]} == {"graph_revision", "config.epochs"}
    assert Run.objects.count() == 1  # nothing was made


def test_freezing_a_layer_that_does_not_load_is_refused_naming_it(
    api_a, user_a, graph_a, run_a, dataset_a, valid_spec
):
    from webapp.graphs.services import revision_save

    checkpoint(run_a, "best", step=20, epoch=2, val={"val/loss": 0.4})
    wider = json.loads(json.dumps(valid_spec))
    wider["nodes"][0]["params"]["out_features"] = 32
    revision_save(graph=graph_a, spec=wider, created_by=user_a)
    # As the README's example did: no revision (the latest, whose fc1 is wider), fc1 frozen.
    plan = api_a.post("/api/runs/init-plan/", {"graph": graph_a.pk, "from_run": run_a.pk, "checkpoint": "best",
                                               "mode": "finetune", "freeze": ["fc1"]}, format="json")
    assert plan.status_code == 200, plan.content
    assert plan.json()["revision"] == 2  # the latest, which the answer names
    problems = plan.json()["problems"]
    assert [(p["field"], p["node"]) for p in problems] == [("config.freeze", "fc1")]
    assert "fc1 cannot be frozen" in problems[0]["message"] and "[16, 4]" in problems[0]["message"]

    init = {"run": run_a.pk, "checkpoint": "best", "mode": "finetune"}
    answer = api_a.post("/api/runs/", {"graph": graph_a.pk, "dataset": dataset_a.pk, "init": init,
                                       "config": {"epochs": 1, "freeze": ["fc1"]}}, format="json")
    assert answer.status_code == 400, answer.content
    error = answer.json()["error"]
    assert error["nodes"] == ["fc1"] and list(error["fields"]) == ["config.freeze"]
    assert "fc1 cannot be frozen" in error["message"]
    assert Run.objects.count() == 1  # nothing was made

    # The same checkpoint into the revision it came from: fc1 loads, so freezing it is fine.
    ok = api_a.post("/api/runs/", {"graph": graph_a.pk, "revision": 1, "dataset": dataset_a.pk, "init": init,
                                   "config": {"epochs": 1, "freeze": ["fc1"]}}, format="json")
    assert ok.status_code == 201, ok.content
    assert api_a.post("/api/runs/init-plan/", {"graph": graph_a.pk, "revision": 1, "from_run": run_a.pk,
                                               "checkpoint": "best", "freeze": ["fc1"]},
                      format="json").json()["problems"] == []


def test_init_from_another_teams_run_or_an_unknown_checkpoint_is_a_400_naming_the_field(
    api_a, api_b, run_a, run_body
):
    checkpoint(run_a, "best", step=20, epoch=2, val={})
    body = {"graph": run_body["graph"], "from_run": run_a.pk, "checkpoint": "best"}
    # Another team's run looks like a missing one, named in the body as a dataset or graph would be.
    foreign = api_b.post("/api/runs/init-plan/", body, format="json")
    assert foreign.status_code in (400, 404)  # B may not see A's graph either: 400 on graph first
    missing = api_a.post("/api/runs/init-plan/", {**body, "from_run": run_a.pk + 1000}, format="json")
    assert missing.status_code == 400 and list(missing.json()["error"]["fields"]) == ["from_run"]
    assert f"No run {run_a.pk + 1000} among your teams' runs" in missing.json()["error"]["message"]
    unknown = api_a.post("/api/runs/init-plan/", {**body, "checkpoint": "epoch-0009"}, format="json")
    assert unknown.status_code == 400 and list(unknown.json()["error"]["fields"]) == ["checkpoint"]
    create = api_a.post("/api/runs/", {**run_body, "init": {"run": run_a.pk + 1000, "checkpoint": "best"}},
                        format="json")
    assert create.status_code == 400 and list(create.json()["error"]["fields"]) == ["init.run"]


def test_create_with_init_copies_the_checkpoint_and_stores_the_plan(api_a, api_b, user_b, run_a, run_body):
    import shutil

    from webapp.runs import conf

    source = checkpoint(run_a, "best", step=20, epoch=2, val={"val/loss": 0.4})
    answer = api_a.post("/api/runs/", {**run_body, "config": {"epochs": 4},
                                       "init": {"run": run_a.pk, "checkpoint": "best", "mode": "resume"}},
                        format="json")
    assert answer.status_code == 201, answer.content
    run = answer.json()
    assert run["init"]["run"] == run_a.pk and run["init"]["mode"] == "resume"
    assert run["init"]["plan"]["mismatched"] == [] and run["init"]["plan"]["loaded"]
    copied = conf.run_dir(run["id"]) / "init"
    assert (copied / "model.safetensors").read_bytes() == (source / "model.safetensors").read_bytes()
    shutil.rmtree(source)  # the source may be pruned now; the new run keeps its copy
    assert (copied / "state.json").is_file()
    too_few = api_a.post("/api/runs/", {**run_body, "config": {"epochs": 2},
                                        "init": {"run": run_a.pk, "checkpoint": "epoch-0001", "mode": "resume"}},
                         format="json")
    assert too_few.status_code == 400 and list(too_few.json()["error"]["fields"]) == ["init.checkpoint"]


def test_compare_takes_the_top_hundred_runs_of_a_sweep(api_a, user_a, revision_a, dataset_a):
    runs = Run.objects.bulk_create([
        Run(team=revision_a.graph.team, graph_revision=revision_a, dataset=dataset_a, created_by=user_a,
            config={"epochs": 2, "optimizer": {"lr": 0.001 * (i % 7 + 1)}}, name=f"t{i}")
        for i in range(100)
    ])
    ids = ",".join(str(run.pk) for run in runs)
    body = api_a.get(f"/api/runs/compare/?ids={ids}&max_points=50").json()
    assert [r["id"] for r in body["runs"]] == [run.pk for run in runs]
    (lr,) = body["config_diff"]
    assert lr["field"] == "optimizer.lr" and lr["distinct"] == 7 and len(lr["values"]) == 100
    assert body["graph_params_diff"] == [] and body["graph_diff"] is None
