"""A user's whole path in the browser: add iris, draw and save the iris MLP, train it, watch the
loss move live, read why it predicted what it did, and download the weights."""

from __future__ import annotations

import json
import re
import struct
import time
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from .conftest import ARTIFACTS, Account, LiveServer
from .test_canvas import Steps, sign_in, tid

pytestmark = pytest.mark.e2e

EPOCHS = 15  # iris: 106 training rows / batch 16 = 7 steps an epoch, so ~105 logged points


def points(page: Page, key: str) -> int:
    """How many points the run page has plotted for a metric."""
    locator = page.locator(tid(f"points-{key}"))
    return int(locator.inner_text()) if locator.count() else 0


def test_user_trains_iris_watches_it_live_explains_and_downloads(
    page: Page, netloom_server: LiveServer, new_account: Account, celery_worker: Path
) -> None:
    steps = Steps(page, ARTIFACTS / "runs")
    sign_in(page, netloom_server, new_account)

    # --- the built-in iris dataset -------------------------------------------------------------
    page.click(tid("nav-datasets"))
    expect(page.locator(tid("datasets-page"))).to_be_visible()
    page.select_option(tid("builtin-select"), "wine")
    page.click(tid("builtin-add"))
    expect(page.locator(f'{tid("dataset-list")} tr[data-name="wine"]')).to_be_visible()
    page.select_option(tid("builtin-select"), "iris")
    page.click(tid("builtin-add"))
    row = page.locator(f'{tid("dataset-list")} tr[data-name="iris"]')
    expect(row.locator(tid("dataset-status"))).to_have_text("ready")
    expect(row.locator(tid("dataset-rows"))).to_have_text("150")
    expect(row.locator(tid("dataset-classes"))).to_have_text("3")
    row.locator(tid("dataset-preview")).click()
    expect(page.locator(tid("preview-table"))).to_contain_text("setosa")
    steps.shot("iris-added")

    # --- the iris MLP from its template, saved ---------------------------------------------------
    page.click(tid("nav-graphs"))
    page.fill(tid("new-graph-name"), "iris mlp")
    page.click(tid("create-graph"))
    expect(page.locator(tid("editor"))).to_be_visible()
    expect(page.locator(tid("train"))).to_be_disabled()  # nothing saved yet
    page.select_option(tid("template-select"), "iris_mlp")
    expect(page.locator(tid("status-validity"))).to_have_text("Valid")
    page.click(tid("save"))
    expect(page.locator(tid("status-saved"))).to_contain_text("revision 1")
    train = page.locator(tid("train"))
    expect(train).to_be_enabled()
    steps.shot("graph-saved")

    # --- start a run; a bad value is refused next to its field -----------------------------------
    train.click()
    dialog = page.locator(tid("train-dialog"))
    expect(dialog).to_be_visible()
    # Wine has 13 features: the server says, in words, why the iris graph cannot train on it.
    page.select_option(tid("train-dataset"), label="wine (builtin)")
    page.click(tid("train-start"))
    expect(page.locator(tid("train-graph-errors"))).to_contain_text(
        "node x: input shape [4] does not match the dataset's feature shape [13]"
    )
    page.select_option(tid("train-dataset"), label="iris (builtin)")
    expect(page.locator(tid("train-graph-errors"))).to_have_count(0)
    page.fill(tid("config-epochs"), "0")
    page.click(tid("train-start"))
    expect(page.locator(tid("error-epochs"))).to_contain_text("at least 1")
    page.fill(tid("config-epochs"), str(EPOCHS))
    page.fill(tid("config-batch_size"), "16")
    page.fill(tid("config-log_every"), "1")
    page.fill(tid("config-optimizer.lr"), "0.01")
    steps.shot("train-dialog")
    page.click(tid("train-start"))
    expect(page).to_have_url(re.compile(r"/app/runs/\d+$"))
    run_id = int(page.url.rstrip("/").rsplit("/", 1)[1])
    expect(page.locator(tid("run-page"))).to_be_visible()

    # --- live: the progress bar moves and the loss chart gets points while it trains ---------------
    progress = page.locator(tid("run-progress"))
    status = page.locator(tid("run-status"))
    seen_counts: list[int] = []
    seen_steps: list[int] = []
    shot_live = False
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        state = status.inner_text()
        if state == "running":
            seen_counts.append(points(page, "train/loss"))
            seen_steps.append(int(progress.get_attribute("data-step") or 0))
            if not shot_live and seen_counts[-1] >= 30:
                steps.shot("training-live")
                shot_live = True
        if state in ("succeeded", "failed", "cancelled"):
            break
        page.wait_for_timeout(150)
    expect(status).to_have_text("succeeded", timeout=30_000)
    live_counts = [c for c in seen_counts if c > 0]
    assert len(set(live_counts)) >= 2, f"the loss chart did not grow while running: {seen_counts}"
    assert live_counts == sorted(live_counts), f"points disappeared: {live_counts}"
    assert len({s for s in seen_steps if s > 0}) >= 2, (
        f"the progress bar did not move: {seen_steps}"
    )
    expect(progress).to_have_attribute("value", "1")

    # Every stored point is plotted once, no more (the REST series are the record).
    stored = page.request.get(f"{netloom_server.url}/api/runs/{run_id}/metrics/").json()["series"]
    for key in ("train/loss", "val/loss", "val/accuracy"):
        expect(page.locator(tid(f"points-{key}"))).to_have_text(str(len(stored[key]["step"])))
    assert len(stored["train/loss"]["step"]) >= EPOCHS * 7
    expect(page.locator(tid("final-metrics"))).to_contain_text("test/accuracy")
    expect(page.locator(tid("confusion-test"))).to_contain_text("setosa")
    expect(page.locator(tid("checkpoints"))).to_contain_text("epoch-")
    steps.shot("run-succeeded")

    # --- why: Integrated Gradients on the first test row -------------------------------------------
    page.fill(tid("explain-index"), "0")
    page.select_option(tid("explain-method"), "integrated_gradients")
    page.click(tid("explain-submit"))
    image = page.locator(tid("explanation-image"))
    expect(image).to_be_visible(timeout=30_000)
    page.wait_for_function(
        "el => el.complete && el.naturalWidth > 0", arg=image.element_handle(), timeout=10_000
    )
    expect(page.locator(tid("explanation-prediction"))).to_have_text(
        re.compile(r"(setosa|versicolor|virginica) \(\d\)")
    )
    expect(page.locator(tid("explanation-delta"))).not_to_be_empty()
    image.scroll_into_view_if_needed()
    steps.shot("explained")

    # --- the weights: a real safetensors file ---------------------------------------------------
    with page.expect_download() as info:
        page.click(tid("download-safetensors"))
    download = info.value
    assert download.suggested_filename.endswith(".safetensors")
    data = Path(download.path()).read_bytes()
    (header_len,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + header_len])
    assert "fc1.weight" in header and header["fc1.weight"]["shape"] == [16, 4]
    assert header["logits.weight"]["shape"] == [3, 16]
    assert "__metadata__" in header
    expect(page.locator(tid("download-python"))).to_have_attribute(
        "href", f"/api/runs/{run_id}/export/?format=python"
    )
    steps.shot("downloaded")

    expect(page.locator(tid("download-onnx"))).to_be_visible(timeout=30_000)

    # --- a second, long run of the same revision, cancelled from its page ------------------------
    graph_id = page.request.get(f"{netloom_server.url}/api/runs/{run_id}/").json()["graph"]
    page.click(tid("nav-graphs"))
    page.click(tid(f"graph-row-{graph_id}") + " " + tid("open-graph"))
    page.click(tid("train"))
    page.fill(tid("config-epochs"), "500")
    page.click(tid("train-start"))
    expect(page).to_have_url(re.compile(rf"/app/runs/(?!{run_id}$)\d+$"))
    expect(page.locator(tid("run-status"))).to_have_text("running", timeout=30_000)
    page.once("dialog", lambda d: d.accept())
    page.click(tid("run-cancel"))
    expect(page.locator(tid("run-status"))).to_have_text("cancelled", timeout=30_000)
    expect(page.locator(tid("run-log"))).to_contain_text("cancel requested by")
    expect(page.locator(tid("run-cancel"))).to_have_count(0)

    # --- the runs list shows both ------------------------------------------------------------------
    page.click(tid("nav-runs"))
    expect(page.locator(tid(f"run-row-{run_id}")).locator(tid("run-status"))).to_have_text(
        "succeeded"
    )
    expect(page.locator(tid("run-list")).locator(tid("run-status"))).to_have_text(
        ["cancelled", "succeeded"]
    )
    page.select_option(tid("runs-graph-filter"), label="iris mlp")
    expect(page).to_have_url(re.compile(rf"/app/runs\?graph={graph_id}$"))
    expect(page.locator(tid("run-list")).locator("tbody tr")).to_have_count(2)
    steps.shot("runs-list")


