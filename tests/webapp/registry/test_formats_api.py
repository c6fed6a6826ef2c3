"""A version's formats for other runtimes, built as a job; its KServe InferenceService."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import torch
import yaml
from safetensors.torch import save_file

from engine.data import load_dataset
from engine.export import load_exported
from tests.engine.export.test_export import torch_only_path
from tests.webapp.runs.test_predict import csv_run, mlp, openapi, train_for_real  # noqa: F401
from webapp.jobs.models import Job
from webapp.registry.models import ModelVersion
from webapp.registry.selectors import version_folder
from webapp.runs.selectors import run_data_recipe

pytestmark = pytest.mark.django_db(transaction=True)

CRD = Path(__file__).resolve().parents[2] / "data" / "kserve-inferenceservice-v1beta1.crd.json"
# What KServe's webhook asks of an InferenceService's name.
ISVC_NAME = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")

CHILD = r"""
import importlib.util, json, sys
sys.path = [p for p in sys.path if 'site-packages' not in p] + [SITE]
for banned in ('engine', 'django', 'webapp', 'netloom'):
    assert importlib.util.find_spec(banned) is None, banned + ' is importable'
import torch, torchao
from safetensors.torch import load_file
data = load_file(DATA)
answer = {}
for name in FILES:
    module = torch.export.load(name).module()
    with torch.no_grad():
        out = module(data['x'])
    answer[name] = {'accuracy': (out.argmax(1) == data['y']).float().mean().item(), 'outputs': out.tolist()}
