"""POST /api/graphs/<id>/revisions/<n>/weights/: an imported model's weights as a first checkpoint.

End to end: the MLP of tests/engine/import_models is imported with `engine.import_fx` (as
`python -m engine import` does), its spec saved as a graph, its weights uploaded; a fine-tune run
starts from checkpoint `imported` and the real training task (in process) trains it. The weights
the run starts from are exactly the module's: built and loaded as the trainer does, the network
gives the module's outputs.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors.torch import load_file, save

MODELS = Path(__file__).resolve().parents[2] / "engine" / "import_models"

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def runs_env(settings: Any, tmp_path: Any) -> Any:
    """Files in tmp, tasks queued to an in-memory broker (never Redis), as tests/stack do."""
    from webapp.celery import app

    settings.MEDIA_ROOT = tmp_path / "media"
    settings.RUNS_LEASE_SECONDS = 30.0
    previous = app.conf.broker_url
    app.conf.broker_url = "memory://"
    app._pool = None
    yield settings
    app.conf.broker_url = previous
    app._pool = None


@pytest.fixture(scope="module")
def imported() -> dict[str, Any]:
    """SkipMLP for iris (4 features, 3 classes) with trained-looking weights, imported to a spec."""
    from engine.import_fx.convert import InputShape, import_module, instantiate, load_module_class

    module = instantiate(
        load_module_class(f"{MODELS / 'mlp_skip.py'}:SkipMLP"),
        {"features": 4, "hidden": 24, "classes": 3},
    )
    generator = torch.Generator().manual_seed(7)
    with torch.no_grad():
        for tensor in module.state_dict().values():
            tensor.copy_(torch.randn(tensor.shape, generator=generator) * 0.3)
    result = import_module(module, [InputShape((4,))])
    assert result.ok, result.problems
    return {
        "module": module.eval(),
        "spec": result.spec,
        "weights": {k: v.contiguous() for k, v in result.state_dict.items()},
    }


def upload(
    api: Any, graph_id: int, data: bytes, name: str = "trained.safetensors", revision: int = 1
) -> Any:
    return api.post(
        f"/api/graphs/{graph_id}/revisions/{revision}/weights/",
        {"file": named(data, name)},
        format="multipart",
    )


def named(data: bytes, name: str) -> Any:
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile(name, data, content_type="application/octet-stream")


@pytest.fixture
def graph_id(api_a: Any, team_a: Any, imported: dict[str, Any]) -> int:
    response = api_a.post(
        "/api/graphs/",
        {"team": team_a.id, "name": "skip mlp", "spec": imported["spec"]},
        format="json",
    )
    assert response.status_code == 201, response.content
    assert response.json()["latest"]["valid"]
    return response.json()["id"]


def test_imported_weights_start_a_fine_tune_run_with_exactly_the_modules_weights(
    runs_env, api_a, graph_id, imported, dataset_a
):
    from engine.build import build
    from engine.train.finetune import apply_init
    from webapp.runs import conf
    from workers.runs import train_run

    answer = upload(api_a, graph_id, save(imported["weights"]))
    assert answer.status_code == 201, answer.content
    source = answer.json()
    assert source["status"] == "succeeded"
    assert source["origin"] == {"kind": "import", "file": "trained.safetensors"}
    assert (source["dataset"], source["dataset_name"], source["revision"]) == (None, None, 1)
    checkpoints = api_a.get(f"/api/runs/{source['id']}/checkpoints/").json()
    assert [(c["name"], c["kind"], c["step"], c["available"]) for c in checkpoints] == [
        ("imported", "imported", 0, True)
    ]

    plan = api_a.post(
        "/api/runs/init-plan/",
        {
            "graph": graph_id,
            "revision": 1,
            "from_run": source["id"],
            "checkpoint": "imported",
            "mode": "finetune",
        },
        format="json",
    )
    assert plan.status_code == 200, plan.content
    assert sorted(plan.json()["loaded"]) == sorted(imported["weights"])
    assert (plan.json()["mismatched"], plan.json()["new"], plan.json()["unused"]) == ([], [], [])
    resume = api_a.post(
        "/api/runs/init-plan/",
        {
            "graph": graph_id,
            "revision": 1,
            "from_run": source["id"],
            "checkpoint": "imported",
            "mode": "resume",
        },
        format="json",
    )
    assert [p["field"] for p in resume.json()["problems"]] == ["mode"]

    created = api_a.post(
        "/api/runs/",
        {
            "graph": graph_id,
            "dataset": dataset_a.id,
            "name": "tuned",
            "config": {"device": "cpu", "epochs": 1, "batch_size": 32, "log_every": 1},
            "init": {"run": source["id"], "checkpoint": "imported", "mode": "finetune"},
        },
        format="json",
    )
    assert created.status_code == 201, created.content
    tuned = created.json()

    # What the trainer starts from: the run's own copy (init/), exactly the module's tensors ...
    init_dir = conf.run_dir(tuned["id"]) / "init"
    start = load_file(str(init_dir / "model.safetensors"))
    assert set(start) == set(imported["weights"])
    for key, tensor in imported["weights"].items():
        assert torch.equal(start[key], tensor), key
    # ... and built and loaded as the trainer does (build, then apply_init), the module's outputs.
    model = build(imported["spec"], seed=0)
    assert sorted(apply_init(model, init_dir).loaded) == sorted(imported["weights"])
    x = torch.randn(16, 4, generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        assert torch.equal(model.eval()(x), imported["module"](x))

    assert train_run(tuned["id"]) == "succeeded"
    done = api_a.get(f"/api/runs/{tuned['id']}/").json()
    assert done["status"] == "succeeded", done["error"]
    assert done["init"]["checkpoint"] == "imported" and done["init"]["plan"]["mismatched"] == []


def test_keys_that_do_not_fit_are_named(api_a, graph_id, imported):
    weights = dict(imported["weights"])
    missing = dict(weights)
    missing.pop("head.weight")
    answer = upload(api_a, graph_id, save(missing))
    assert answer.status_code == 400, answer.content
    error = answer.json()["error"]
    assert error["code"] == "weights_mismatch" and "head.weight" in error["message"]
    assert error["missing"] == ["head.weight"] and list(error["fields"]) == ["file"]

    extra = {**weights, "extra.weight": torch.zeros(2)}
    error = upload(api_a, graph_id, save(extra)).json()["error"]
    assert error["unexpected"] == ["extra.weight"] and "extra.weight" in error["message"]

    wrong = {**weights, "inp.weight": torch.zeros(3, 3)}
    error = upload(api_a, graph_id, save(wrong)).json()["error"]
    assert [m["key"] for m in error["mismatched"]] == ["inp.weight"]
    assert "inp.weight" in error["message"] and "[3, 3]" in error["message"]

    from webapp.runs.models import Run

    assert not Run.objects.exists()  # nothing recorded for a refused file


def with_header_length(weights: dict[str, torch.Tensor], length: int) -> bytes:
    """A real safetensors file whose 8-byte header length is `length` (metadata pads it)."""
    for pad in range(4096):
        data = save(weights, metadata={"pad": "x" * pad} if pad else None)
        if int.from_bytes(data[:8], "little") == length:
            return data
    raise AssertionError(f"no padding gives a header of {length} bytes")


def test_a_header_length_whose_first_byte_is_0x80_is_valid_safetensors(api_a, graph_id, imported):
    # 2688 = 0x0A80: the file starts with 0x80, as a pickle stream does; it is safetensors all the same.
    data = with_header_length(imported["weights"], 2688)
    assert data[:1] == b"\x80"
    answer = upload(api_a, graph_id, data)
    assert answer.status_code == 201, answer.content
    assert answer.json()["status"] == "succeeded"

    small = {"inp.weight": imported["weights"]["inp.weight"]}
    assert save(small)[:1] != b"\x80"
    tiny = with_header_length(small, 128)
    error = upload(api_a, graph_id, tiny).json()["error"]
    assert error["code"] == "weights_mismatch"  # read as safetensors: its keys are what is wrong


def test_only_safetensors_is_read_never_a_pickle(api_a, graph_id, imported, tmp_path):
    buffer = io.BytesIO()
    torch.save(imported["weights"], buffer)
    answer = upload(api_a, graph_id, buffer.getvalue(), name="trained.pt")
    assert answer.status_code == 400
    assert answer.json()["error"]["code"] == "not_safetensors"
    assert "torch.save file (pickle)" in answer.json()["error"]["message"]

    legacy = io.BytesIO()
    torch.save(imported["weights"], legacy, _use_new_zipfile_serialization=False)
    assert legacy.getvalue()[:1] == b"\x80"
    answer = upload(api_a, graph_id, legacy.getvalue(), name="legacy.pt")
    assert answer.status_code == 400
    assert "torch.save file (pickle)" in answer.json()["error"]["message"]

    junk = upload(api_a, graph_id, b"{not a header" * 10)
    assert junk.status_code == 400 and list(junk.json()["error"]["fields"]) == ["file"]
    assert "but only 122 bytes follow them" in junk.json()["error"]["message"]


def test_a_file_that_is_not_safetensors_is_refused_naming_why(api_a, graph_id, imported):
    def refusal(data: bytes) -> str:
        answer = upload(api_a, graph_id, data)
        assert answer.status_code == 400, answer.content
        error = answer.json()["error"]
        assert error["code"] == "not_safetensors" and list(error["fields"]) == ["file"]
        return error["message"]

    assert "8-byte header length" in refusal(b"\x01\x02")
    not_json = (16).to_bytes(8, "little") + b"not json at all!" + b"\0" * 8
    assert "16-byte header is not JSON" in refusal(not_json)
    good = save({"inp.weight": imported["weights"]["inp.weight"]})
    cut = good[:-4]  # the last tensor's data ends past the file
    message = refusal(cut)
    assert "'inp.weight' has data_offsets" in message and "outside" in message
    from webapp.runs.models import Run

    assert not Run.objects.exists()


def test_the_size_is_bounded_by_a_setting(api_a, graph_id, imported, settings):
    settings.NETLOOM_MAX_WEIGHTS_BYTES = 1000
    answer = upload(api_a, graph_id, save(imported["weights"]))
    assert answer.status_code == 413, answer.content
    assert "file" in answer.json()["error"]["fields"]


def test_viewers_cannot_import_and_other_teams_see_no_revision(
    api_viewer_a, api_b, api_a, graph_id, imported
):
    data = save(imported["weights"])
    assert upload(api_viewer_a, graph_id, data).status_code == 403
    assert upload(api_b, graph_id, data).status_code == 404
    assert upload(api_a, graph_id, data, revision=9).status_code == 404


def test_a_revision_that_does_not_build_cannot_take_weights(api_a, team_a, broken_spec, imported):
    graph = api_a.post(
        "/api/graphs/", {"team": team_a.id, "name": "draft", "spec": broken_spec}, format="json"
    )
    answer = upload(api_a, graph.json()["id"], save(imported["weights"]))
    assert answer.status_code == 400
    assert list(answer.json()["error"]["fields"]) == ["graph"]


def test_the_import_run_answers_every_run_endpoint_without_a_server_error(
    api_a, graph_id, imported
):
    run = upload(api_a, graph_id, save(imported["weights"])).json()["id"]
    reads = [
        f"/api/runs/{run}/",
        f"/api/runs/?graph={graph_id}",
        f"/api/runs/compare/?ids={run}",
        f"/api/runs/{run}/metrics/",
        f"/api/runs/{run}/explanations/",
        f"/api/runs/{run}/export/?format=safetensors",
        f"/api/runs/{run}/checkpoints/imported/export/?format=safetensors",
        f"/api/runs/{run}/evaluation/",
        f"/api/runs/{run}/samples/test/",
    ]
    for path in reads:
        answer = api_a.get(path)
        assert answer.status_code < 500, (path, answer.content[:300])
    # "How good is it" on the run page says why there is nothing to evaluate, not "not trained".
    evaluation = api_a.get(f"/api/runs/{run}/evaluation/")
    assert evaluation.status_code == 409 and evaluation.json()["error"]["code"] == "no_dataset", evaluation.content[:300]
    listed = api_a.get(f"/api/runs/?graph={graph_id}").json()["results"]
    assert [(r["id"], r["dataset"], r["dataset_name"]) for r in listed] == [(run, None, None)]
    writes = [
        (f"/api/runs/{run}/evaluation/", {"checkpoint": "imported"}),
        (f"/api/runs/{run}/explanations/", {"method": "saliency", "index": 0}),
        (f"/api/runs/{run}/predict/", {"inputs": [[0.0, 0.0, 0.0, 0.0]]}),
    ]
    for path, body in writes:
        answer = api_a.post(path, body, format="json")
        assert 400 <= answer.status_code < 500, (path, answer.status_code, answer.content[:300])
