"""Judging a trained model in the browser: how good it is (per-class metrics, misclassified
thumbnails and rows, curves), whether it works on the user's own input (a typed row, an uploaded
image) and why it answered so (explanations of that input and of a test row, its true label
beside the heat map).

The runs are set up through the REST API (the training journey itself is test_runs.py) and
trained by the real Celery worker; everything asserted is read off the page."""

from __future__ import annotations

import io
import json
import re
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image
from playwright.sync_api import Page, expect
from sklearn import datasets as skd

from tests.engine.test_pipeline import write_mixed_csv

from .conftest import ARTIFACTS, Account, LiveServer
from .test_canvas import Steps, sign_in, tid

pytestmark = pytest.mark.e2e

SPECS = Path(__file__).resolve().parents[2] / "examples" / "specs"


class Api:
    """The signed-in browser's own session, for setting things up (CSRF header included)."""

    def __init__(self, page: Page, server: LiveServer) -> None:
        self.page = page
        self.url = server.url

    def _headers(self) -> dict[str, str]:
        token = next(c["value"] for c in self.page.context.cookies() if c["name"] == "csrftoken")
        return {"X-CSRFToken": token, "Referer": f"{self.url}/app/"}

    def get(self, path: str) -> Any:
        response = self.page.request.get(f"{self.url}{path}")
        assert response.ok, (path, response.status, response.text()[:500])
        return response.json()

    def post(
        self, path: str, body: dict[str, Any] | None = None, multipart: dict[str, Any] | None = None
    ) -> Any:
        response = self.page.request.post(
            f"{self.url}{path}", headers=self._headers(),
            **({"multipart": multipart} if multipart is not None else {"data": body or {}}),
        )  # fmt: skip
        assert response.ok, (path, response.status, response.text()[:500])
        return response.json()


def mlp(width: int, classes: int) -> dict[str, Any]:
    return {
        "version": 1,
        "inputs": [{"id": "x", "shape": [width], "dtype": "float32"}],
        "nodes": [
            {"id": "fc1", "op": "Linear", "params": {"out_features": 16}, "inputs": ["x"]},
            {"id": "act", "op": "GELU", "inputs": ["fc1"]},
            {"id": "fc2", "op": "Linear", "params": {"out_features": classes}, "inputs": ["act"]},
        ],
        "outputs": ["fc2"],
    }


def start_run(
    api: Api, team: int, dataset: int, name: str, spec: dict[str, Any], config: dict[str, Any]
) -> int:
    graph = api.post("/api/graphs/", {"team": team, "name": name, "spec": spec})
    run = api.post("/api/runs/", {"graph": graph["id"], "dataset": dataset, "config": config})
    return int(run["id"])


