"""The train dialog checks the graph against the dataset as it is picked (input shape, output width
against the classes), names the fix before Start, offers `processes` with what it costs, and keeps
Start in sight in a short window."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from .conftest import ARTIFACTS, Account, LiveServer
from .test_canvas import Steps, sign_in, tid

pytestmark = pytest.mark.e2e

# 11 features, 2 classes: neither fits the iris MLP (4 features in, 3 classes out).
WIDE = "".join(f"f{i}," for i in range(11)) + "label\n" + "".join(
    ",".join(str((r * (i + 3)) % 17) for i in range(11)) + f",{'yes' if r % 2 else 'no'}\n"
    for r in range(40)
)


def test_the_dialog_says_what_does_not_fit_and_how_to_fix_it_before_start(
    page: Page, netloom_server: LiveServer, new_account: Account
) -> None:
    steps = Steps(page, ARTIFACTS / "train-checks")
    sign_in(page, netloom_server, new_account)
    page.click(tid("nav-datasets"))
    page.select_option(tid("builtin-select"), "iris")
    page.click(tid("builtin-add"))
    expect(page.locator(f'{tid("dataset-list")} tr[data-name="iris"] {tid("dataset-status")}')).to_have_text("ready")
    page.set_input_files(
        tid("upload-file"), {"name": "wide.csv", "mimeType": "text/csv", "buffer": WIDE.encode()}
    )
    expect(page.locator(tid("upload-target"))).to_have_value("label")
    page.click(tid("upload-submit"))
    expect(page.locator(tid("upload-message"))).to_contain_text("wide is ready")

    page.click(tid("nav-graphs"))
    page.fill(tid("new-graph-name"), "iris mlp")
    page.select_option(tid("new-graph-template"), "iris_mlp")
    page.click(tid("create-graph"))
    expect(page.locator(tid("status-saved"))).to_have_text("Saved · revision 1")
    page.click(tid("train"))
    expect(page.locator(tid("train-dialog"))).to_be_visible()

    # Iris fits: nothing to say.
    expect(page.locator(tid("train-dataset"))).to_have_value(
        page.locator(f'{tid("train-dataset")} option', has_text="iris").get_attribute("value") or ""
    )
    expect(page.locator(tid("train-start"))).to_be_enabled()
    expect(page.locator(tid("train-fit-problems"))).to_have_count(0)

    # The wide CSV: both mismatches named with their fix, as soon as it is picked.
    page.select_option(tid("train-dataset"), label="wide (csv)")
    problems = page.locator(tid("train-fit-problems"))
    expect(problems).to_be_visible()
    expect(page.locator(tid("train-fit-input"))).to_have_text(
        "The graph's input x takes 4 features; this dataset has 11 features: set x's shape to [11]."
    )
    expect(page.locator(tid("train-fit-output"))).to_contain_text(
        "gives 3 outputs; this dataset has 2 classes (no, yes): set"
    )
    expect(page.locator(tid("train-fit-output"))).to_contain_text("out_features to 2")
    steps.shot("dataset-does-not-fit")

    # `processes` is offered with what it costs.
    processes = page.locator(tid("config-processes"))
    expect(processes).to_have_value("1")
    help_text = page.locator("label", has_text="Processes").locator("xpath=..").locator(".help")
    expect(help_text).to_contain_text("2 CPU ranks were 11.6× slower than 1 on a small MLP")
    expect(help_text).to_contain_text("large models or batches on several GPUs")
    processes.scroll_into_view_if_needed()
    steps.shot("processes-and-its-cost")

    # Back to iris: the warning goes.
    page.select_option(tid("train-dataset"), label="iris (builtin)")
    expect(problems).to_have_count(0)

    # In a short window the dialog scrolls and Start stays in sight.
    page.set_viewport_size({"width": 1280, "height": 600})
    page.locator(tid("train-dataset")).scroll_into_view_if_needed()
    start = page.locator(tid("train-start"))
    expect(start).to_be_in_viewport()
    box = start.bounding_box()
    assert box and box["y"] + box["height"] <= 600
    steps.shot("short-window-start-visible")