open(OUTPUT, 'w').write(json.dumps(answer))
print('ok')
"""


def _version(api: Any, team: Any, run: Any, name: str = "people") -> tuple[int, int]:
    model = api.post("/api/models/", {"team": team.id, "name": name}, format="json").json()
    made = api.post(f"/api/models/{model['id']}/versions/", {"run": run.pk}, format="json")
    assert made.status_code == 201, made.content
    return model["id"], made.json()["number"]


def test_formats_are_a_job_whose_files_load_in_a_plain_process_within_their_deltas(
    api_a: Any, api_b: Any, api_viewer_a: Any, team_a: Any, csv_run: Any, tmp_path: Path  # noqa: F811
) -> None:
    from workers.jobs import job_execute

    run, _ = csv_run
    model_id, number = _version(api_a, team_a, run)
    url = f"/api/models/{model_id}/versions/{number}/formats/"
    bad = api_a.post(url, {"formats": ["pt2", "tflite"]}, format="json")
    assert bad.status_code == 400 and "formats" in bad.json()["error"]["fields"], bad.content
    assert api_viewer_a.post(url, {"formats": ["pt2"]}, format="json").status_code == 403
    assert api_b.post(url, {"formats": ["pt2"]}, format="json").status_code == 404
    missing = api_a.get(f"/api/models/{model_id}/versions/{number}/download/?format=pt2")
    assert missing.status_code == 404 and "formats" in missing.json()["error"]["message"]
    assert not Job.objects.filter(kind="registry.formats").exists(), "a refused request queues nothing"

    asked = api_a.post(url, {"formats": ["pt2", "int8"]}, format="json")
    assert asked.status_code == 202, asked.content
    job = asked.json()
    assert job["kind"] == "registry.formats" and job["state"] == "queued" and asked["Location"] == f"/api/jobs/{job['id']}/"
    assert job_execute(job["id"]) == "done"  # what the worker's jobs.run does
    done = api_a.get(f"/api/jobs/{job['id']}/").json()
    assert done["state"] == "done" and done["progress"] == 1.0

    version = api_a.get(f"/api/models/{model_id}/versions/{number}/").json()
    formats = version["formats"]
    assert set(formats) == {"pt2", "int8"} and {"model.pt2", "model.int8.pt2"} <= set(version["files"])
    for fmt in ("pt2", "int8"):
        figures = formats[fmt]
        assert figures["metric"] == "accuracy" and set(figures["latency_ms"]) == {"b1", "b64"}
        assert set(figures["fp32_latency_ms"]) == {"b1", "b64"} and figures["size"] > 0

    # Download both and run them where only torch and torchao are installed.
    paths = []
    for fmt in ("pt2", "int8"):
        got = api_a.get(f"/api/models/{model_id}/versions/{number}/download/?format={fmt}")
        assert got.status_code == 200, got.content
        path = tmp_path / formats[fmt]["file"]
        path.write_bytes(b"".join(got.streaming_content))
        paths.append(str(path))
    test = load_dataset(run_data_recipe(run)).test
    save_file({"x": test.x.contiguous(), "y": test.y.contiguous()}, tmp_path / "test.safetensors")
    site = torch_only_path(tmp_path, extra=("torchao",))
    code = (CHILD.replace("SITE", repr(str(site))).replace("FILES", repr(paths))
            .replace("DATA", repr(str(tmp_path / "test.safetensors")))
            .replace("OUTPUT", repr(str(tmp_path / "answer.json"))))
    proc = subprocess.run([sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    answer = json.loads((tmp_path / "answer.json").read_text())
    _, fp32 = load_exported(version_folder(model_id=model_id, number=number))
    with torch.no_grad():
        want = fp32(test.x)
    fp32_accuracy = float((want.argmax(1) == test.y).float().mean())
    for fmt, path in zip(("pt2", "int8"), paths, strict=True):
        got = answer[path]
        assert abs(got["accuracy"] - fp32_accuracy) <= abs(formats[fmt]["accuracy_delta"]) + 1e-9, (fmt, got)
        assert float((torch.tensor(got["outputs"]) - want).abs().max()) <= formats[fmt]["max_abs_diff"] + 1e-5


def test_a_version_without_its_dataset_is_refused_before_any_job(
    api_a: Any, team_a: Any, csv_run: Any  # noqa: F811
) -> None:
    run, _ = csv_run
    model_id, number = _version(api_a, team_a, run)
    dataset = run.dataset
    run.delete()
    dataset.delete()
    refused = api_a.post(f"/api/models/{model_id}/versions/{number}/formats/", {"formats": ["int8"]}, format="json")
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "no_dataset", refused.content
    assert ModelVersion.objects.get(model_id=model_id, number=number).formats == {}


def test_the_kserve_manifest_fits_the_crd_and_the_pod_schema(
    api_a: Any, api_b: Any, team_a: Any, csv_run: Any, settings: Any  # noqa: F811
) -> None:
    settings.NETLOOM_IMAGE = "registry.example.com/netloom:1.4"
    run, _ = csv_run
    model_id, number = _version(api_a, team_a, run, name="People_Counter v2")
    url = f"/api/models/{model_id}/versions/{number}/kserve/"
    manifest = api_a.get(url).json()
    crd = json.loads(CRD.read_text())
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    jsonschema.Draft7Validator(schema).validate(manifest)
    assert manifest["apiVersion"] == f"{crd['spec']['group']}/v1beta1" and manifest["kind"] == "InferenceService"
    name = manifest["metadata"]["name"]
    assert ISVC_NAME.match(name) and len(name) <= 63, name
    predictor = manifest["spec"]["predictor"]
    container = predictor["containers"][0]
    served = f"{model_id}-people_counter-v2"
    assert container["image"] == "registry.example.com/netloom:1.4"
    assert container["command"] == ["python", "-m", "serving.standalone", "--model_dir", "/mnt/models",
                                    "--model_name", served]
    assert {"name": "STORAGE_URI", "value": f"pvc://netloom-media/registry/{model_id}/{number}"} in container["env"]
    assert predictor["securityContext"]["runAsNonRoot"] and container["securityContext"]["runAsNonRoot"]
    assert set(container["resources"]) == {"requests", "limits"}

    # A misspelt field is what the schema is there to catch.
    broken = json.loads(json.dumps(manifest))
    broken["spec"]["predictor"]["containers"][0]["comand"] = ["python"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft7Validator(schema).validate(broken)

    # The predictor's pod-level fields, as the Pod KServe makes of them, against Kubernetes' own schema.
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
           "spec": {"containers": predictor["containers"], "securityContext": predictor["securityContext"]}}
    kubernetes_validate.validate(pod, desired_version="1.30", strict=True)

    as_yaml = api_a.get(url + "?format=yaml")
    assert as_yaml.status_code == 200 and as_yaml["Content-Type"].startswith("application/yaml")
    assert yaml.safe_load(as_yaml.content) == manifest
    assert api_a.get(url + "?format=toml").status_code == 400
    assert api_b.get(url).status_code == 404