def wait_succeeded(api: Api, run_id: int, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = api.get(f"/api/runs/{run_id}/")["status"]
        if status == "succeeded":
            return
        assert status not in ("failed", "cancelled"), api.get(f"/api/runs/{run_id}/")["error"]
        time.sleep(0.5)
    raise AssertionError(f"run {run_id} did not finish in {timeout} s")


def png(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(arr.astype(np.uint8)).save(buf, format="PNG")
    return buf.getvalue()


def enter(page: Page, column: str, value: str) -> None:
    """Type or choose a value in the predict form (a category with known values is a choice)."""
    field = page.locator(tid(f"predict-field-{column}"))
    if field.evaluate("el => el.tagName") == "SELECT":
        field.select_option(value)
    else:
        field.fill(value)


def image_loaded(page: Page, selector: str) -> None:
    """Every image matched has been drawn (loaded and not broken)."""
    page.wait_for_function(
        "s => [...document.querySelectorAll(s)].length > 0 && [...document.querySelectorAll(s)].every(i => i.complete && i.naturalWidth > 0)",
        arg=selector,
        timeout=15_000,
    )


def test_user_judges_a_digits_model_and_a_csv_model(
    page: Page,
    netloom_server: LiveServer,
    new_account: Account,
    celery_worker: Path,
    tmp_path: Path,
) -> None:
    steps = Steps(page, ARTIFACTS / "judge")
    sign_in(page, netloom_server, new_account)
    api = Api(page, netloom_server)
    team = int(api.get("/api/auth/me/")["teams"][0]["id"])

    # --- two runs trained by the worker: a CNN on the built-in digits, an MLP on a mixed CSV ------
    digits = api.post("/api/datasets/", {"team": team, "builtin": "digits"})
    digits_run = start_run(
        api, team, digits["id"], "digits cnn", json.loads((SPECS / "digits_cnn.json").read_text()),
        {"epochs": 3, "optimizer": {"lr": 0.01}},
    )  # fmt: skip
    csv_path = tmp_path / "people.csv"
    write_mixed_csv(csv_path)
    people = api.post(
        "/api/datasets/upload/",
        multipart={
            "team": str(team), "kind": "csv", "name": "people",
            "options": json.dumps({"target": "label", "features": ["age", "colour", "size", "score"]}),
            "file": {"name": "people.csv", "mimeType": "text/csv", "buffer": csv_path.read_bytes()},
        },
    )  # fmt: skip
    csv_run = start_run(
        api, team, people["id"], "people mlp", mlp(people["summary"]["feature_shape"][0], 2),
        {"epochs": 4, "optimizer": {"lr": 0.01}},
    )  # fmt: skip
    wait_succeeded(api, digits_run)

    # --- how good is the digits model: per-class metrics, misclassified thumbnails -----------------
    page.goto(f"{netloom_server.url}/app/runs/{digits_run}")
    expect(page.locator(tid("run-status"))).to_have_text("succeeded")
    expect(page.locator(tid("stream-state"))).not_to_have_text(
        re.compile("live")
    )  # finished: not live
    per_class = page.locator(tid("per-class-metrics"))
    expect(per_class.locator("tbody tr")).to_have_count(10)
    for column in ("precision", "recall", "F1", "support"):
        expect(per_class.locator("thead")).to_contain_text(column)
    evaluation = api.get(f"/api/runs/{digits_run}/evaluation/")
    support = {c["class"]: c["support"] for c in evaluation["per_class"]}
    expect(per_class.locator('tr[data-class="3"] td').last).to_have_text(str(support["3"]))
    expect(page.locator(tid("evaluation-accuracy"))).to_contain_text(
        f"{evaluation['accuracy'] * 100:.1f}%"
    )
    expect(page.locator(tid("curve-reliability"))).to_be_visible()
    assert evaluation["misclassified"], "a 3-epoch CNN gets some digits wrong; nothing to browse"
    thumbs = page.locator(f"{tid('misclassified')} {tid('misclassified-item')}")
    expect(thumbs.first).to_be_visible()
    image_loaded(page, f"{tid('misclassified')} img")
    most = sorted(evaluation["misclassified"], key=lambda m: (-m["probability"], m["index"]))[0]
    first = thumbs.first
    expect(first).to_have_attribute("data-index", str(most["index"]))
    expect(first).to_contain_text(f"true {most['true']}")
    expect(first).to_contain_text(f"predicted {most['predicted']} {most['probability'] * 100:.1f}%")
    page.select_option(tid("misclassified-sort"), "least")
    least = sorted(evaluation["misclassified"], key=lambda m: (m["probability"], m["index"]))[0]
    expect(thumbs.first).to_have_attribute("data-index", str(least["index"]))
    image_loaded(page, f"{tid('misclassified')} img")
    page.locator(tid("evaluation-panel")).scroll_into_view_if_needed()
    steps.shot("digits-evaluation")

    # --- every figure names its weights; the evaluation has a checkpoint picker --------------------
    run_now = api.get(f"/api/runs/{digits_run}/")
    final_words = f"the final weights (epoch 3, step {run_now['progress']['step']})"
    expect(page.locator(tid("final-metrics-about"))).to_contain_text(final_words)
    checkpoints = api.get(f"/api/runs/{digits_run}/checkpoints/")
    held = next(c for c in checkpoints if c["default"])
    picker = page.locator(tid("evaluation-checkpoint"))
    expect(picker.locator("option").first).to_contain_text(f"{held['name']} (epoch {held['epoch']:g}, step {held['step']}): the downloads' weights")
    expect(page.locator(tid("evaluation-accuracy"))).to_contain_text(f"Accuracy of checkpoint {held['name']} (epoch")
    first = next(c for c in checkpoints if c["name"] == "epoch-0001")
    picker.select_option("epoch-0001")
    expect(page.locator(tid("evaluation-missing"))).to_contain_text("Checkpoint epoch-0001 has not been evaluated yet")
    page.click(tid("evaluation-compute"))  # a job on the workers: the panel follows it
    accuracy = page.locator(tid("evaluation-accuracy"))
    expect(accuracy).to_contain_text("Accuracy of checkpoint epoch-0001", timeout=60_000)
    early = api.get(f"/api/runs/{digits_run}/evaluation/?checkpoint=epoch-0001")
    expect(accuracy).to_contain_text(f"Accuracy of checkpoint epoch-0001 (epoch 1, step {first['step']}) on {early['rows']} test samples: {early['accuracy'] * 100:.1f}%")
    page.locator(tid("evaluation-panel")).scroll_into_view_if_needed()
    steps.shot("digits-evaluation-of-epoch-1")
    page.locator(tid("final-metrics-about")).scroll_into_view_if_needed()
    steps.shot("digits-results-name-their-weights")
    picker.select_option("")
    expect(accuracy).to_contain_text(f"{evaluation['accuracy'] * 100:.1f}%")

    # --- the user's own image: a drawn zero, uploaded into the drop zone --------------------------
    zero = skd.load_digits().images[0] * 255 / 16
    page.set_input_files(
        tid("predict-image"), {"name": "zero.png", "mimeType": "image/png", "buffer": png(zero)}
    )
    answer = page.locator(tid("predict-answer"))
    expect(answer).to_be_visible(timeout=15_000)
    expect(page.locator(tid("predict-class"))).to_have_text(re.compile(r"^\d$"))
    expect(page.locator(tid("predict-probabilities")).locator("li")).to_have_count(10)
    expect(page.locator(tid("predict-shape"))).to_contain_text("[1, 1, 8, 8]")
    image_loaded(page, tid("predict-image-preview"))
    # What the model expects, and what the network saw of the upload.
    expect(page.locator(tid("image-guide-expects"))).to_contain_text("8×8 pixels, grey (1 channel)")
    expect(page.locator(tid("image-guide-expects"))).to_contain_text("light drawing on a dark background")
    image_loaded(page, tid("image-guide-seen"))
    expect(page.locator(tid("image-guide-advice"))).to_have_count(0)  # a zero like the training ones
    page.locator(tid("predict-panel")).scroll_into_view_if_needed()
    steps.shot("digits-predicted-upload")

    # ... and why: two methods side by side on that uploaded image; its true label is unknown.
    # "Explain this input" runs the explanation with the methods chosen in the explain panel.
    page.select_option(tid("explain-method"), "integrated_gradients")
    page.select_option(tid("explain-method2"), "saliency")
    page.click(tid("predict-explain"))
    expect(page.locator(tid("explain-source-input"))).to_be_checked()
    heat = page.locator(tid("explanation-image"))
    expect(heat).to_have_count(2, timeout=60_000)
    image_loaded(page, tid("explanation-image"))
    expect(page.locator(tid("explain-true"))).to_have_text("unknown")
    expect(page.locator(tid("explain-sample-image"))).to_be_visible()
    expect(page.locator(tid("attribution-bars"))).to_have_count(0)  # pixels: the heat map says it
    expect(page.locator(tid("explanation")).first).to_contain_text("your input")
    expect(page.locator(tid("explanation-prediction")).first).to_have_text(
        page.locator(tid("predict-class")).inner_text()
    )
    page.locator(tid("explain-panel")).scroll_into_view_if_needed()
    steps.shot("digits-explained-upload")

    # --- a black-on-white seven, drawn 64x64: the page says why it is misread and offers the fix ----
    digits_data = skd.load_digits()
    seven = digits_data.images[list(digits_data.target).index(7)] * 255 / 16
    paper = 255 - np.kron(seven, np.ones((8, 8)))  # dark ink on white paper, 8x bigger
    page.set_input_files(
        tid("predict-image"), {"name": "seven.png", "mimeType": "image/png", "buffer": png(paper)}
    )
    # The old input's explanation and thumbnail are gone from the explain panel at once.
    expect(page.locator(tid("explanation"))).to_have_count(0)
    expect(page.locator(tid("explain-sample-image"))).to_have_count(0)
    expect(page.locator(tid("explain-source-index"))).to_be_checked()
    expect(page.locator(tid("predict-answer"))).to_be_visible(timeout=15_000)
    advice = page.locator(tid("image-guide-advice"))
    expect(advice.first).to_contain_text("dark drawing on a light background; the training images are a light drawing on a dark background")
    expect(advice.nth(1)).to_contain_text("64×64; it is shrunk 8.0× to 8×8")
    image_loaded(page, tid("image-guide-seen"))
    expect(page.locator(tid("image-guide"))).to_contain_text(re.compile(r"what the network saw · 8×8 grey, brightness [5-9]\d%"))
    page.locator(tid("predict-panel")).scroll_into_view_if_needed()
    steps.shot("black-on-white-seven")
    page.click(tid("predict-invert"))
    expect(advice).to_have_count(1, timeout=15_000)  # only the size note is left
    expect(page.locator(tid("image-guide-advice"))).to_contain_text("shrunk")
    expect(page.locator(tid("image-guide"))).to_contain_text(re.compile(r"what the network saw · 8×8 grey, brightness [1-4]?\d%"))
    expect(page.locator(tid("predict-image-preview"))).to_have_attribute("alt", "uploaded seven-inverted.png")
    image_loaded(page, tid("image-guide-seen"))
    page.locator(tid("predict-panel")).scroll_into_view_if_needed()
    steps.shot("seven-inverted")

    # ... and a test row, whose true label is known: shown beside the heat map.
    page.check(tid("explain-source-index"))
    page.fill(tid("explain-index"), "7")
    page.select_option(tid("explain-method2"), "")
    page.click(tid("explain-submit"))
    expect(page.locator(tid("explanation"))).to_have_count(1)
    expect(page.locator(tid("explanation")).first).to_contain_text("test row 7", timeout=60_000)
    image_loaded(page, tid("explanation-image"))
    truth = api.post(f"/api/runs/{digits_run}/predict/", {"index": 7})["true"]["class"]
    expect(page.locator(tid("explain-true"))).to_have_text(truth)
    image_loaded(page, tid("explain-sample-image"))
    expect(page.locator(tid("explain-file-row"))).to_contain_text("sample")
    page.locator(tid("explain-panel")).scroll_into_view_if_needed()
    steps.shot("digits-explained-test-row")

    # --- the CSV run: a row typed into the form generated from its columns ------------------------
    wait_succeeded(api, csv_run)
    page.goto(f"{netloom_server.url}/app/runs/{csv_run}")
    expect(page.locator(tid("run-status"))).to_have_text("succeeded")
    expect(page.locator(tid("per-class-metrics")).locator("tbody tr")).to_have_count(2)
    form = page.locator(tid("predict-form"))
    expect(form).to_be_visible()
    # The form has the user's columns (not the target, not the one-hot slots); colour offers its categories.
    for column in ("age", "colour", "size", "score"):
        expect(page.locator(tid(f"predict-field-{column}"))).to_be_visible()
    expect(page.locator(tid("predict-field-label"))).to_have_count(0)
    # A word where a number goes: refused beside that field.
    page.fill(tid("predict-field-age"), "old")
    page.click(tid("predict-submit"))
    expect(page.locator(tid("predict-error-age"))).to_be_visible()
    expect(page.locator(tid("predict-answer"))).to_have_count(0)
    page.fill(tid("predict-field-age"), "62")
    enter(page, "colour", "blue")
    enter(page, "size", "M")
    page.fill(tid("predict-field-score"), "")  # a blank cell, filled as in training
    page.click(tid("predict-submit"))
    expect(page.locator(tid("predict-error-age"))).to_have_count(0)
    expected = api.post(
        f"/api/runs/{csv_run}/predict/",
        {"input": {"age": 62, "colour": "blue", "size": "M", "score": None}},
    )["prediction"]
    expect(page.locator(tid("predict-class"))).to_have_text(expected)
    expect(page.locator(tid("predict-probabilities"))).to_contain_text("yes")
    expect(page.locator(tid("predict-probabilities"))).to_contain_text("no")
    page.locator(tid("predict-panel")).scroll_into_view_if_needed()
    steps.shot("csv-predicted-row")

    # ... explained over the original columns: colour's one-hot slots are one bar.
    page.select_option(tid("explain-method"), "integrated_gradients")
    page.click(tid("predict-explain"))
    bars = page.locator(tid("attribution-bars"))
    expect(bars).to_be_visible(timeout=60_000)
    expect(bars.locator("li")).to_have_count(4)
    expect(bars.locator('li[data-column="colour"]')).to_have_attribute(
        "title", re.compile(r"colour=blue: .*\ncolour=green")
    )
    expect(page.locator(tid("explain-true"))).to_have_text("unknown")
    expect(page.locator(tid("explain-sample-values"))).to_contain_text("62")
    # A test row: where it is in the user's own file.
    page.check(tid("explain-source-index"))
    page.fill(tid("explain-index"), "7")
    rows = api.get(f"/api/runs/{csv_run}/samples/test/")
    expect(page.locator(tid("explain-index-where"))).to_have_text(
        f"row {rows['file_rows'][7]} of your file (the header is row 1)"
    )
    page.locator(tid("explain-panel")).scroll_into_view_if_needed()
    steps.shot("csv-explained-row")
