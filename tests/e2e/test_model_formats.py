"""A version's formats in the browser: build .pt2 and int8 from the model page and watch the job,
read each format's size, accuracy and latency against fp32, find the download links, and copy the
KServe manifest. The run is set up through the REST API and trained by the real Celery worker,
which also runs the formats job; everything asserted is read off the page."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from .conftest import ARTIFACTS, Account, LiveServer
from .test_canvas import Steps, sign_in, tid
from .test_judge import SPECS, Api, start_run, wait_succeeded

pytestmark = pytest.mark.e2e


def test_build_formats_of_a_version_and_copy_its_kserve_manifest(
    page: Page, netloom_server: LiveServer, new_account: Account, celery_worker: Path
) -> None:
    steps = Steps(page, ARTIFACTS / "model-formats")
    sign_in(page, netloom_server, new_account)
    api = Api(page, netloom_server)
    team = int(api.get("/api/auth/me/")["teams"][0]["id"])
    iris = api.post("/api/datasets/", {"team": team, "builtin": "iris"})
    spec = json.loads((SPECS / "iris_mlp.json").read_text())
    run = start_run(api, team, iris["id"], "iris formats", spec, {"epochs": 3, "optimizer": {"lr": 0.03}})
    wait_succeeded(api, run)
    model = api.post("/api/models/", {"team": team, "name": "Iris Formats"})
    api.post(f"/api/models/{model['id']}/versions/", {"run": run})

    page.goto(f"{netloom_server.url}/app/models/{model['id']}")
    panel = page.locator(tid("version-formats"))
    expect(panel.locator(tid("formats-none"))).to_contain_text("No formats built yet for v1")
    manifest = panel.locator(tid("kserve-manifest"))
    expect(manifest).to_contain_text("kind: InferenceService")
    expect(manifest).to_contain_text(f"pvc://netloom-media/registry/{model['id']}/1")
    expect(manifest).to_contain_text(f"{model['id']}-iris-formats")

    page.click(tid("build-formats"))
    expect(panel.locator(tid("formats-job"))).to_be_visible()
    steps.shot("building")
    table = panel.locator(tid("formats-table"))
    expect(table).to_be_visible(timeout=180_000)
    for fmt, file in (("pt2", "model.pt2"), ("int8", "model.int8.pt2")):
        row = table.locator(tid(f"format-{fmt}"))
        expect(row).to_contain_text("accuracy")
        expect(row).to_contain_text("fp32")
        expect(row.locator(tid(f"download-{fmt}"))).to_have_attribute(
            "href", f"/api/models/{model['id']}/versions/1/download/?format={fmt}")
        expect(row.locator(tid(f"download-{fmt}"))).to_contain_text(file)
    expect(table.locator(tid("format-pt2"))).to_contain_text("(±0 vs fp32)")
    steps.shot("built")

    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.click(tid("copy-kserve"))
    expect(page.locator(tid("copy-kserve"))).to_have_text("Copied")
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied.startswith("apiVersion: serving.kserve.io/v1beta1"), copied[:200]