def test_user_uploads_a_csv_picks_its_target_and_sees_a_bad_file_named(
    page: Page, netloom_server: LiveServer, new_account: Account
) -> None:
    steps = Steps(page, ARTIFACTS / "runs")
    sign_in(page, netloom_server, new_account)
    page.click(tid("nav-datasets"))

    good = "width,height,colour,kind\n" + "".join(
        f"{i % 7 + 1},{i % 5 + 2},{'red' if i % 2 else 'blue'},{'a' if i % 3 else 'b'}\n"
        for i in range(40)
    )
    page.set_input_files(
        tid("upload-file"), {"name": "shapes.csv", "mimeType": "text/csv", "buffer": good.encode()}
    )
    # The columns are shown before anything is sent; the last one is the default target.
    expect(page.locator(tid("upload-columns"))).to_contain_text("colour")
    expect(page.locator(tid("upload-target"))).to_have_value("kind")
    steps.shot("csv-columns")
    page.click(tid("upload-submit"))
    expect(page.locator(tid("upload-message"))).to_contain_text("shapes is ready")
    row = page.locator(f'{tid("dataset-list")} tr[data-name="shapes"]')
    expect(row.locator(tid("dataset-status"))).to_have_text("ready")
    expect(row.locator(tid("dataset-rows"))).to_have_text("40")
    expect(row.locator(tid("dataset-classes"))).to_have_text("2")

    bad = "a,b,y\n1,2,x\n3,zz,y\n4,5,x\n"
    page.set_input_files(
        tid("upload-file"), {"name": "bad.csv", "mimeType": "text/csv", "buffer": bad.encode()}
    )
    page.select_option(tid("upload-target"), "y")
    page.click(tid("upload-submit"))
    expect(page.locator(tid("upload-message"))).to_contain_text("row 3, column 'b'")
    failed = page.locator(f'{tid("dataset-list")} tr[data-name="bad"]')
    expect(failed.locator(tid("dataset-status"))).to_have_text("failed")
    expect(failed.locator(tid("dataset-error"))).to_contain_text("'zz' is not a number")
    steps.shot("csv-uploaded-and-refused")
