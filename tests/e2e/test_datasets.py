"""A CSV uploaded without a target: the user picks the column to predict in the dataset list; a
column with one class is refused in words next to the chooser, a good one makes the table
trainable (it then shows its classes and is offered in the editor's Train dialog)."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from .conftest import ARTIFACTS, Account, LiveServer
from .test_canvas import Steps, sign_in, tid

pytestmark = pytest.mark.e2e


def test_user_uploads_a_csv_without_target_then_chooses_one(
    page: Page, netloom_server: LiveServer, new_account: Account
) -> None:
    steps = Steps(page, ARTIFACTS / "datasets")
    sign_in(page, netloom_server, new_account)
    page.click(tid("nav-datasets"))

    csv = "length,width,batch,kind\n" + "".join(
        f"{i % 7 + 1},{i % 5 + 2},same,{'a' if i % 3 else 'b'}\n" for i in range(30)
    )
    page.set_input_files(
        tid("upload-file"), {"name": "parts.csv", "mimeType": "text/csv", "buffer": csv.encode()}
    )
    expect(page.locator(tid("upload-columns"))).to_contain_text("batch")
    page.select_option(tid("upload-target"), "")  # "None yet (check the file only)"
    page.click(tid("upload-submit"))
    row = page.locator(f'{tid("dataset-list")} tr[data-name="parts"]')
    expect(row.locator(tid("dataset-status"))).to_have_text("ready")
    expect(row.locator(tid("dataset-rows"))).to_have_text("30")
    expect(row.locator(tid("dataset-classes"))).to_have_text("–")
    expect(row).to_contain_text("No target column was chosen")
    chooser = row.locator(tid("dataset-target-select"))
    expect(chooser.locator("option")).to_contain_text(
        ["Choose…", "length (numeric", "width (numeric", "batch (categorical, 1 value)", "kind"]
    )
    dataset_id = int((row.get_attribute("data-testid") or "").rsplit("-", 1)[1])
    detail = page.request.get(f"{netloom_server.url}/api/datasets/{dataset_id}/").json()
    assert detail["trainable"] is False and detail["needs"] == "target"
    steps.shot("needs-target")

    # A column with a single value cannot be a classification target: said next to the chooser.
    chooser.select_option("batch")
    error = row.locator(tid("dataset-target-error"))
    expect(error).to_contain_text("column 'batch'")
    expect(error).to_contain_text("only one class")
    expect(row.locator(tid("dataset-classes"))).to_have_text("–")
    steps.shot("one-class-refused")

    # A good column: the chooser goes away and the table has its two classes.
    chooser.select_option("kind")
    expect(row.locator(tid("dataset-target"))).to_have_count(0)
    expect(row.locator(tid("dataset-classes"))).to_have_text("2")
    expect(row).not_to_contain_text("No target column was chosen")
    detail = page.request.get(f"{netloom_server.url}/api/datasets/{dataset_id}/").json()
    assert detail["trainable"] is True
    steps.shot("target-chosen")

    # A second version with five rows fewer: listed with its digest, and the diff says so.
    row.locator(tid("dataset-versions-toggle")).click()
    panel = page.locator(tid("dataset-versions"))
    expect(panel.locator(tid("version-row-1"))).to_contain_text("30")
    fewer = csv.encode().rsplit(b"\n", 6)[0] + b"\n"
    form = panel.locator(tid("version-upload-form"))
    form.locator(tid("upload-file")).set_input_files({"name": "parts.csv", "mimeType": "text/csv", "buffer": fewer})
    expect(form.locator(tid("upload-target"))).to_have_value("kind")  # the newest version's options
    form.locator(tid("upload-submit")).click()
    expect(form.locator(tid("upload-message"))).to_have_text("Version 2 is ready.")
    expect(panel.locator(tid("version-row-2"))).to_contain_text("25")
    expect(row.locator(tid("dataset-version"))).to_have_text("v2")
    panel.locator(tid("diff-compare")).click()
    expect(panel.locator(tid("version-diff-headline"))).to_have_text("5 rows removed")
    steps.shot("version-diff")

    # Trainable: the editor's Train dialog offers it, with its features and classes.
    page.click(tid("nav-graphs"))
    page.fill(tid("new-graph-name"), "parts mlp")
    page.select_option(tid("new-graph-template"), "iris_mlp")
    page.click(tid("create-graph"))
    expect(page.locator(tid("status-saved"))).to_have_text("Saved · revision 1")
    page.click(tid("train"))
    page.select_option(tid("train-dataset"), label="parts (csv)")
    expect(page.locator(tid("train-dialog"))).to_contain_text("2 classes · 25 rows")
    expect(page.locator(tid("train-dataset-version"))).to_contain_text("newest (v2")
    page.select_option(tid("train-dataset-version"), "1")
    steps.shot("offered-for-training")
